//! Project automation, run as `cargo xtask <task>`.
//!
//! - `cargo xtask test`: every check of the project, in order: formatting,
//!   clippy with warnings denied, the workspace's tests, the core built for
//!   a bare-metal Cortex-M4F (with and without `defmt`), the core's
//!   documentation with warnings denied, the fuzz crate's formatting, the
//!   panic check, the Slurm path of `deploy/` on a single-node Slurm
//!   started on localhost, 240 kernels spread over the configurations of
//!   `kernels/compile-check.json` compiled by NVRTC for `sm_90` (no GPU),
//!   the kernels' opt-in variants compiled the same way
//!   (`host/examples/kernel_variants.rs`), and `cargo xtask qemu`. What a
//!   step needs and misses (a rustup target, `qemu-system-arm`, `slurm-wlm`
//!   and `munge`, NVRTC from PyPI) is installed first. A summary table ends the run; the exit status is non-zero if any
//!   step failed.
//! - `cargo xtask qemu`: the firmware (`firmware/`) formatted, linted for
//!   the thumb target and built; its on-target tests and its benchmark
//!   image run in `qemu-system-arm` (mps2-an386) with their defmt logs
//!   decoded; then a table of the instructions per solve, the stack
//!   high-water marks, flash and static RAM, against the targets.
//! - `cargo xtask kernels`: every kernel of the kernel step of `test`,
//!   not a sample, and the opt-in variants (see `nvrtc.rs`).
//! - `cargo xtask fuzz`: every cargo-fuzz target of `fuzz/` for a bounded
//!   time (a minute each by default), its corpus minimized, and a table of
//!   executions and crashes (see `fuzz.rs`). The committed corpus and crash
//!   inputs are replayed by the workspace's tests in `cargo xtask test`,
//!   which also links the panic check (`panic-check/`): the core's
//!   decoders, builders and solvers in a bare-metal image with no panic
//!   handler, which links only if no panic is reachable.

mod fuzz;
mod nvrtc;
mod qemu;
mod slurm;

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The bare-metal target the core must build for.
const EMBEDDED_TARGET: &str = "thumbv7em-none-eabihf";

/// One command of a task.
pub struct Step {
    name: String,
    program: String,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    env_remove: Vec<&'static str>,
    cwd: Option<PathBuf>,
}

/// A step that runs `program` with `args` in the repository root.
pub fn step(name: &str, program: &str, args: &[&str]) -> Step {
    Step {
        name: name.to_string(),
        program: program.to_string(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: Vec::new(),
        env_remove: Vec::new(),
        cwd: None,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("qemu") => qemu::qemu(),
        Some("fuzz") => fuzz::fuzz(args.get(1..).unwrap_or_default()),
        Some("kernels") => {
            let steps = [nvrtc::test_step(None), nvrtc::variants_step()];
            let results = run_steps(&steps);
            if summary(&steps, &results) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!("usage: cargo xtask test | qemu | kernels | fuzz [--seconds N] [--no-minimize] [TARGET...]");
            eprintln!(
                "  test   run every check of the project (fmt, clippy, tests, embedded build, docs, panic check, qemu)"
            );
            eprintln!("  qemu   build the firmware, run its on-target tests in QEMU, print the on-target table");
            eprintln!("  kernels  compile every kernel of kernels/compile-check.json with NVRTC for sm_90 (no GPU; test compiles a sample)");
            eprintln!(
                "  fuzz   run every fuzz target for a bounded time (nightly and cargo-fuzz, installed if missing)"
            );
            ExitCode::from(2)
        }
    }
}

/// The cargo that runs this task (cargo sets `CARGO` for the programs it runs).
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// Runs the steps in order, stopping at the first failure; prints the
/// summary table. Returns the results (name, ok, seconds).
pub fn run_steps(steps: &[Step]) -> Vec<(String, bool, f64)> {
    let mut results = Vec::new();
    for s in steps {
        println!("\n=== xtask: {} ===", s.name);
        let start = Instant::now();
        let mut c = Command::new(&s.program);
        c.args(&s.args).envs(s.env.iter().map(|(k, v)| (*k, v.as_str())));
        for var in &s.env_remove {
            c.env_remove(var);
        }
        if let Some(dir) = &s.cwd {
            c.current_dir(dir);
        }
        let ok = matches!(c.status(), Ok(st) if st.success());
        results.push((s.name.clone(), ok, start.elapsed().as_secs_f64()));
        if !ok {
            break;
        }
    }
    results
}

/// Prints the summary of `results` against `steps`; true if all passed.
pub fn summary(steps: &[Step], results: &[(String, bool, f64)]) -> bool {
    println!("\n{:<48} {:>8} {:>9}", "step", "result", "seconds");
    for (name, ok, secs) in results {
        println!("{:<48} {:>8} {:>9.1}", name, if *ok { "ok" } else { "FAILED" }, secs);
    }
    for s in steps.iter().skip(results.len()) {
        println!("{:<48} {:>8} {:>9}", s.name, "skipped", "-");
    }
    results.iter().all(|r| r.1) && results.len() == steps.len()
}

fn test() -> ExitCode {
    if let Err(e) = hwwfc_tests::firmware::ensure_rustup_target(EMBEDDED_TARGET) {
        eprintln!("xtask: {e}");
        return ExitCode::FAILURE;
    }
    let cargo = &cargo();
    let mut steps = vec![
        step("cargo fmt --check", cargo, &["fmt", "--all", "--", "--check"]),
        step(
            "clippy (all targets, -D warnings)",
            cargo,
            &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
        ),
        step("tests (workspace)", cargo, &["test", "--workspace"]),
        step(
            "core for thumbv7em-none-eabihf",
            cargo,
            &["build", "-p", "hwwfc-core", "--release", "--target", EMBEDDED_TARGET],
        ),
        step(
            "core for thumbv7em-none-eabihf + defmt",
            cargo,
            &["build", "-p", "hwwfc-core", "--release", "--features", "defmt", "--target", EMBEDDED_TARGET],
        ),
    ];
    let mut doc = step("core docs (-D warnings)", cargo, &["doc", "-p", "hwwfc-core", "--no-deps"]);
    doc.env.push(("RUSTDOCFLAGS", "-D warnings".into()));
    steps.push(doc);
    steps.extend(fuzz::test_steps());
    steps.push(nvrtc::test_step(Some(nvrtc::TEST_SAMPLE)));
    steps.push(nvrtc::variants_step());
    slurm::ensure();
    steps.push(slurm::test_step());
    let xtask = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "xtask".into());
    steps.push(step("on-target tests in QEMU (cargo xtask qemu)", &xtask, &["qemu"]));
    let results = run_steps(&steps);
    if summary(&steps, &results) {
        println!("\nall checks passed");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
