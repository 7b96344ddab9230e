//! `cargo xtask fuzz`: every cargo-fuzz target of `fuzz/` for a bounded
//! time, then its corpus minimized; and the checks `cargo xtask test` runs
//! for the fuzz targets and the core's freedom from panics.
//!
//! ```text
//! cargo xtask fuzz [--seconds N] [--no-minimize] [TARGET...]
//! ```
//!
//! cargo-fuzz needs a nightly toolchain and `cargo-fuzz` itself: both are
//! installed when missing (`rustup toolchain install nightly --profile
//! minimal`, `cargo install cargo-fuzz --locked`). Targets run one after
//! another with overflow checks on (`--debug-assertions`), a 10 s limit per
//! input (a slower one counts as a hang) and 2 GB of memory, from the
//! committed corpus `fuzz/corpus/TARGET/`; a crash is written to
//! `fuzz/artifacts/TARGET/` and fails the task. Commit both: the regression
//! tests (`fuzz/checks/tests/regressions.rs`, through the checks the
//! targets run) replay them in `cargo xtask test` on stable Rust.
//!
//! The fuzzing itself is not part of `cargo xtask test` (it needs nightly
//! and takes minutes); [`test_steps`] is: the fuzz crate and the panic
//! check formatted, and the panic check linked.

use crate::{cargo, step, Step, EMBEDDED_TARGET};
use hwwfc_tests::repo_root;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// The targets of `fuzz/Cargo.toml`, in the order they run, each with the
/// dictionary it is given (if any).
pub const TARGETS: [(&str, Option<&str>); 4] =
    [("wire_decode", None), ("solvers", None), ("schedule_pipeline", None), ("host_inputs", Some("host_inputs.dict"))];

/// Seconds each target runs by default.
const DEFAULT_SECONDS: u64 = 60;

/// Environment a cargo of another workspace must not inherit.
const FOREIGN_ENV: [&str; 6] = [
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "RUSTUP_TOOLCHAIN",
];

fn fuzz_dir() -> PathBuf {
    repo_root().join("fuzz")
}

/// The steps of `cargo xtask test` that belong to this module: formatting
/// of the crates outside the root workspace (the fuzz targets; their
/// checks, `fuzz/checks`, are a member of it), and the panic check (the
/// core's decoders, builders and solvers linked into a bare-metal image
/// whose panic handler does not exist; see `panic-check/src/main.rs`).
pub fn test_steps() -> Vec<Step> {
    let root = repo_root();
    let check = root.join("panic-check");
    let mut fmt = step(
        "rustfmt --check (fuzz, panic-check)",
        "rustfmt",
        &[
            "--check",
            "--edition",
            "2021",
            "fuzz/fuzz_targets/wire_decode.rs",
            "fuzz/fuzz_targets/solvers.rs",
            "fuzz/fuzz_targets/schedule_pipeline.rs",
            "fuzz/fuzz_targets/host_inputs.rs",
            "panic-check/src/main.rs",
        ],
    );
    fmt.cwd = Some(root);
    let target_dir = check.join("target").display().to_string();
    let mut link = step(
        "panic check (links with no panic handler)",
        &cargo(),
        &["build", "--release", "--target", EMBEDDED_TARGET, "--target-dir", &target_dir],
    );
    link.cwd = Some(check);
    link.env_remove = FOREIGN_ENV.to_vec();
    vec![fmt, link]
}

/// One target's run.
struct Outcome {
    target: String,
    seconds: f64,
    executions: Option<u64>,
    corpus: usize,
    artifacts_before: usize,
    artifacts_after: usize,
    ok: bool,
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.filter_map(Result::ok).filter(|e| e.path().is_file()).count()).unwrap_or(0)
}

/// A command for the nightly cargo in `fuzz/`.
fn nightly_cargo(args: &[&str]) -> Command {
    let mut c = Command::new("cargo");
    c.arg("+nightly").args(args).current_dir(fuzz_dir());
    for v in FOREIGN_ENV {
        c.env_remove(v);
    }
    c
}

fn ensure_tools() -> Result<(), String> {
    let has_nightly = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.starts_with("nightly")))
        .map_err(|e| format!("rustup not found ({e}): install a nightly toolchain by hand"))?;
    if !has_nightly {
        eprintln!("installing a nightly toolchain (cargo-fuzz needs one)");
        let ok = Command::new("rustup")
            .args(["toolchain", "install", "nightly", "--profile", "minimal"])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err("`rustup toolchain install nightly --profile minimal` failed".into());
        }
    }
    let has_fuzz = nightly_cargo(&["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_fuzz {
        eprintln!("installing cargo-fuzz (a few minutes)");
        let ok = Command::new(cargo()).args(["install", "cargo-fuzz", "--locked"]).status().is_ok_and(|s| s.success());
        if !ok {
            return Err("`cargo install cargo-fuzz --locked` failed".into());
        }
    }
    Ok(())
}

