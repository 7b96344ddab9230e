//! `cargo xtask qemu`: the firmware checked, built and run on QEMU's
//! `mps2-an386`, and the on-target table.
//!
//! Steps: `qemu-system-arm` and the rustup target installed if missing;
//! rustfmt and clippy (thumb target, `-D warnings`) on the firmware and its
//! runner; the C ABI built as a `no_std` static library for the thumb
//! target; the firmware built (release); its on-target tests and its
//! benchmark image run with their defmt logs decoded; the images checked
//! for allocation symbols and the two lock files for the same core
//! dependencies. The table reads the benchmark image's records.

use crate::{cargo, run_steps, step, summary, Step, EMBEDDED_TARGET};
use hwwfc_tests::elf::Image;
use hwwfc_tests::firmware::{self, Record, Run};
use hwwfc_tests::repo_root;
use std::process::ExitCode;

/// The targets for the attention benchmark on `stress_gpu`.
const TARGET_WFC_INSTRUCTIONS: u64 = 200_000;
const TARGET_RAM_BYTES: u64 = 16 * 1024;
const TARGET_FLASH_BYTES: u64 = 64 * 1024;

/// Environment a nested cargo in another workspace must not inherit.
const FOREIGN_ENV: [&str; 5] =
    ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET"];

fn in_dir(mut s: Step, dir: std::path::PathBuf) -> Step {
    s.cwd = Some(dir);
    s.env_remove = FOREIGN_ENV.to_vec();
    s
}

fn checks() -> Vec<Step> {
    let cargo = &cargo();
    let root = repo_root();
    let fw = firmware::dir();
    let fw_target = fw.join("target").display().to_string();
    let runner_target = fw.join("qemu-run/target").display().to_string();
    vec![
        in_dir(step("rustfmt --check (firmware, qemu-run)", "sh", &[
            "-c",
            &format!("{cargo} fmt --manifest-path firmware/Cargo.toml -- --check && {cargo} fmt --manifest-path firmware/qemu-run/Cargo.toml -- --check"),
        ]), root.clone()),
        in_dir(
            step("clippy firmware (thumbv7em, -D warnings)", cargo, &[
                "clippy", "--release", "--all-targets", "--target", EMBEDDED_TARGET, "--target-dir", &fw_target, "--", "-D", "warnings",
            ]),
            fw.clone(),
        ),
        in_dir(
            step("clippy qemu-run (-D warnings)", cargo, &[
                "clippy", "--manifest-path", "firmware/qemu-run/Cargo.toml", "--target-dir", &runner_target, "--", "-D", "warnings",
            ]),
            root.clone(),
        ),
        step("C ABI as a no_std staticlib for thumbv7em", cargo, &[
            "build", "-p", "hwwfc-capi", "--release", "--target", EMBEDDED_TARGET, "--no-default-features", "--features", "panic-handler",
        ]),
    ]
}

