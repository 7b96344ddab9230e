//! What a run will cost before it is made: each task's predicted seconds
//! on the device, from the cost model's time of the kernel and the timing
//! policy's runs, so that `profile --plan` can say how long a run takes and
//! `profile --shard` can deal the work out in equal parts.
//!
//! A kernel task runs once to be checked, once to pick its repeats, then
//! its warm-ups and its repeats ([`crate::gpu::timer::repeats`] of the
//! predicted time); each run also writes the L2 flush buffer and pays a
//! fixed launch-and-synchronize cost. The vendor's baseline is priced as
//! the best predicted configuration of its workload, the copy and the
//! transposes by their bytes at the spec's bandwidth. The estimate is the
//! device's time; compiling comes on top (one program per configuration,
//! in parallel over the host's cores).

use super::task::Task;
use crate::database::record::Source;
use crate::gpu::timer::repeats;
use crate::gpu::{TimingPolicy, FLUSH_BYTES};
use crate::input::coefficients_file;
use crate::input::workload_file::Workload;
use hwwfc_core::cost::{self, Coefficients};
use hwwfc_core::{HardwareSpec, Op};

/// The fixed cost of one timed run beside the kernel and the flush:
/// launching, recording events and synchronizing (about 20 us a run on
/// the H200, over the records of `calib-data/h200/run3`).
pub const RUN_OVERHEAD_US: f64 = 20.0;

/// The fixed cost of a workload: allocating and filling its buffers and
/// computing its reference.
pub const WORKLOAD_SETUP_S: f64 = 0.05;

/// Predicts task times on one spec under one timing policy.
pub struct Estimator<'a> {
    spec: &'a HardwareSpec,
    coefficients: Coefficients,
    policy: TimingPolicy,
}

impl<'a> Estimator<'a> {
    /// An estimator with the spec's built-in calibrated coefficients (the
    /// cost model's defaults where the spec has none).
    pub fn new(spec: &'a HardwareSpec, policy: TimingPolicy) -> Estimator<'a> {
        let coefficients = coefficients_file::calibrated_for(spec.name.as_str())
            .ok()
            .flatten()
            .map_or_else(Coefficients::default, |c| c.coefficients);
        Estimator { spec, coefficients, policy }
    }

    /// The predicted time of one launch of each task of `w`, microseconds:
    /// a configuration's from the cost model, the vendor's as the best of
    /// them, the copy's and the transpose's from their bytes.
    fn launches_us(&self, w: &Workload, tasks: &[Task]) -> Vec<f64> {
        let op: Option<Op> = w.op();
        let configured: Vec<Option<f64>> = tasks
            .iter()
            .map(|t| match (t.source, t.config, &op) {
                (Source::Kernel, Some(c), Some(op)) => {
                    Some(cost::unary_cost(self.spec, &self.coefficients, op, &c.state()) as f64)
                }
                _ => None,
            })
            .collect();
        let best = configured.iter().flatten().fold(f64::INFINITY, |a, &b| a.min(b)).min(1e9);
        let bw = self.spec.dram_bytes_per_us().max(1.0) as f64;
        tasks
            .iter()
            .zip(configured)
            .map(|(t, us)| match (us, t.source, w) {
                (Some(us), _, _) => us,
                (None, Source::Cublas, _) => best,
                (None, _, Workload::Copy { bytes, .. }) => 2.0 * *bytes as f64 / bw,
                // A transpose of 16-bit elements reads and writes each once.
                (None, _, Workload::Transpose { rows, cols, .. }) => 4.0 * *rows as f64 * *cols as f64 / bw,
                _ => 0.0,
            })
            .collect()
    }

    /// The device seconds of measuring a task whose launch takes `us`.
    pub fn task_seconds(&self, us: f64) -> f64 {
        let flush_us = FLUSH_BYTES as f64 / self.spec.dram_bytes_per_us().max(1.0) as f64;
        let runs = 2 + self.policy.warmup + repeats(&self.policy, us);
        runs as f64 * (us + flush_us + RUN_OVERHEAD_US) * 1e-6
    }

    /// The predicted seconds of every task of `w`, in order.
    pub fn workload(&self, w: &Workload, tasks: &[Task]) -> Vec<f64> {
        self.launches_us(w, tasks).into_iter().map(|us| self.task_seconds(us)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_runs_its_checks_warmups_and_repeats_each_with_a_flush() {
        let spec = hwwfc_core::presets::toy_gpu();
        let policy = TimingPolicy { warmup: 2, min_repeats: 5, max_repeats: 25, target_ms: 40.0 };
        let e = Estimator::new(&spec, policy);
        let flush_us = FLUSH_BYTES as f64 / spec.dram_bytes_per_us() as f64;
        // A 1 ms kernel: 40 repeats wanted, 25 allowed, plus 2 + 2 runs.
        let s = e.task_seconds(1000.0);
        assert!((s - 29.0 * (1000.0 + flush_us + RUN_OVERHEAD_US) * 1e-6).abs() < 1e-9, "{s}");
        // A 10 ms kernel: the 5 repeats of the minimum.
        let s = e.task_seconds(10_000.0);
        assert!((s - 9.0 * (10_000.0 + flush_us + RUN_OVERHEAD_US) * 1e-6).abs() < 1e-9, "{s}");
    }
}
