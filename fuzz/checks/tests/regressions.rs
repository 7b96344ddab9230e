//! The fuzz targets' regression inputs, replayed on stable Rust: every file
//! of `fuzz/corpus/TARGET/` (what the fuzzer kept) and of
//! `fuzz/artifacts/TARGET/` (inputs that once failed, kept after the fix)
//! goes through the same check as the target (`src/core_checks/`,
//! `src/host_checks.rs`). This test profile checks overflow, as the fuzz
//! builds do.

use hwwfc_fuzz_checks::{core_checks as checks, host_checks};

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files of `dir`, sorted (none if it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(d) => d.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

/// Runs `check` on every regression input of `target`; fails naming every
/// input that fails (each one's panic message is printed above).
fn replay(target: &str, check: fn(&[u8])) {
    let corpus = files(&fuzz_dir().join("corpus").join(target));
    assert!(!corpus.is_empty(), "fuzz/corpus/{target}/ is empty: run `cargo xtask fuzz {target}` and commit it");
    let inputs: Vec<PathBuf> = corpus.into_iter().chain(files(&fuzz_dir().join("artifacts").join(target))).collect();
    let failed: Vec<String> = inputs
        .iter()
        .filter(|path| {
            let data = std::fs::read(path).unwrap();
            std::panic::catch_unwind(|| check(&data)).is_err()
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(failed.is_empty(), "{} of {} inputs of {target} fail: {failed:?}", failed.len(), inputs.len());
}

#[test]
fn wire_decode() {
    replay("wire_decode", checks::wire_decode);
}

#[test]
fn solvers() {
    replay("solvers", checks::solvers);
}

#[test]
fn schedule_pipeline() {
    replay("schedule_pipeline", checks::schedule_pipeline);
}

#[test]
fn host_inputs() {
    replay("host_inputs", host_checks::host_inputs);
}