/// The figure libFuzzer prints as `stat::NAME: VALUE` at the end of a run.
fn final_stat(output: &str, name: &str) -> Option<u64> {
    let key = format!("stat::{name}:");
    output.lines().find_map(|l| l.trim().strip_prefix(&key).and_then(|v| v.trim().parse().ok()))
}

fn run_target(target: &str, dict: Option<&str>, seconds: u64, minimize: bool) -> Outcome {
    let corpus = format!("corpus/{target}");
    let artifacts = fuzz_dir().join("artifacts").join(target);
    let artifacts_before = count_files(&artifacts);
    let _ = std::fs::create_dir_all(fuzz_dir().join(&corpus));
    println!("\n=== xtask fuzz: {target} for {seconds} s ===");
    let start = Instant::now();
    let max_time = format!("-max_total_time={seconds}");
    let dict_arg = dict.map(|d| format!("-dict={d}"));
    let mut args = vec![
        "fuzz",
        "run",
        "--debug-assertions",
        target,
        &corpus,
        "--",
        &max_time,
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-max_len=8192",
        "-print_final_stats=1",
    ];
    if let Some(d) = &dict_arg {
        args.push(d);
    }
    let out = nightly_cargo(&args).stderr(Stdio::piped()).output();
    let seconds = start.elapsed().as_secs_f64();
    let (ok, log) = match out {
        Ok(o) => (o.status.success(), String::from_utf8_lossy(&o.stderr).into_owned()),
        Err(e) => (false, format!("cannot run cargo fuzz: {e}")),
    };
    // libFuzzer's status lines, and the whole report of a failure.
    let shown: Vec<&str> = if ok {
        log.lines().filter(|l| (l.starts_with('#') && l.contains("DONE")) || l.starts_with("stat::")).collect()
    } else {
        log.lines().collect()
    };
    for line in shown {
        eprintln!("{line}");
    }
    if ok && minimize {
        let min = nightly_cargo(&["fuzz", "cmin", "--debug-assertions", target, &corpus, "--", "-rss_limit_mb=2048"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !min.is_ok_and(|s| s.success()) {
            eprintln!("xtask fuzz: minimizing the corpus of {target} failed; it is kept as it is");
        }
    }
    Outcome {
        target: target.to_string(),
        seconds,
        executions: final_stat(&log, "number_of_executed_units"),
        corpus: count_files(&fuzz_dir().join(&corpus)),
        artifacts_before,
        artifacts_after: count_files(&artifacts),
        ok,
    }
}

/// `cargo xtask fuzz`.
pub fn fuzz(args: &[String]) -> ExitCode {
    let mut seconds = DEFAULT_SECONDS;
    let mut minimize = true;
    let mut chosen: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => match it.next().and_then(|s| s.parse().ok()) {
                Some(s) => seconds = s,
                None => return usage("--seconds needs a number"),
            },
            "--no-minimize" => minimize = false,
            t if TARGETS.iter().any(|(name, _)| *name == t) => chosen.push(t),
            other => return usage(&format!("unknown argument `{other}`")),
        }
    }
    if let Err(e) = ensure_tools() {
        eprintln!("xtask fuzz: {e}");
        return ExitCode::FAILURE;
    }
    let build = nightly_cargo(&["fuzz", "build", "--debug-assertions"]).status();
    if !build.is_ok_and(|s| s.success()) {
        eprintln!("xtask fuzz: building the fuzz targets failed");
        return ExitCode::FAILURE;
    }
    let outcomes: Vec<Outcome> = TARGETS
        .iter()
        .filter(|(name, _)| chosen.is_empty() || chosen.contains(name))
        .map(|(name, dict)| run_target(name, *dict, seconds, minimize))
        .collect();
    println!(
        "\n{:<20} {:>9} {:>14} {:>8} {:>9} {:>8}",
        "target", "seconds", "executions", "corpus", "crashes", "result"
    );
    for o in &outcomes {
        println!(
            "{:<20} {:>9.0} {:>14} {:>8} {:>9} {:>8}",
            o.target,
            o.seconds,
            o.executions.map_or("-".into(), |e| e.to_string()),
            o.corpus,
            o.artifacts_after - o.artifacts_before.min(o.artifacts_after),
            if o.ok { "ok" } else { "FAILED" }
        );
    }
    if outcomes.iter().all(|o| o.ok) {
        println!("\nno crash; commit fuzz/corpus/ to keep what the fuzzer found");
        ExitCode::SUCCESS
    } else {
        println!("\na target failed: its input is in fuzz/artifacts/TARGET/; fix the cause and commit the input");
        ExitCode::FAILURE
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("xtask fuzz: {problem}");
    eprintln!("usage: cargo xtask fuzz [--seconds N] [--no-minimize] [TARGET...]");
    eprintln!("  targets: {}", TARGETS.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", "));
    ExitCode::from(2)
}
