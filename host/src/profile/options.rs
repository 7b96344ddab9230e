//! What a profiling run is asked to do ([`Options`], built by
//! [`Options::new`] and adjusted field by field) and what it did
//! ([`Summary`]).

use super::shard::Shard;
use crate::database::meta::{self, RunMeta};
use crate::family::Config;
use crate::gpu::{DeviceInfo, Gpu, TimingPolicy, FLUSH_BYTES};
use crate::input::workload_file::Workload;
use anyhow::Result;
use hwwfc_core::{HardwareSpec, Op};
use std::path::PathBuf;

/// Narrows the configurations measured for a workload (all by default):
/// given the spec with the device's limits, the workload's operator and
/// every configuration the core allows, the ones to measure, in the order
/// to measure them.
pub type Select = Box<dyn Fn(&HardwareSpec, &Op, Vec<Config>) -> Vec<Config> + Send + Sync>;

/// Picks the spec of a device.
pub type SpecFor = Box<dyn Fn(&DeviceInfo) -> Result<HardwareSpec> + Send + Sync>;

/// The GPUs of a run over several (`--gpus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuList {
    /// These ordinals.
    These(Vec<usize>),
    /// Every GPU the driver reports.
    All,
}

impl std::str::FromStr for GpuList {
    type Err = String;

    fn from_str(s: &str) -> Result<GpuList, String> {
        if s.trim() == "all" {
            return Ok(GpuList::All);
        }
        let mut list = Vec::new();
        for part in s.split(',') {
            let n: usize = part
                .trim()
                .parse()
                .map_err(|_| format!("`{s}` is not a list of GPUs: ordinals such as 0,1,2, or all"))?;
            if list.contains(&n) {
                return Err(format!("`{s}` names GPU {n} twice"));
            }
            list.push(n);
        }
        Ok(GpuList::These(list))
    }
}

/// What to profile and where.
pub struct Options {
    /// CUDA device ordinal.
    pub gpu: usize,
    /// The workloads.
    pub workloads: Vec<Workload>,
    /// The run folder (records and metadata).
    pub out: PathBuf,
    /// Picks the spec whose rates describe the device (its limits are
    /// replaced by the device's own).
    pub spec_for: SpecFor,
    /// Label written into every record.
    pub run_label: String,
    /// Warm-up and repeats.
    pub policy: TimingPolicy,
    /// The project's commit the binary was built from.
    pub commit: String,
    /// Print a line per workload (for logs) besides the progress bar.
    pub verbose: bool,
    /// Which configurations to measure (`None`: all).
    pub select: Option<Select>,
    /// The kernel families `select` keeps, by name, for the run's metadata
    /// (empty: every family).
    pub kernels: Vec<String>,
    /// The part of the work this process measures (`None`: all of it).
    pub shard: Option<Shard>,
    /// The GPUs that measure, one worker each (`None`: `gpu` alone).
    pub gpus: Option<GpuList>,
    /// The partition of the GPU to measure on (none: the whole GPU).
    pub partition: crate::input::partition::PartitionArgs,
    /// Also time the vendor's library (cuBLAS) on every workload of a
    /// family that has it as a baseline.
    pub cublas: bool,
    /// Check every configuration of a workload first, then time them all
    /// side by side, repeat by repeat, and write the workload's records
    /// after the last; otherwise each is timed right after its check and
    /// written at once.
    pub interleave: bool,
}

impl Options {
    /// Every configuration of `workloads` on GPU `gpu` into `out`, under
    /// the spec `spec_for` picks, labelled `run_label`: the default timing
    /// policy, this binary's commit, quiet, no baseline, one configuration
    /// after another.
    pub fn new(gpu: usize, workloads: Vec<Workload>, out: PathBuf, spec_for: SpecFor, run_label: String) -> Options {
        Options {
            gpu,
            workloads,
            out,
            spec_for,
            run_label,
            policy: TimingPolicy::default(),
            commit: env!("HWWFC_COMMIT").to_string(),
            verbose: false,
            select: None,
            kernels: Vec::new(),
            shard: None,
            gpus: None,
            partition: crate::input::partition::PartitionArgs::default(),
            cublas: false,
            interleave: false,
        }
    }

    /// The metadata entry of a run of these options starting on `gpu`
    /// with `spec`.
    pub fn run_meta(&self, gpu: &Gpu, spec: &HardwareSpec, seed: u32) -> RunMeta {
        RunMeta {
            run: self.run_label.clone(),
            started_at: meta::now(),
            finished_at: None,
            device: gpu.info.clone(),
            nvidia_smi_start: crate::gpu::device::nvidia_smi(self.gpu),
            nvidia_smi_end: None,
            commit: self.commit.clone(),
            hwwfc_version: env!("CARGO_PKG_VERSION").to_string(),
            spec: spec.name.to_string(),
            timing_policy: serde_json::json!({
                "warmup": self.policy.warmup,
                "min_repeats": self.policy.min_repeats,
                "max_repeats": self.policy.max_repeats,
                "target_ms": self.policy.target_ms,
                "statistic": "median of CUDA-event times; L2 flushed before every run; input sets rotated",
                "interleaved": self.interleave,
            }),
            flush_bytes: FLUSH_BYTES,
            seed,
            kernels: self.kernels.clone(),
            shard: self.shard.map(|s| s.to_string()),
            gpus: Vec::new(),
            partition: None,
            summary: None,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    /// Records written by this run.
    pub measured: usize,
    /// Of which failed.
    pub failed: usize,
    /// Measurements found in the records file and not repeated.
    pub resumed: usize,
    /// Bytes of a truncated last line that were cut off and re-measured.
    pub repaired_bytes: usize,
    /// Wall time, seconds.
    pub seconds: f64,
    /// Seconds spent compiling the kernels (NVRTC, in parallel).
    pub compile_seconds: f64,
    /// Seconds spent measuring each workload (checks and timing), by name.
    pub workload_seconds: Vec<(String, f64)>,
}
