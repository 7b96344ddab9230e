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
