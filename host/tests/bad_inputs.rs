//! Bad input on every command that `errors.rs` (schedule's files) and
//! `calibrate.rs` (records of two GPUs, too few records) do not cover
//! already: missing files, wrong types, older format versions,
//! coefficients of another GPU, truncated and invalid records, output
//! paths that cannot be written; each gives one `error:` line, a non-zero
//! exit, and leaves nothing written half-way.

mod common;

use common::{hwwfc, schedule_error, spec_json, write_json};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn h200_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../calib-data/h200")
}

/// A copy of the committed run `run1` in `into`.
fn copy_run(into: &Path) -> PathBuf {
    let dst = into.join("run1");
    std::fs::create_dir_all(&dst).unwrap();
    for f in ["records.jsonl", "meta.json"] {
        std::fs::copy(h200_data().join("run1").join(f), dst.join(f)).unwrap();
    }
    dst
}

/// Runs `hwwfc ARGS`, expects exit status 1 with exactly one line on
/// stderr, an `error:` line and no panic, and nothing on stdout; returns
/// the line.
fn error_of(args: &[&str]) -> String {
    let out = hwwfc().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "exit status for {args:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert!(stderr.starts_with("error: "), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "stderr: {stderr}");
    assert!(out.stdout.is_empty(), "stdout on error: {}", String::from_utf8_lossy(&out.stdout));
    stderr.trim_end().to_string()
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// What is in `dir`, names sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn coefficients_wrapper(spec: &str, gpu: &str) -> Value {
    let text = std::fs::read_to_string(h200_data().join("coefficients.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["spec"] = json!(spec);
    v["gpu"] = json!(gpu);
    v
}

// ---------------------------------------------------------------------
// schedule

#[test]
fn schedule_missing_files_name_the_file() {
    let e = schedule_error(&["--model", "no/such/model.json"]);
    assert!(e.starts_with("error: cannot read no/such/model.json:"), "{e}");
    let e = schedule_error(&["--coefficients", "no/such/coefficients.json"]);
    assert!(e.starts_with("error: cannot read no/such/coefficients.json:"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let e = schedule_error(&["--spec", arg(dir.path())]);
    assert!(e.contains("cannot read") || e.contains("unknown spec"), "{e}");
}

#[test]
fn schedule_refuses_zero_and_wrongly_typed_spec_fields() {
    let dir = tempfile::tempdir().unwrap();
    for (field, value, needle) in [
        ("sm_count", json!(0), "invalid spec: `sm_count` must be a positive, finite number"),
        ("sram_per_block_bytes", json!(0), "invalid spec: `sram_per_block_bytes` must be a positive, finite number"),
        ("l2_bytes", json!(4294967296u64), "field `l2_bytes`: invalid value: integer `4294967296`, expected u32"),
        ("launch_overhead_us", json!(-1.0), "invalid spec: `launch_overhead_us` must be a finite number, zero or more"),
        ("space", json!("gpu"), "field `space`: unknown variant `gpu`"),
        ("name", json!(7), "field `name`: invalid type: integer `7`"),
        ("max_threads_per_block", json!(4096), "`max_threads_per_block` may not exceed `max_threads_per_sm`"),
    ] {
        let mut v = spec_json("h200");
        v[field] = value;
        let p = write_json(dir.path(), &format!("{field}.json"), &v);
        let e = schedule_error(&["--spec", arg(&p)]);
        assert!(e.contains(&format!("{field}.json: ")) && e.contains(needle), "{field}: {e}");
    }
}

#[test]
fn schedule_refuses_older_or_mistyped_coefficient_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = coefficients_wrapper("h200", "NVIDIA H200");
    v["format_version"] = json!(1);
    let p = write_json(dir.path(), "v1.json", &v);
    let e = schedule_error(&["--spec", "h200", "--coefficients", arg(&p)]);
    assert!(
        e.contains(&format!(
            "v1.json: field `format_version`: version 1 is not supported (this build reads version {})",
            hwwfc_core::cost::COEFFICIENTS_VERSION
        )),
        "{e}"
    );
    v["format_version"] = json!("2");
    let p = write_json(dir.path(), "str.json", &v);
    let e = schedule_error(&["--spec", "h200", "--coefficients", arg(&p)]);
    assert!(e.contains("str.json: field `format_version`: invalid type: string \"2\""), "{e}");
    let mut v = coefficients_wrapper("h200", "NVIDIA H200");
    v["gpu"] = json!(["NVIDIA H200"]);
    let p = write_json(dir.path(), "gpu.json", &v);
    let e = schedule_error(&["--spec", "h200", "--coefficients", arg(&p)]);
    assert!(e.contains("gpu.json: field `gpu`: invalid type: sequence"), "{e}");
}

#[test]
fn schedule_refuses_coefficients_of_another_spec_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_json(dir.path(), "h200.json", &coefficients_wrapper("h200", "NVIDIA H200"));
    let e = schedule_error(&["--spec", "a100", "--coefficients", arg(&p)]);
    assert!(
        e.contains("h200.json: coefficients of another GPU: fitted for spec `h200`, the spec in use is `a100`")
            && e.contains("--allow-other-gpu"),
        "{e}"
    );
    let out =
        hwwfc().args(["schedule", "--spec", "a100", "--json", "--allow-other-gpu", "--coefficients"]).arg(&p).output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("warning: ") && stderr.contains("used anyway"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["agree"], true);
    // The same file on its own spec needs no flag.
    let out = hwwfc().args(["schedule", "--spec", "h200", "--json", "--coefficients"]).arg(&p).output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_failed_schedule_writes_no_dump() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = spec_json("h200");
    v["sram_per_block_bytes"] = json!(4096);
    let spec = write_json(dir.path(), "tiny.json", &v);
    let dump = dir.path().join("problem.json");
    let e = schedule_error(&["--spec", arg(&spec), "--dump-problem", arg(&dump)]);
    assert!(e.contains("every state removed"), "{e}");
    assert_eq!(listing(dir.path()), ["tiny.json"], "no dump, no temporary file");
}

// ---------------------------------------------------------------------
// profile (before any GPU work: these hold with or without a GPU)

fn profile_error(workloads: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["profile", "--workloads", arg(workloads), "--out", arg(out)];
    args.extend_from_slice(extra);
    error_of(&args)
}

#[test]
fn profile_refuses_bad_workloads_and_specs_before_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (i, (text, needle)) in [
        (
            r#"[{"name": "a", "kind": "matmul", "m": 65536, "n": 65536, "k": 2}]"#,
            "workload `a`: a tensor of this layer exceeds 4 GiB",
        ),
        (r#"[{"name": "a", "kind": "softmax", "rows": 4294967295, "cols": 4294967295}]"#, "exceeds 4 GiB"),
        (r#"[{"name": "c", "kind": "copy", "bytes": 18446744073709551615}]"#, "a copy may not exceed 4 GiB"),
        (r#"[{"name": "a", "kind": "matmul", "m": "64", "n": 64, "k": 64}]"#, "field `m`: invalid type: string"),
        (r#"[{"name": "a", "kind": "matmul", "m": -64, "n": 64, "k": 64}]"#, "field `m`: invalid value: integer `-64`"),
        (r#"[{"name": "a", "kind": "matmul", "m": 64, "n": 64, "k": 64, "tile": 8}]"#, "unknown field `tile`"),
        (r#"[{"name": "a", "kind": "softmax", "rows": 0, "cols": 8}]"#, "dimension `rows` must be at least 1"),
        ("[{\"name\": \"a\", ", "not a JSON list of workloads"),
    ]
    .into_iter()
    .enumerate()
    {
        let w = dir.path().join(format!("w{i}.json"));
        std::fs::write(&w, text).unwrap();
        let e = profile_error(&w, &out, &[]);
        assert!(e.contains(&format!("w{i}.json")) && e.contains(needle), "{text}: {e}");
    }
    let w = dir.path().join("ok.json");
    std::fs::write(&w, r#"[{"name": "c", "kind": "copy", "bytes": 4096}]"#).unwrap();
    let mut v = spec_json("h200");
    v["peak_tflops"] = json!({"f16": 1.0, "bf16": 1.0, "f32": "fast"});
    let spec = write_json(dir.path(), "spec.json", &v);
    let e = profile_error(&w, &out, &["--spec", arg(&spec)]);
    assert!(e.contains("spec.json: field `peak_tflops.f32`: invalid type: string"), "{e}");
    for (gpus, needle) in
        [("0,0", "names GPU 0 twice"), ("a,1", "is not a list of GPUs"), ("", "is not a list of GPUs")]
    {
        let o = hwwfc().args(["profile", "--workloads", arg(&w), "--out", arg(&out), "--gpus", gpus]).output().unwrap();
        let e = String::from_utf8(o.stderr).unwrap();
        assert!(o.status.code() == Some(2) && e.contains(needle), "{gpus}: {e}");
    }
    let e = profile_error(&w, &out, &["--kernels", "matmul_tma,cutlass"]);
    assert!(
        e.contains("--kernels: no kernel family `cutlass` (the families: matmul, matmul_tma, softmax, elementwise)"),
        "{e}"
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn profile_refuses_an_output_it_cannot_resume_before_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.json");
    std::fs::write(&w, r#"[{"name": "c", "kind": "copy", "bytes": 4096}]"#).unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let e = profile_error(&w, &file, &[]);
    assert!(e.ends_with("a-file: not a folder (the output folder holds records.jsonl and meta.json)"), "{e}");

    let out = copy_run(dir.path());
    let records = out.join("records.jsonl");
    let text = std::fs::read_to_string(&records).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[4] = lines[4].replace("\"tile_n\":32", "\"tile_n\":33");
    let edited = lines.join("\n") + "\n";
    std::fs::write(&records, &edited).unwrap();
    let e = profile_error(&w, &out, &[]);
    assert!(e.contains("records.jsonl:5: invalid record: workload `mm_small_256x512`: configuration"), "{e}");
    assert_eq!(std::fs::read_to_string(&records).unwrap(), edited, "the records are left as they were");
    std::fs::write(out.join("meta.json"), "{\"runs\": [").unwrap();
    std::fs::write(&records, "").unwrap();
    let e = profile_error(&w, &out, &[]);
    assert!(e.contains("meta.json: malformed"), "{e}");
}

/// A workloads file of one small matmul in `dir`.
fn one_matmul_workload(dir: &Path) -> PathBuf {
    let w = dir.join("w.json");
    std::fs::write(&w, r#"[{"name": "a", "kind": "matmul", "m": 64, "n": 64, "k": 64}]"#).unwrap();
    w
}

#[test]
fn tune_refuses_a_missing_reference_before_the_gpu() {
    // The reference is read first: a wrong folder used to be found only
    // after every configuration had been measured.
    let dir = tempfile::tempdir().unwrap();
    let w = one_matmul_workload(dir.path());
    let missing = dir.path().join("no-such-run");
    let out = dir.path().join("out");
    let e =
        error_of(&["tune", "--workloads", arg(&w), "--top-k", "8", "--out", arg(&out), "--reference", arg(&missing)]);
    assert!(e.contains("no-such-run: cannot read"), "{e}");
    assert!(!out.exists(), "nothing was measured or written");
}

#[test]
fn judge_refuses_missing_or_old_runs_before_the_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let w = one_matmul_workload(dir.path());
    let out = dir.path().join("out");
    let missing = dir.path().join("no-such-run");
    let e = error_of(&["judge", "--workloads", arg(&w), "--runs", arg(&missing), "--out", arg(&out)]);
    assert!(e.contains("no-such-run") && e.contains("tune.json: cannot read"), "{e}");
    // A tune.json without the chosen configuration's index.
    let old = dir.path().join("k8");
    std::fs::create_dir(&old).unwrap();
    std::fs::write(
        old.join("tune.json"),
        r#"{"top_k": 8, "workloads": [{"workload": "a", "shape": "64x64x64", "chosen": "16x16x32 w1x1 s2"}]}"#,
    )
    .unwrap();
    let e = error_of(&["judge", "--workloads", arg(&w), "--runs", arg(&old), "--out", arg(&out)]);
    assert!(e.contains("not a tune.json of this version"), "{e}");
    let e = error_of(&["judge", "--workloads", arg(&w), "--runs", arg(&old), "--passes", "0"]);
    assert!(e.contains("--passes must be at least 1"), "{e}");
    assert!(!out.exists(), "nothing was measured or written");
}

// ---------------------------------------------------------------------
// report and calibrate on bad records

#[test]
fn a_truncated_records_file_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    let path = run.join("records.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = text.lines().count();
    // The run was killed while writing one more line.
    std::fs::write(&path, format!("{text}{{\"source\":\"kernel\",\"workl")).unwrap();
    let before = listing(&run);
    let expected = format!("records.jsonl:{}: truncated record", lines + 1);
    let e = error_of(&["report", "--data", arg(&run)]);
    assert!(e.contains(&expected) && e.contains(arg(&run)), "{e}");
    let e = error_of(&["calibrate", "--data", arg(&run), "--no-report"]);
    assert!(e.contains(&expected), "{e}");
    assert_eq!(listing(&run), before, "no report, no coefficients, nothing half-written");
}

#[test]
fn an_invalid_record_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    let path = run.join("records.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut rec: Value = serde_json::from_str(&lines[9]).unwrap();
    rec["timing"]["median_us"] = json!(0.0);
    lines[9] = rec.to_string();
    let mut rec: Value = serde_json::from_str(&lines[20]).unwrap();
    rec["workload"]["m"] = json!(0);
    lines[20] = rec.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = error_of(&["report", "--data", arg(&run), "--no-files"]);
    assert!(e.contains("records.jsonl:10: invalid record:") && e.contains("`timing.median_us` is 0"), "{e}");
    let mut rec: Value = serde_json::from_str(&lines[9]).unwrap();
    rec["timing"]["median_us"] = json!(16.0);
    lines[9] = rec.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = error_of(&["report", "--data", arg(&run), "--no-files"]);
    assert!(e.contains("records.jsonl:21: invalid record:") && e.contains("dimension `m` must be at least 1"), "{e}");
}

#[test]
fn report_on_missing_data_says_so() {
    let e = error_of(&["report", "--data", "no/such/dir"]);
    assert!(e.contains("no/such/dir: cannot read"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let e = error_of(&["report", "--data", arg(dir.path())]);
    assert!(e.contains("no records.jsonl here or in its subfolders"), "{e}");
    let e = error_of(&["calibrate", "--data", "no/such/dir", "--no-report"]);
    assert!(e.contains("no/such/dir: cannot read"), "{e}");
}

#[test]
fn calibrate_refuses_an_output_that_is_not_a_folder_before_fitting() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    let file = dir.path().join("out.json");
    std::fs::write(&file, "{}").unwrap();
    let e = error_of(&["calibrate", "--data", arg(&run), "--no-report", "--out", arg(&file)]);
    assert!(e.contains("out.json: not a folder"), "{e}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");
}

#[test]
fn report_refuses_coefficients_of_another_gpu_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    let other = write_json(dir.path(), "a100.json", &coefficients_wrapper("a100", "NVIDIA A100-SXM4-80GB"));
    let e = error_of(&["report", "--data", arg(&run), "--no-files", "--coefficients", arg(&other)]);
    assert!(
        e.contains(
            "a100.json: coefficients of another GPU: fitted for spec `a100`, the spec in use is `h200`; fitted on \
             `NVIDIA A100-SXM4-80GB`, the records are of `NVIDIA H200`"
        ),
        "{e}"
    );
    let out = hwwfc()
        .args([
            "report",
            "--data",
            arg(&run),
            "--no-files",
            "--json",
            "--allow-other-gpu",
            "--coefficients",
            arg(&other),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("warning: "), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["mean_rho"].as_f64().unwrap() > 0.5);
}

#[test]
fn report_files_are_whole_or_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_run(dir.path());
    let k = h200_data().join("coefficients.json");
    // The plots' folder cannot be made: nothing is written.
    std::fs::write(run.join("plots-coefficients"), "in the way").unwrap();
    let before = listing(&run);
    let e = error_of(&["report", "--data", arg(&run), "--coefficients", arg(&k)]);
    assert!(e.contains("plots-coefficients: cannot create"), "{e}");
    assert_eq!(listing(&run), before);
    // Written: every file complete, no temporary file left anywhere.
    std::fs::remove_file(run.join("plots-coefficients")).unwrap();
    let out = hwwfc().args(["report", "--data", arg(&run), "--coefficients", arg(&k)]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(run.join("REPORT-coefficients.md")).unwrap();
    assert!(md.contains("| **mean** |"), "{md}");
    let plots = run.join("plots-coefficients");
    let files = listing(&plots);
    assert_eq!(files.len(), 32, "{files:?}");
    for f in files.iter().filter(|f| f.as_str() != "predictions.csv") {
        let svg = std::fs::read_to_string(plots.join(f)).unwrap();
        assert!(f.ends_with(".svg") && svg.trim_end().ends_with("</svg>"), "{f}");
    }
    // One line per measured configuration, under the header.
    let csv = std::fs::read_to_string(plots.join("predictions.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "workload,tile_m,tile_n,tile_k,warps_m,warps_n,stages,placement,split_k,pingpong,measured_us,predicted_us"
    );
    // As many as the report counts.
    let counted = format!("{} measured configurations", lines.len() - 1);
    assert!(lines.len() > 1000 && md.contains(&counted), "{counted}");
    assert!(lines[1..]
        .iter()
        .all(|l| l.split(',').count() == 12 && l.split(',').skip(10).all(|t| t.parse::<f64>().is_ok_and(|v| v > 0.0))));
    for d in [&run, &plots] {
        assert!(listing(d).iter().all(|f| !f.ends_with(".tmp")), "{:?}", listing(d));
    }
}
