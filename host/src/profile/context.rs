//! The state of a run while it measures: the device, the compiled kernels,
//! cuBLAS, the timer, the records file and the counts, with the steps
//! every kind of workload shares (a record begun and finished, written at
//! once, a workload refused for memory).

use super::compiled::Compiled;
use super::faults;
use super::options::Options;
use crate::database::meta::now;
use crate::database::record::{Record, RecordSink, Source, Status};
use crate::family::{Config, Tools};
use crate::gpu::blas::Blas;
use crate::gpu::timer::Timer;
use crate::gpu::{Gpu, Timing};
use crate::input::workload_file::Workload;
use anyhow::Result;

/// A run in progress.
pub struct Context<'a> {
    /// The device.
    pub gpu: &'a Gpu,
    /// The run's kernels.
    pub compiled: &'a Compiled,
    /// cuBLAS on the run's stream.
    pub blas: &'a Blas,
    /// The stopwatch, with the run's timing policy.
    pub timer: Timer<'a>,
    /// What the run was asked.
    pub opts: &'a Options,
    /// The progress bar (one step per record).
    pub bar: &'a indicatif::ProgressBar,
    /// Every record is appended here the moment it is made.
    pub log: &'a mut dyn RecordSink,
    /// Whether records name the GPU (a run over several).
    pub name_gpu: bool,
    /// Records written so far.
    pub written: usize,
    /// Of which failed.
    pub failed: usize,
}

impl<'a> Context<'a> {
    /// What a family's workspace is built with.
    pub fn tools(&self) -> Tools<'a> {
        Tools { gpu: self.gpu, support: &self.compiled.support, blas: self.blas }
    }

    /// Appends `rec` to the records file at once (flushed to disk), so a
    /// run killed later loses nothing it measured.
    pub fn emit(&mut self, rec: &Record) -> Result<()> {
        self.log.append(rec)?;
        self.written += 1;
        if rec.status == Status::Failed {
            self.failed += 1;
        }
        Ok(())
    }

    /// A record of `config` of `w` begun now, not yet successful.
    pub fn base_record(&self, w: &Workload, source: Source, config: Option<Config>) -> Record {
        let mut r = Record::pending(source, w.clone(), config, self.opts.run_label.clone(), now());
        r.gpu = self.name_gpu.then_some(self.gpu.info.ordinal);
        r
    }

    /// `rec` completed with its timing and the rates it reached.
    pub fn finish_ok(&self, w: &Workload, mut rec: Record, timing: Timing) -> Record {
        let secs = timing.median_us * 1e-6;
        if w.flops() > 0.0 {
            rec.tflops = Some(w.flops() / secs / 1e12);
        }
        rec.gbps = Some(w.min_bytes() / secs / 1e9);
        rec.status = Status::Ok;
        rec.timing = Some(timing);
        rec.measured_at = now();
        rec
    }

    /// How many input sets of `set_bytes` together exceed three L2s, so
    /// that rotating them leaves no run its inputs in the L2 (2 to 8).
    pub fn input_sets(&self, set_bytes: usize) -> usize {
        let l2 = self.gpu.info.l2_bytes as usize;
        (3 * l2).div_ceil(set_bytes.max(1)).clamp(2, 8)
    }

    /// Refuses a workload that cannot fit, naming the sizes.
    pub fn check_memory(&self, w: &Workload, need: usize) -> Result<(), String> {
        let (free, _) = self.gpu.ctx.mem_get_info().map_err(|e| format!("{e:?}"))?;
        faults::memory_verdict(w.name(), need as u64, free as u64)
    }

    /// Every task of `w` recorded as failed for `reason`.
    pub fn all_failed(&mut self, w: &Workload, tasks: &[super::task::Task], reason: &str) -> Result<Vec<Record>> {
        self.bar.inc(tasks.len() as u64);
        let mut out = Vec::new();
        for t in tasks {
            let mut r = self.base_record(w, t.source, t.config);
            r.reason = Some(reason.to_string());
            self.emit(&r)?;
            out.push(r);
        }
        Ok(out)
    }

    /// Counts, writes and keeps a finished record; ends the run when the
    /// GPU context is lost.
    pub fn finish_task(&mut self, rec: Record, records: &mut Vec<Record>) -> Result<()> {
        self.bar.inc(1);
        self.emit(&rec)?;
        // A failure the context survives is recorded and the run goes on.
        faults::after(&rec)?;
        records.push(rec);
        Ok(())
    }
}
