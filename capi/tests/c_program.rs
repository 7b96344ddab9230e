//! A C program built with the system's C compiler links the static library
//! and checks that its schedules equal the Rust core's, byte for byte.
//!
//! The test builds `libhwwfc_capi.a` with a nested cargo (into a target
//! directory of its own, so that it never waits for this build's lock),
//! writes each case's inputs and Rust's schedules as wire-format files,
//! compiles `tests/c/schedule_check.c` against `include/hwwfc.h` with
//! `cc -std=c99 -Wall -Wextra -Werror` and runs it.

use hwwfc_core::wire;
use hwwfc_core::Coefficients;
use hwwfc_fixtures::{case_schedule, Solver, CASES, SCHEDULE_CAPACITY};
use std::path::{Path, PathBuf};
use std::process::Command;

fn static_library(work: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "-p", "hwwfc-capi", "--lib", "--message-format=json-render-diagnostics", "--target-dir"])
        .arg(work.join("target"))
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(out.status.success(), "building the static library failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(artifact_filenames)
        .flatten()
        .find(|f| f.ends_with("libhwwfc_capi.a"))
        .map(PathBuf::from)
        .expect("cargo names libhwwfc_capi.a")
}

/// The `filenames` of a cargo `compiler-artifact` message (a JSON line),
/// without a JSON parser: cargo writes them as a plain string array.
fn artifact_filenames(line: &str) -> Option<Vec<String>> {
    if !line.contains("\"reason\":\"compiler-artifact\"") {
        return None;
    }
    let start = line.find("\"filenames\":[")? + "\"filenames\":[".len();
    let list = &line[start..start + line[start..].find(']')?];
    Some(list.split(',').map(|s| s.trim().trim_matches('"').to_string()).collect())
}

#[test]
fn a_c_program_gets_the_rust_schedules() {
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi-c");
    let cases_dir = work.join("cases");
    std::fs::create_dir_all(&cases_dir).unwrap();
    let lib = static_library(&work);

    let mut names = String::new();
    let mut buf = [0u8; 4096];
    for case in CASES {
        let name = format!("{}.{}", case.model, case.spec);
        let (spec, graph) = case.inputs().unwrap();
        let write = |ext: &str, bytes: &[u8]| std::fs::write(cases_dir.join(format!("{name}.{ext}")), bytes).unwrap();
        write("spec", wire::to_slice(&spec, &mut buf).unwrap());
        write("model", wire::to_slice(&graph, &mut buf).unwrap());
        write("coefficients", wire::to_slice(&Coefficients::default(), &mut buf).unwrap());
        let mut sched = [0u8; SCHEDULE_CAPACITY];
        for solver in Solver::ALL {
            write(solver.name(), case_schedule(&case, solver, &mut sched).unwrap());
        }
        names.push_str(&name);
        names.push('\n');
    }
    std::fs::write(cases_dir.join("cases.txt"), names).unwrap();

    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = work.join("schedule_check");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c/schedule_check.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(out.status.success(), "compiling the C program failed:\n{}", String::from_utf8_lossy(&out.stderr));

    let run = Command::new(&exe).arg(&cases_dir).output().expect("run the C program");
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    assert!(run.status.success(), "the C program failed:\n{stdout}{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains(&format!("{} cases, 0 failures", CASES.len())), "{stdout}");
}
