//! The calibrator against the committed H200 records: the held-out quality
//! bar, and bad records refused with a clear line.

mod common;

use common::hwwfc;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn h200_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../calib-data/h200")
}

/// Runs `hwwfc ARGS`, expects failure, returns the one `error:` line.
fn error_of(args: &[&str]) -> String {
    let out = hwwfc().args(args).output().unwrap();
    assert!(!out.status.success(), "expected failure for {args:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    let last = stderr.trim_end().lines().last().unwrap_or("").to_string();
    assert!(last.starts_with("error: "), "stderr: {stderr}");
    last
}

/// A copy of one committed run folder in a temporary folder.
fn copy_run(run: &str, into: &Path) -> PathBuf {
    let dst = into.join(run);
    std::fs::create_dir_all(&dst).unwrap();
    // A finished run may be committed compressed.
    for f in ["records.jsonl", "records.jsonl.gz", "meta.json"] {
        let from = h200_data().join(run).join(f);
        if from.exists() {
            std::fs::copy(from, dst.join(f)).unwrap();
        }
    }
    dst
}

#[test]
fn held_out_quality_on_the_committed_records() {
    let out = hwwfc().args(["report", "--data"]).arg(h200_data()).args(["--json", "--no-files"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rho = v["mean_rho"].as_f64().unwrap();
    let regret = v["mean_regret_top1"].as_f64().unwrap();
    assert!(rho >= 0.8, "held-out mean rho {rho}");
    assert!(regret <= 0.10, "held-out mean top-1 regret {regret}");
    let workloads = v["workloads"].as_array().unwrap();
    assert_eq!(workloads.len(), 30);
    for w in workloads {
        assert!(w["retest_rho"].as_f64().unwrap() > 0.98, "{w}");
        for key in ["name", "rho", "tau", "regret_top1", "top8_share"] {
            assert!(!w[key].is_null(), "{key} in {w}");
        }
    }
    // The fit beats the uncalibrated model it starts from.
    assert!(rho > v["baseline"]["rho"].as_f64().unwrap());
}

#[test]
fn given_coefficients_are_evaluated_without_refit() {
    let dir = tempfile::tempdir().unwrap();
    let data = copy_run("run1", dir.path());
    let coeffs = h200_data().join("coefficients.json");
    let out = hwwfc()
        .args(["report", "--data"])
        .arg(&data)
        .arg("--coefficients")
        .arg(&coeffs)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["method"].as_str().unwrap().contains("no refit"));
    assert!(v["mean_rho"].as_f64().unwrap() > 0.8);
    assert!(data.join("REPORT-coefficients.md").is_file());
    assert!(data.join("plots-coefficients").join("rho.svg").is_file());
    // One run: no retest ceiling.
    assert!(v["mean_retest_rho"].is_null());
}

#[test]
fn a_malformed_record_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run("run1", dir.path());
    let path = run.join("records.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"source\": \"kernel\", \"oops\": 1}";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = error_of(&["report", "--data", run.to_str().unwrap(), "--no-files"]);
    assert!(e.contains("records.jsonl:3: malformed record"), "{e}");
}

#[test]
fn records_of_two_gpus_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    copy_run("run1", dir.path());
    let other = copy_run("run2", dir.path());
    let meta = other.join("meta.json");
    let text = std::fs::read_to_string(&meta).unwrap().replace("NVIDIA H200", "NVIDIA A100-SXM4-80GB");
    std::fs::write(&meta, text).unwrap();
    let e = error_of(&["calibrate", "--data", dir.path().to_str().unwrap(), "--no-report"]);
    assert!(e.contains("two different GPUs") && e.contains("A100"), "{e}");
}

#[test]
fn too_few_records_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run("run1", dir.path());
    let path = run.join("records.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let few: Vec<&str> = text.lines().take(5).collect();
    std::fs::write(&path, few.join("\n") + "\n").unwrap();
    let e =
        error_of(&["calibrate", "--data", run.to_str().unwrap(), "--no-report", "--out", dir.path().to_str().unwrap()]);
    assert!(e.contains("too few records to fit"), "{e}");
    assert!(!dir.path().join("coefficients.json").exists(), "nothing written half-way");
}

#[test]
fn calibration_writes_loadable_coefficients() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run("run1", dir.path());
    let out = dir.path().join("fit");
    let status =
        hwwfc().args(["calibrate", "--data"]).arg(&run).args(["--no-report", "--out"]).arg(&out).output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out.join("coefficients.json")).unwrap()).unwrap();
    assert_eq!(json["gpu"], "NVIDIA H200");
    assert_eq!(json["spec"], "h200");
    // The fitted file schedules.
    let s = hwwfc()
        .args(["schedule", "--spec", "h200", "--model", "gpt2-block", "--json", "--coefficients"])
        .arg(out.join("coefficients.json"))
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let v: Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!(v["agree"], true);
}

