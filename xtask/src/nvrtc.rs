//! The kernel step of `cargo xtask test`: the CUDA programs that the
//! profiler would build for the workloads of `kernels/compile-check.json`
//! on the `h200` spec (every configuration of both matmul families, a fused
//! epilogue, softmax and elementwise kernels) compiled by NVRTC for
//! `sm_90`, with `hwwfc profile --plan --compile`: a sample spread evenly
//! over them in `cargo xtask test`, all of them in `cargo xtask kernels`. No GPU or driver is
//! needed: NVRTC alone, taken from the CUDA toolkit where
//! `LD_LIBRARY_PATH` already finds it, else installed from PyPI (the
//! `nvidia-cuda-nvrtc` wheel) into `target/nvrtc`.

use super::{cargo, step, Step};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where the wheel is installed.
const PREFIX: &str = "target/nvrtc";

/// The folder of `libnvrtc.so.*` under `root`, if there is one.
fn lib_dir(root: &Path) -> Option<PathBuf> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if name.starts_with("libnvrtc.so.") {
                return Some(dir);
            }
        }
    }
    None
}

/// Installs the NVRTC wheel into [`PREFIX`] unless it is there; returns
/// the folder of the library, or why there is none.
fn ensure() -> Result<PathBuf, String> {
    let prefix = Path::new(PREFIX);
    if let Some(dir) = prefix.exists().then(|| lib_dir(prefix)).flatten() {
        return Ok(dir);
    }
    eprintln!("xtask: installing NVRTC (the nvidia-cuda-nvrtc wheel, about 60 MB) into {PREFIX}");
    let ok = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "--no-deps", "--target", PREFIX, "nvidia-cuda-nvrtc"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err("`python3 -m pip install --target target/nvrtc nvidia-cuda-nvrtc` failed".into());
    }
    lib_dir(prefix).ok_or_else(|| format!("no libnvrtc.so.* under {PREFIX} after installing"))
}

/// Kernels that `cargo xtask test` compiles, spread evenly over the
/// plan's 1,083 (about two minutes on two cores; all of them take ten).
pub const TEST_SAMPLE: &str = "240";

/// The step that compiles the kernels, all of them or `sample` spread over
/// the plan (failing at once, with the reason, where NVRTC could not be
/// installed).
pub fn test_step(sample: Option<&str>) -> Step {
    let name = match sample {
        Some(n) => format!("kernels compile with NVRTC (sm_90, {n} of them, no GPU)"),
        None => "kernels compile with NVRTC (sm_90, all of them, no GPU)".to_string(),
    };
    let mut s = step(
        &name,
        &cargo(),
        &[
            "run",
            "--quiet",
            "-p",
            "hwwfc",
            "--",
            "profile",
            "--plan",
            "--spec",
            "h200",
            "--workloads",
            "kernels/compile-check.json",
            "--out",
            "target/compile-check",
            "--compile",
            "sm_90",
        ],
    );
    if let Some(n) = sample {
        s.args.extend(["--compile-sample".to_string(), n.to_string()]);
    }
    with_nvrtc(s)
}

/// The step that compiles the kernels' opt-in variants, which the profiler
/// does not build (`host/examples/kernel_variants.rs`).
pub fn variants_step() -> Step {
    with_nvrtc(step(
        "kernel variants compile with NVRTC (sm_90a, no GPU)",
        &cargo(),
        &["run", "--quiet", "-p", "hwwfc", "--example", "kernel_variants"],
    ))
}

/// `s` with NVRTC on its `LD_LIBRARY_PATH`, or, where NVRTC could not be
/// installed, a step that fails at once with the reason.
fn with_nvrtc(mut s: Step) -> Step {
    match ensure() {
        Ok(dir) => {
            let path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
            let joined = if path.is_empty() { dir.display().to_string() } else { format!("{}:{path}", dir.display()) };
            s.env.push(("LD_LIBRARY_PATH", joined));
        }
        Err(e) => {
            eprintln!("xtask: {e}");
            s.program = "sh".into();
            s.args = vec!["-c".into(), format!("echo 'NVRTC is not available: {e}' >&2; exit 1")];
        }
    }
    s
}
