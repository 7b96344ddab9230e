//! The host fuzz target's regression inputs, replayed on stable Rust: every
//! file of `fuzz/corpus/host_inputs/` and `fuzz/artifacts/host_inputs/`
//! goes through the target's check (`fuzz/src/host_checks.rs`), which runs
//! the host's own parsing modules on it.

#[allow(dead_code)]
#[path = "../../fuzz/src/host_checks.rs"]
mod checks;

use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(d) => d.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

#[test]
fn host_inputs() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let corpus = files(&fuzz.join("corpus/host_inputs"));
    assert!(!corpus.is_empty(), "fuzz/corpus/host_inputs/ is empty: run `cargo xtask fuzz host_inputs`");
    let inputs: Vec<PathBuf> = corpus.into_iter().chain(files(&fuzz.join("artifacts/host_inputs"))).collect();
    let failed: Vec<String> = inputs
        .iter()
        .filter(|path| {
            let data = std::fs::read(path).unwrap();
            std::panic::catch_unwind(|| checks::host_inputs(&data)).is_err()
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(failed.is_empty(), "{} of {} inputs fail: {failed:?}", failed.len(), inputs.len());
}
