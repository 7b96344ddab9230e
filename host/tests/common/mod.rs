//! Helpers shared by the command-line tests.
#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The `hwwfc` binary under test.
pub fn hwwfc() -> Command {
    assert_cmd::cargo::cargo_bin_cmd!("hwwfc")
}

/// The repository's `specs/` folder.
pub fn specs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs")
}

/// A spec file of the repository, parsed.
pub fn spec_json(name: &str) -> Value {
    let text = std::fs::read_to_string(specs_dir().join(format!("{name}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Writes `value` as `name` in `dir`; returns the path.
pub fn write_json(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}

/// Runs `hwwfc schedule ARGS`, expects failure, and returns stderr after
/// checking it is one line starting with `error:` and no panic.
pub fn schedule_error(args: &[&str]) -> String {
    let out = hwwfc().arg("schedule").args(args).output().unwrap();
    assert!(!out.status.success(), "expected failure for {args:?}");
    assert_eq!(out.status.code(), Some(1), "exit status for {args:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("error: "), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert!(out.stdout.is_empty(), "stdout should be empty on error");
    stderr.trim_end().to_string()
}

/// Runs `hwwfc schedule --json ARGS` and parses the output.
pub fn schedule_json(args: &[&str]) -> Value {
    let out = hwwfc().arg("schedule").arg("--json").args(args).output().unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A record's key as its JSON line names it: source, workload, configuration index.
pub type LineKey = (String, String, u64);

/// The committed run that measured every configuration the current tables
/// offer on a Hopper GPU (both matmul families, split-K and ping-pong
/// included), relative to the repository's root.
pub const HOPPER_RUN: &str = "calib-data/h100/run1";

/// The built-in spec of the GPU that measured [`HOPPER_RUN`].
pub const HOPPER_RUN_SPEC: &str = "h100";

/// The record lines of [`HOPPER_RUN`].
pub fn hopper_run_lines() -> Vec<String> {
    use std::io::BufRead;
    let gz = std::fs::File::open(repo().join(HOPPER_RUN).join("records.jsonl.gz")).unwrap();
    std::io::BufReader::new(flate2::read::GzDecoder::new(gz)).lines().map(|l| l.unwrap()).collect()
}

/// The one run of [`HOPPER_RUN`]'s metadata.
pub fn hopper_run_meta() -> Value {
    let text = std::fs::read_to_string(repo().join(HOPPER_RUN).join("meta.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["runs"][0].clone()
}

/// The key of a record line.
pub fn line_key(line: &str) -> LineKey {
    let r: Value = serde_json::from_str(line).unwrap();
    let config = r["config"]["index"].as_u64().unwrap_or(0);
    (r["source"].as_str().unwrap().to_string(), r["workload"]["name"].as_str().unwrap().to_string(), config)
}

/// Writes the workloads of `lines` (in the corpus file's order) as
/// `workloads.json` in `dir`; returns its path.
pub fn workloads_of(lines: &[String], dir: &Path) -> PathBuf {
    let names: std::collections::HashSet<String> = lines.iter().map(|l| line_key(l).1).collect();
    let text = std::fs::read_to_string(repo().join("calib-data/workloads.json")).unwrap();
    let all: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mine: Vec<&Value> = all.iter().filter(|w| names.contains(w["name"].as_str().unwrap())).collect();
    assert_eq!(mine.len(), names.len());
    let path = dir.join("workloads.json");
    std::fs::write(&path, serde_json::to_string(&mine).unwrap()).unwrap();
    path
}

/// The keys a `profile --plan --json` report lists as missing.
pub fn plan_keys(plan: &Value) -> std::collections::HashSet<LineKey> {
    plan["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| {
            let name = w["name"].as_str().unwrap().to_string();
            w["missing_keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |k| (k[0].as_str().unwrap().to_string(), name.clone(), k[1].as_u64().unwrap()))
        })
        .collect()
}
