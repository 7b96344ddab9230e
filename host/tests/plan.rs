//! `hwwfc profile --plan` and `--shard`, without a GPU: the plan of the
//! committed Hopper run is exactly what that run measured, and bad
//! requests are refused in one line.

mod common;

use common::{hopper_run_lines, hwwfc, line_key, plan_keys, repo, workloads_of, LineKey, HOPPER_RUN, HOPPER_RUN_SPEC};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The workloads of the committed Hopper run, in the corpus file's order,
/// and its records' keys.
fn hopper_run(dir: &Path) -> (PathBuf, HashSet<LineKey>) {
    let lines = hopper_run_lines();
    let mut keys = HashSet::new();
    for line in &lines {
        assert!(keys.insert(line_key(line)));
    }
    (workloads_of(&lines, dir), keys)
}

fn plan(args: &[&str]) -> serde_json::Value {
    let out = hwwfc().args(["profile", "--plan", "--json", "--spec", HOPPER_RUN_SPEC]).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_plan_of_the_committed_hopper_run_is_what_it_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (workloads, keys) = hopper_run(dir.path());
    let w = workloads.to_str().unwrap();
    // Against the run's own folder: every record is there.
    let done = plan(&["--workloads", w, "--out", repo().join(HOPPER_RUN).to_str().unwrap()]);
    assert_eq!(done["records"].as_u64().unwrap() as usize, keys.len());
    assert_eq!(done["missing"], 0);
    assert_eq!(done["seconds"], 0.0);
    assert!(done["workloads"].as_array().unwrap().iter().all(|w| w["missing_keys"].as_array().unwrap().is_empty()));
    // Against an empty folder: all of it, with a time and kernels to build.
    let empty = dir.path().join("empty");
    let fresh = plan(&["--workloads", w, "--out", empty.to_str().unwrap()]);
    assert_eq!(fresh["missing"].as_u64().unwrap() as usize, keys.len());
    assert!(fresh["seconds"].as_f64().unwrap() > 10.0 && fresh["programs"].as_u64().unwrap() > 300, "{fresh}");
    // Its keys are the run's.
    assert_eq!(plan_keys(&fresh), keys);
    assert!(!empty.exists(), "--plan writes nothing");
    // Three shards: their records add up to the run, each with its share.
    let mut records = 0;
    let mut seconds = Vec::new();
    for i in 0..3 {
        let p = plan(&["--workloads", w, "--out", empty.to_str().unwrap(), "--shard", &format!("{i}/3")]);
        assert_eq!(p["shard"], format!("{i}/3"));
        records += p["records"].as_u64().unwrap() as usize;
        seconds.push(p["seconds"].as_f64().unwrap());
    }
    assert_eq!(records, keys.len());
    let total: f64 = seconds.iter().sum();
    assert!(seconds.iter().all(|s| *s > total / 3.0 * 0.8), "{seconds:?}");
    // The table says the same.
    let out = hwwfc()
        .args(["profile", "--plan", "--spec", HOPPER_RUN_SPEC, "--workloads", w, "--out"])
        .arg(&empty)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("{} records, {} missing", keys.len(), keys.len())), "{text}");
}

#[test]
fn bad_plans_and_shards_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let w = repo().join("calib-data/workloads.json");
    let run = |args: &[&str]| {
        let out = hwwfc()
            .args(["profile", "--workloads"])
            .arg(&w)
            .arg("--out")
            .arg(dir.path().join("o"))
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let e = run(&["--plan"]);
    assert!(e.starts_with("error: --plan opens no device: name the spec") && e.trim_end().lines().count() == 1, "{e}");
    let e = run(&["--shard", "4/4"]);
    assert!(e.contains("`4/4` is not a shard: I/N with 0 <= I < N"), "{e}");
    let e = run(&["--json"]);
    assert!(e.contains("--plan"), "{e}");
    let e = run(&["--compile", "sm_90"]);
    assert!(e.contains("--plan"), "{e}");
    let e = run(&["--plan", "--spec", "h200", "--compile", "hopper"]);
    assert!(e.starts_with("error: --compile hopper: name an architecture such as sm_90"), "{e}");
    let e = run(&["--plan", "--spec", "h200", "--compile", "sm_90", "--compile-sample", "0"]);
    assert!(e.starts_with("error: --compile-sample 0 compiles nothing"), "{e}");
    let e = run(&["--plan", "--spec", "h200", "--compile-sample", "5"]);
    assert!(e.contains("--compile"), "{e}");
    // Without NVRTC on the library path, the one-line error that names it
    // (where the system's loader finds one anyway, one softmax compiles).
    let small = dir.path().join("small.json");
    std::fs::write(&small, r#"[{"name": "s", "kind": "softmax", "rows": 8, "cols": 100}]"#).unwrap();
    let out = hwwfc()
        .args(["profile", "--plan", "--spec", "h200", "--compile", "sm_90", "--workloads"])
        .arg(&small)
        .arg("--out")
        .arg(dir.path().join("o"))
        .env("LD_LIBRARY_PATH", dir.path())
        .output()
        .unwrap();
    let e = String::from_utf8(out.stderr).unwrap();
    if !out.status.success() {
        assert!(e.starts_with("error: NVRTC not found") && e.trim_end().lines().count() == 1, "{e}");
    }
    assert!(!dir.path().join("o").exists());
}

#[test]
fn a_product_whose_b_is_stored_k_major_is_planned_on_every_family() {
    // The Hopper family reads it as it is, the mma.sync family after a
    // transpose timed with it: the same configurations as a row-major B.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let keys = |layout: &str| {
        let path = dir.path().join("w.json");
        let text = format!(r#"[{{"name":"p","kind":"matmul","m":512,"n":768,"k":256{layout}}}]"#);
        std::fs::write(&path, text).unwrap();
        let p = plan(&["--workloads", path.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        p["workloads"][0]["missing_keys"].as_array().unwrap().clone()
    };
    let plain = keys("");
    assert!(plain.len() > 100, "{}", plain.len());
    assert_eq!(keys(r#","b_layout":"k_major""#), plain);
}
