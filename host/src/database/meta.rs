//! `meta.json`: one entry per invocation of the profiler on a folder: the
//! device, driver, CUDA and NVRTC versions, clocks, the commit, the timing
//! policy, and when it started and finished.

use crate::gpu::DeviceInfo;
use anyhow::{Context, Result};
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
    /// The kernel families measured where the run was limited to some
    /// (`profile --kernels`); absent where it measured all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<String>,
    /// The shard of the work this run measured (`I/N`, `profile --shard`);
    /// absent where it measured all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The GPUs that measured, where the run used several (`profile
    /// --gpus`); `device` is the first of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<usize>,
    /// The partition of the GPU the run measured on (`profile --sms`,
    /// `--smem-kb`), the SMs as the driver made them; absent for the
    /// whole GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<crate::input::partition::Partition>,
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

/// The current UTC time, RFC 3339, to the second.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Appends the entry of a starting run; returns its index.
pub fn begin(path: &Path, run: RunMeta) -> Result<usize> {
    let mut meta = read(path)?;
    meta.runs.push(run);
    write(path, &meta)?;
    Ok(meta.runs.len() - 1)
}

/// Completes the entry `index` with what the run did and the readings at
/// its end.
pub fn finish(path: &Path, index: usize, summary: &impl Serialize, smi: Option<serde_json::Value>) -> Result<()> {
    let mut meta = read(path)?;
    if let Some(run) = meta.runs.get_mut(index) {
        run.finished_at = Some(now());
        run.nvidia_smi_end = smi;
        run.summary = Some(serde_json::to_value(summary)?);
    }
    write(path, &meta)
}