#[test]
fn h200_schedules_use_the_calibrated_coefficients_by_default() {
    let out = hwwfc().args(["schedule", "--spec", "h200", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["coefficients"].as_str().unwrap().contains("calibrated"), "{}", v["coefficients"]);
    let out = hwwfc().args(["schedule", "--spec", "stress_gpu", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["coefficients"], "default");
    // The H100 borrows the H200's, and says so.
    let out = hwwfc().args(["schedule", "--spec", "h100", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["coefficients"].as_str().unwrap().contains("calibrated for `h200`"), "{}", v["coefficients"]);
}

#[test]
fn cross_validation_writes_each_workloads_held_out_prediction() {
    // Three workloads of run 1: each fold fits on the other two.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run1");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(h200_data().join("run1/meta.json"), run.join("meta.json")).unwrap();
    let keep = ["mm_small_256x512", "mm_medium_1024", "sm_small_256x512"];
    let records = std::fs::read_to_string(h200_data().join("run1/records.jsonl")).unwrap();
    let kept: String = records
        .lines()
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["source"] == "kernel" && keep.iter().any(|k| v["workload"]["name"] == *k)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(run.join("records.jsonl"), kept).unwrap();
    let out = hwwfc().args(["report", "--data"]).arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(run.join("plots/predictions.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "workload,tile_m,tile_n,tile_k,warps_m,warps_n,stages,placement,split_k,pingpong,measured_us,predicted_us,held_out_us");
    assert_eq!(lines.len(), 1 + 294 + 294 + 33);
    let mut differ = 0;
    for l in &lines[1..] {
        let f: Vec<f64> = l.split(',').skip(10).map(|t| t.parse().unwrap()).collect();
        assert!(f.len() == 3 && f.iter().all(|v| *v > 0.0), "{l}");
        differ += usize::from((f[1] - f[2]).abs() > 1e-3 * f[1]);
    }
    // The fit that saw a workload and the one that did not disagree.
    assert!(differ > lines.len() / 2, "{differ} of {} differ", lines.len() - 1);
}

/// A run folder under `into` holding the kernel records of `keep` from
/// committed run `run`.
fn subset_run(run: &str, into: &Path, keep: &[&str]) -> PathBuf {
    let dst = into.join(run);
    std::fs::create_dir_all(&dst).unwrap();
    std::fs::copy(h200_data().join(run).join("meta.json"), dst.join("meta.json")).unwrap();
    let records = std::fs::read_to_string(h200_data().join(run).join("records.jsonl")).unwrap();
    let kept: String = records
        .lines()
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["source"] == "kernel" && keep.iter().any(|k| v["workload"]["name"] == *k)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dst.join("records.jsonl"), kept).unwrap();
    dst
}

#[test]
fn holding_out_a_family_judges_it_by_the_fit_on_the_others_alone() {
    let (a, b) = (["mm_small_256x512", "sm_small_256x512"], ["mm_medium_1024", "sm_medium_512x1024"]);
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both");
    subset_run("run1", &both, &[a[0], a[1], b[0], b[1]]);
    let only_b = subset_run("run1", &dir.path().join("b"), &b);
    let only_a = subset_run("run1", &dir.path().join("a"), &a);
    let labels = dir.path().join("workloads.json");
    let entry = |name: &str, family: &str| {
        let kind = if name.starts_with("mm") {
            "\"matmul\", \"m\": 1, \"n\": 1, \"k\": 1"
        } else {
            "\"softmax\", \"rows\": 1, \"cols\": 1"
        };
        format!("{{\"name\": \"{name}\", \"kind\": {kind}, \"family\": \"{family}\"}}")
    };
    let text = format!("[{}, {}, {}, {}]", entry(a[0], "fa"), entry(a[1], "fa"), entry(b[0], "fb"), entry(b[1], "fb"));
    std::fs::write(&labels, text).unwrap();

    // Family a held out: the fit on family b alone.
    let out = hwwfc()
        .args(["report", "--data"])
        .arg(&both)
        .args(["--hold-out", "family", "--workloads"])
        .arg(&labels)
        .args(["--json", "--no-files"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let held: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(held["method"].as_str().unwrap().contains("leave-one-family-out cross-validation (2 families)"));
    let families = held["families"].as_array().unwrap();
    assert_eq!(families.len(), 2);
    assert_eq!((families[0]["family"].as_str(), families[0]["workloads"].as_u64()), (Some("fa"), Some(2)));
    assert_eq!((families[1]["family"].as_str(), families[1]["workloads"].as_u64()), (Some("fb"), Some(2)));

    // The same fit, made by calibrating on family b's records, then judged
    // on family a's without a refit.
    let cal = hwwfc().args(["calibrate", "--data"]).arg(&only_b).args(["--no-report"]).output().unwrap();
    assert!(cal.status.success(), "{}", String::from_utf8_lossy(&cal.stderr));
    let out = hwwfc()
        .args(["report", "--data"])
        .arg(&only_a)
        .arg("--coefficients")
        .arg(only_b.join("coefficients.json"))
        .args(["--json", "--no-files"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let given: Value = serde_json::from_slice(&out.stdout).unwrap();
    for w in given["workloads"].as_array().unwrap() {
        let row = held["workloads"].as_array().unwrap().iter().find(|r| r["name"] == w["name"]).unwrap();
        assert_eq!(row["family"], "fa");
        for key in ["rho", "tau", "regret_top1", "top1_share"] {
            let (x, y) = (row[key].as_f64().unwrap(), w[key].as_f64().unwrap());
            assert!((x - y).abs() < 1e-9, "{key} of {}: held out {x}, fitted on fb alone {y}", w["name"]);
        }
    }

    // What cannot be grouped is refused before any fit.
    let e = error_of(&["report", "--data", both.to_str().unwrap(), "--hold-out", "family"]);
    assert!(e.contains("--hold-out family needs --workloads FILE"), "{e}");
    std::fs::write(&labels, format!("[{}, {}, {}]", entry(a[0], "fa"), entry(a[1], "fa"), entry(b[0], "fb"))).unwrap();
    let e = error_of(&[
        "report",
        "--data",
        both.to_str().unwrap(),
        "--hold-out",
        "family",
        "--workloads",
        labels.to_str().unwrap(),
    ]);
    assert!(e.contains("workload `sm_medium_512x1024` of the records is not in the file"), "{e}");
}
