//! Project automation, run as `cargo xtask <task>`.
//!
//! - `cargo xtask test`: every check of the project, in order: formatting,
//!   clippy with warnings denied, the workspace's tests, the core built for
//!   a bare-metal Cortex-M4F (with and without `defmt`), and the core's
//!   documentation with warnings denied. What a step needs and misses (a
//!   rustup target) is installed first. A summary table ends the run; the
//!   exit status is non-zero if any step failed.

use std::process::{Command, ExitCode};
use std::time::Instant;

/// The bare-metal target the core must build for.
const EMBEDDED_TARGET: &str = "thumbv7em-none-eabihf";

struct Step {
    name: &'static str,
    program: String,
    args: Vec<&'static str>,
    env: Vec<(&'static str, &'static str)>,
}

fn step(name: &'static str, program: &str, args: &[&'static str]) -> Step {
    Step { name, program: program.to_string(), args: args.to_vec(), env: Vec::new() }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(),
        _ => {
            eprintln!("usage: cargo xtask test");
            eprintln!("  test   run every check of the project (fmt, clippy, tests, embedded build, docs)");
            ExitCode::from(2)
        }
    }
}

/// The cargo that runs this task (cargo sets `CARGO` for the programs it runs).
fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

fn ensure_rustup_target(target: &str) -> Result<(), String> {
    let out = Command::new("rustup").args(["target", "list", "--installed"]).output();
    match out {
        Ok(o) if String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == target) => Ok(()),
        Ok(_) => {
            println!("xtask: installing the rustup target {target}");
            let status = Command::new("rustup").args(["target", "add", target]).status();
            match status {
                Ok(s) if s.success() => Ok(()),
                _ => Err(format!("`rustup target add {target}` failed")),
            }
        }
        Err(e) => Err(format!("rustup not found ({e}); install the target {target} by hand")),
    }
}

fn run(steps: &[Step]) -> ExitCode {
    let mut results = Vec::new();
    for s in steps {
        println!("\n=== xtask: {} ===", s.name);
        let start = Instant::now();
        let status = Command::new(&s.program).args(&s.args).envs(s.env.iter().copied()).status();
        let ok = matches!(status, Ok(st) if st.success());
        results.push((s.name, ok, start.elapsed().as_secs_f64()));
        if !ok {
            break;
        }
    }
    println!("\n{:<44} {:>8} {:>9}", "step", "result", "seconds");
    for (name, ok, secs) in &results {
        println!("{:<44} {:>8} {:>9.1}", name, if *ok { "ok" } else { "FAILED" }, secs);
    }
    for s in steps.iter().skip(results.len()) {
        println!("{:<44} {:>8} {:>9}", s.name, "skipped", "-");
    }
    if results.iter().all(|r| r.1) && results.len() == steps.len() {
        println!("\nall checks passed");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn test() -> ExitCode {
    if let Err(e) = ensure_rustup_target(EMBEDDED_TARGET) {
        eprintln!("xtask: {e}");
        return ExitCode::FAILURE;
    }
    let cargo = &cargo();
    let mut steps = vec![
        step("cargo fmt --check", cargo, &["fmt", "--all", "--", "--check"]),
        step("clippy (all targets, -D warnings)", cargo, &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]),
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
    doc.env.push(("RUSTDOCFLAGS", "-D warnings"));
    steps.push(doc);
    run(&steps)
}