pub fn qemu() -> ExitCode {
    if let Err(e) = firmware::ensure_rustup_target(EMBEDDED_TARGET) {
        eprintln!("xtask: {e}");
        return ExitCode::FAILURE;
    }
    let steps = checks();
    let results = run_steps(&steps);
    if !summary(&steps, &results) {
        return ExitCode::FAILURE;
    }
    match build_and_run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask qemu: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Phase {
    model: String,
    spec: String,
    name: String,
    ticks: u64,
    stack: u64,
}

fn phases(run: &Run) -> Vec<Phase> {
    run.records("phase")
        .iter()
        .filter_map(|r: &Record| {
            Some(Phase {
                model: r.get("model")?.to_string(),
                spec: r.get("spec")?.to_string(),
                name: r.get("phase")?.to_string(),
                ticks: r.number("ticks")?,
                stack: r.number("stack")?,
            })
        })
        .collect()
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn verdict(value: u64, target: u64) -> String {
    if value <= target {
        format!("met ({:.0}% of the target)", 100.0 * value as f64 / target as f64)
    } else {
        format!(
            "MISSED by {} ({:.0}% over)",
            thousands(value - target),
            100.0 * (value - target) as f64 / target as f64
        )
    }
}

fn build_and_run() -> Result<bool, String> {
    println!("\n=== xtask: firmware (release) and hwwfc-qemu-run ===");
    let elfs = firmware::build()?;
    let runner = firmware::build_runner()?;
    let status = std::process::Command::new(&runner).arg("--install").status().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("qemu-system-arm is missing and could not be installed".into());
    }
    println!("\n=== xtask: on-target tests in QEMU ({}) ===", elfs.tests.display());
    let tests = firmware::run(&runner, &elfs.tests, true)?;
    println!("\n=== xtask: benchmark image in QEMU ({}) ===", elfs.app.display());
    let app = firmware::run(&runner, &elfs.app, false)?;
    // The log without the schedules' byte lists (the parity test reads them).
    let mut omitted = 0;
    for line in app.output.lines() {
        if line.starts_with("hwwfc:schedule ") {
            omitted += 1;
        } else {
            println!("{line}");
        }
    }
    println!("({omitted} hwwfc:schedule records of the encoded schedules not shown)");

    let app_image = Image::read(&elfs.app)?;
    let tests_image = Image::read(&elfs.tests)?;
    let allocations: Vec<String> = [&app_image, &tests_image].iter().flat_map(|i| i.allocation_symbols()).collect();
    let locks = firmware::check_lockfiles();

    // The table.
    let per_tick = tests
        .records("calibration")
        .pop()
        .and_then(|r| Some((r.number("instructions")?, r.number("ticks")?, r.number("overhead_ticks")?)));
    println!("\n=== on-target results: QEMU mps2-an386 (Cortex-M4F, FPU), -icount shift=0, release profile (opt-level 2, fat LTO) ===");
    match per_tick {
        Some((i, t, o)) => println!(
            "SysTick check: a loop of {} instructions took {} ticks = {:.2} instructions per tick (expected 40: \
             1 ns per instruction, 25 MHz core clock); measuring costs {} tick(s)",
            thousands(i),
            thousands(t),
            i as f64 / t as f64,
            o
        ),
        None => println!("SysTick check: no calibration record (the on-target tests failed early)"),
    }
    const PER_TICK: u64 = 40;
    let all = phases(&app);
    println!(
        "\ninstructions per phase (ticks x {PER_TICK})\n{:<34} {:>12} {:>12} {:>12} {:>10} {:>12}",
        "model / spec", "build", "WFC solve", "exact DP", "encode", "stack peak"
    );
    let mut cases: Vec<(String, String)> = Vec::new();
    for p in &all {
        if !cases.contains(&(p.model.clone(), p.spec.clone())) {
            cases.push((p.model.clone(), p.spec.clone()));
        }
    }
    let find = |m: &str, s: &str, name: &str| all.iter().find(|p| p.model == m && p.spec == s && p.name == name);
    for (m, s) in &cases {
        let cell = |name: &str| find(m, s, name).map(|p| thousands(p.ticks * PER_TICK)).unwrap_or_else(|| "-".into());
        let stack = all.iter().filter(|p| &p.model == m && &p.spec == s).map(|p| p.stack).max().unwrap_or(0);
        println!(
            "{:<34} {:>12} {:>12} {:>12} {:>10} {:>10} B",
            format!("{m} / {s}"),
            cell("build"),
            cell("wfc"),
            cell("exact"),
            cell("encode-wfc"),
            thousands(stack)
        );
    }
    println!(
        "(build = ScheduleProblem::build: the constraints and the cost model on every state; stack peak = \
              deepest stack of any phase, whole depth from the stack's top)"
    );

    let peak = app.records("stack").pop().and_then(|r| r.number("high_water")).unwrap_or(0);
    println!("\n{:<26} {:>10} {:>12} {:>12} {:>15}", "image", "flash", "static RAM", "stack peak", "RAM with stack");
    let app_ram = app_image.static_ram_bytes() as u64 + peak;
    println!(
        "{:<26} {:>8} B {:>10} B {:>10} B {:>13} B",
        "hwwfc-firmware (bench)",
        thousands(app_image.flash_bytes() as u64),
        thousands(app_image.static_ram_bytes() as u64),
        thousands(peak),
        thousands(app_ram)
    );
    println!(
        "{:<26} {:>8} B {:>10} B {:>12} {:>15}",
        "ontarget (defmt-test)",
        thousands(tests_image.flash_bytes() as u64),
        thousands(tests_image.static_ram_bytes() as u64),
        "-",
        "-"
    );

    let wfc = find("attention", "stress_gpu", "wfc").map(|p| p.ticks * PER_TICK);
    let build = find("attention", "stress_gpu", "build").map(|p| p.ticks * PER_TICK);
    println!("\ntargets (attention benchmark on stress_gpu, benchmark image)");
    match wfc {
        Some(w) => println!(
            "  WFC solve <= {} instructions: {} -> {}",
            thousands(TARGET_WFC_INSTRUCTIONS),
            thousands(w),
            verdict(w, TARGET_WFC_INSTRUCTIONS)
        ),
        None => println!("  WFC solve: not measured"),
    }
    if let (Some(b), Some(w)) = (build, wfc) {
        println!(
            "  (building the problem, i.e. evaluating the cost model, takes another {}; build + WFC = {})",
            thousands(b),
            thousands(b + w)
        );
    }
    println!(
        "  RAM incl. stack <= {} B: {} B -> {}",
        thousands(TARGET_RAM_BYTES),
        thousands(app_ram),
        verdict(app_ram, TARGET_RAM_BYTES)
    );
    let flash = app_image.flash_bytes() as u64;
    println!(
        "  flash <= {} B: {} B -> {}",
        thousands(TARGET_FLASH_BYTES),
        thousands(flash),
        verdict(flash, TARGET_FLASH_BYTES)
    );
    println!(
        "  heap: {}",
        if allocations.is_empty() {
            "no allocation symbol in either image".to_string()
        } else {
            format!("ALLOCATION SYMBOLS: {}", allocations.join(", "))
        }
    );
    if let Err(e) = &locks {
        println!("  lock files: {e}");
    }

    let mut ok = true;
    for (what, run) in [("on-target tests", &tests), ("benchmark image", &app)] {
        let verdict = if run.passed() {
            "passed".to_string()
        } else if run.timed_out {
            ok = false;
            "TIMED OUT".to_string()
        } else {
            ok = false;
            format!("FAILED (exit status {:?})", run.exit_code)
        };
        println!("{what}: {verdict}");
    }
    // Ten cases (fixtures::CASES), each by both solvers.
    if app.records("schedule").len() != 20 || all.is_empty() {
        println!("benchmark image: records missing");
        ok = false;
    }
    ok &= allocations.is_empty() && locks.is_ok();
    println!("{}", if ok { "\nqemu: all on-target checks passed" } else { "\nqemu: FAILED" });
    Ok(ok)
}
