//! `hwwfc profile` without a GPU (the clear error) and with one (a small
//! real run, resumed); each test says when it is skipped.

mod common;

use common::hwwfc;
use std::path::Path;

/// Whether `hwwfc` finds a CUDA driver here (it dlopens `libcuda.so`).
fn has_cuda_driver() -> bool {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.json");
    std::fs::write(&w, r#"[{"name": "c", "kind": "copy", "bytes": 4096}]"#).unwrap();
    let out = hwwfc()
        .args(["profile", "--quiet", "--workloads"])
        .arg(&w)
        .arg("--out")
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    !String::from_utf8_lossy(&out.stderr).contains("no CUDA driver")
}

fn workloads_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../calib-data/workloads.json")
}

#[test]
fn without_a_gpu_it_says_so_in_one_line() {
    if has_cuda_driver() {
        eprintln!("skipped: this machine has a CUDA driver");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out =
        hwwfc().args(["profile", "--workloads"]).arg(workloads_file()).arg("--out").arg(dir.path()).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: no CUDA driver"), "{stderr}");
    // Nothing was written.
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn bad_workload_files_fail_before_any_gpu_work() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("w.json");
    std::fs::write(&bad, r#"[{"name": "a", "kind": "matmul", "m": 0, "n": 8, "k": 8}]"#).unwrap();
    let out =
        hwwfc().args(["profile", "--workloads"]).arg(&bad).arg("--out").arg(dir.path().join("o")).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("w.json") && stderr.contains("workload `a`") && stderr.contains("at least 1"), "{stderr}");
    let out = hwwfc().args(["profile", "--workloads", "/no/such/file.json", "--out"]).arg(dir.path()).output().unwrap();
    assert!(String::from_utf8(out.stderr).unwrap().contains("/no/such/file.json: cannot read"));
}

#[test]
fn the_committed_workloads_cover_the_prototype_and_real_models() {
    let text = std::fs::read_to_string(workloads_file()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let list = v.as_array().unwrap();
    let names: Vec<&str> = list.iter().map(|w| w["name"].as_str().unwrap()).collect();
    for prototype in [
        "mm_small_256x512",
        "mm_medium_1024",
        "mm_large_2048",
        "mm_bert_qkv_512x768",
        "mm_gpt2_ffn_768x3072",
        "sm_small_256x512",
        "sm_medium_512x1024",
        "sm_large_1024x2048",
        "sm_attn_512x512",
    ] {
        assert!(names.contains(&prototype), "{prototype}");
    }
    let kernels = list.iter().filter(|w| w["kind"] == "matmul" || w["kind"] == "softmax").count();
    assert!(kernels >= 24, "{kernels}");
    // M from 1 to 8192, and odd sizes.
    let ms: Vec<u64> = list.iter().filter_map(|w| w["m"].as_u64()).collect();
    assert!(ms.contains(&1) && ms.contains(&8192));
    assert!(list.iter().any(|w| w["n"].as_u64().is_some_and(|n| n % 2 == 1)));
    assert!(list.iter().any(|w| w["cols"].as_u64().is_some_and(|c| c % 2 == 1)));
}

#[test]
fn with_a_gpu_a_small_run_records_and_resumes() {
    if !has_cuda_driver() {
        eprintln!("skipped: no CUDA driver on this machine (run on a GPU machine to exercise profiling)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.json");
    std::fs::write(
        &w,
        r#"[{"name": "odd", "kind": "matmul", "m": 77, "n": 197, "k": 96},
            {"name": "row", "kind": "softmax", "rows": 3, "cols": 77}]"#,
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let run =
        || hwwfc().args(["profile", "--quiet", "--workloads"]).arg(&w).arg("--out").arg(&out_dir).output().unwrap();
    let first = run();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let records = std::fs::read_to_string(out_dir.join("records.jsonl")).unwrap();
    let n = records.lines().count();
    assert!(n > 100, "{n}");
    assert!(!records.contains("\"failed\""), "a configuration failed:\n{records}");
    let second = run();
    assert!(String::from_utf8_lossy(&second.stderr).contains("nothing to measure"));
    assert_eq!(std::fs::read_to_string(out_dir.join("records.jsonl")).unwrap().lines().count(), n);
}

/// The (source, workload, configuration) of every record in `text`, after
/// checking that every line is complete and parses.
fn keys(text: &str) -> Vec<(String, String, i64)> {
    assert!(text.is_empty() || text.ends_with('\n'), "a truncated last line is left");
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            let config = v["config"]["index"].as_i64().unwrap_or(-1);
            (v["source"].as_str().unwrap().to_string(), v["workload"]["name"].as_str().unwrap().to_string(), config)
        })
        .collect()
}

#[test]
fn with_a_gpu_a_killed_run_resumes_and_measures_everything_exactly_once() {
    if !has_cuda_driver() {
        eprintln!("skipped: no CUDA driver on this machine (run on a GPU machine to exercise kill and resume)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.json");
    std::fs::write(
        &w,
        r#"[{"name": "mm", "kind": "matmul", "m": 512, "n": 384, "k": 320},
            {"name": "sm", "kind": "softmax", "rows": 64, "cols": 1000}]"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let records = out.join("records.jsonl");
    let command = || {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_hwwfc"));
        c.args(["profile", "--quiet", "--workloads"]).arg(&w).arg("--out").arg(&out);
        c
    };
    // Start a run and kill it (SIGKILL: no chance to clean up) once its
    // first records are on disk.
    let mut child = command().stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let start = std::time::Instant::now();
    let killed = loop {
        let lines = std::fs::read_to_string(&records).map_or(0, |t| t.lines().count());
        if lines >= 5 {
            child.kill().unwrap();
            child.wait().unwrap();
            break true;
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "the run failed before it could be killed");
            break false;
        }
        assert!(start.elapsed().as_secs() < 600, "no record written in 10 minutes");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let partial = std::fs::read(&records).unwrap();
    let before = String::from_utf8_lossy(&partial).lines().filter(|l| l.ends_with('}')).count();
    eprintln!("killed: {killed}, {before} records were on disk");

    // The rerun keeps what is there, measures the rest (and a truncated
    // last line again), and a third run finds nothing left.
    let second = command().output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    let text = std::fs::read_to_string(&records).unwrap();
    let all = keys(&text);
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "a measurement is in the file twice");
    assert!(!text.contains("\"failed\""), "a configuration failed:\n{text}");
    for name in ["mm", "sm"] {
        let kernels = all.iter().filter(|(s, w, _)| s == "kernel" && w == name).count();
        assert!(kernels > 20, "{name}: {kernels} configurations");
    }
    assert_eq!(all.iter().filter(|(s, _, _)| s == "cublas").count(), 1);
    if killed {
        assert!(stderr.contains("already there"), "{stderr}");
    }
    let third = command().output().unwrap();
    assert!(String::from_utf8_lossy(&third.stderr).contains("nothing to measure"));
    assert_eq!(std::fs::read_to_string(&records).unwrap(), text, "nothing measured twice");
}
