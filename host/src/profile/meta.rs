//! `meta.json`: one entry per invocation of the profiler on a folder: the
//! device, driver, CUDA and NVRTC versions, clocks, the commit, the timing
//! policy, and when it started and finished.

use super::runner::{Options, Summary};
use crate::gpu::device::nvidia_smi;
use crate::gpu::{DeviceInfo, Gpu};
use anyhow::{Context, Result};
use hwwfc_core::HardwareSpec;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One invocation of the profiler.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunMeta {
    /// The run's label.
    pub run: String,
    /// UTC start time.
    pub started_at: String,
    /// UTC end time, once finished.
    pub finished_at: Option<String>,
    /// The device as the driver reports it.
    pub device: DeviceInfo,
    /// `nvidia-smi` readings (driver version, clocks, temperature) at the
    /// start and at the end, where available.
    pub nvidia_smi_start: Option<serde_json::Value>,
    /// See `nvidia_smi_start`.
    pub nvidia_smi_end: Option<serde_json::Value>,
    /// The project's commit the binary was built from.
    pub commit: String,
    /// The version of `hwwfc`.
    pub hwwfc_version: String,
    /// Spec name whose rates were used; its limits are the device's.
    pub spec: String,
    /// Warm-up and repeats.
    pub timing_policy: serde_json::Value,
    /// Bytes written between timed runs to flush the L2.
    pub flush_bytes: usize,
    /// Random seed of the inputs.
    pub seed: u32,
    /// What the run did, once finished.
    pub summary: Option<serde_json::Value>,
}

/// The whole file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MetaFile {
    /// Every invocation, oldest first.
    pub runs: Vec<RunMeta>,
}

/// Reads `path` (an empty file list if it does not exist).
pub fn read(path: &Path) -> Result<MetaFile> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| format!("{}: malformed", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(MetaFile::default()),
        Err(e) => Err(e).with_context(|| format!("{}: cannot read", path.display())),
    }
}

fn write(path: &Path, meta: &MetaFile) -> Result<()> {
    crate::atomic_write::write(path, serde_json::to_string_pretty(meta)?.as_bytes())
}

/// Appends an entry for a starting run; returns its index.
pub fn begin(path: &Path, opts: &Options, gpu: &Gpu, spec: &HardwareSpec) -> Result<usize> {
    let mut meta = read(path)?;
    meta.runs.push(RunMeta {
        run: opts.run_label.clone(),
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        finished_at: None,
        device: gpu.info.clone(),
        nvidia_smi_start: nvidia_smi(opts.gpu),
        nvidia_smi_end: None,
        commit: opts.commit.clone(),
        hwwfc_version: env!("CARGO_PKG_VERSION").to_string(),
        spec: spec.name.to_string(),
        timing_policy: serde_json::json!({
            "warmup": opts.policy.warmup,
            "min_repeats": opts.policy.min_repeats,
            "max_repeats": opts.policy.max_repeats,
            "target_ms": opts.policy.target_ms,
            "statistic": "median of CUDA-event times; L2 flushed before every run; input sets rotated",
            "interleaved": opts.interleave,
        }),
        flush_bytes: super::runner::FLUSH_BYTES,
        seed: super::runner::SEED,
        summary: None,
    });
    write(path, &meta)?;
    Ok(meta.runs.len() - 1)
}

/// Completes the entry `index`.
pub fn finish(path: &Path, index: usize, summary: &Summary, smi: Option<serde_json::Value>) -> Result<()> {
    let mut meta = read(path)?;
    if let Some(run) = meta.runs.get_mut(index) {
        run.finished_at = Some(humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
        run.nvidia_smi_end = smi;
        run.summary = Some(serde_json::to_value(summary)?);
    }
    write(path, &meta)
}
