//! Measuring one workload of a kernel family: its workspace (random input
//! sets, the output, the reference) once, then every planned
//! configuration checked on a poisoned output and timed, alone right after
//! its check or, with [`Options::interleave`](super::Options), all of them
//! side by side after every check; and the vendor's baseline where
//! planned. Nothing here names a family: it is reached through
//! [`KernelFamily`] and [`Workspace`].

use super::context::Context;
use super::faults;
use super::task::Task;
use crate::database::record::{Record, Source};
use crate::family::{Config, Inputs, KernelFamily, Workspace};
use crate::gpu::support::SEED;
use crate::input::workload_file::Workload;
use anyhow::{anyhow, bail, Result};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, DriverError, LaunchConfig};
use hwwfc_core::Op;

/// A configuration that passed its check, ready to be timed.
struct Ready {
    rec: Record,
    c: Config,
    f: CudaFunction,
    cfg: LaunchConfig,
}

/// What checking a configuration gave.
enum Checked {
    /// Passed: time it.
    Ready(Ready),
    /// Failed (compilation, launch or check): its record.
    Failed(Record),
}

/// The reason of a failed record for a driver error at `stage`: its name
/// and the driver's message (see [`faults::driver_failure`]).
pub fn launch_failure(stage: &str, e: &DriverError) -> String {
    faults::driver_failure(stage, e.0, e.error_string().ok().and_then(|s| s.to_str().ok()))
}

fn drv(e: DriverError) -> anyhow::Error {
    anyhow!("{e:?}")
}

impl Context<'_> {
    /// Measures the `tasks` of workload `w`, whose operator `op` `family`
    /// computes; returns the records written.
    pub fn family_workload(
        &mut self,
        w: &Workload,
        op: &Op,
        family: &dyn KernelFamily,
        tasks: &[Task],
    ) -> Result<Vec<Record>> {
        let set_bytes = family.input_set_bytes(op);
        let sets = self.input_sets(set_bytes);
        if let Err(reason) = self.check_memory(w, set_bytes * sets + family.output_bytes(op)) {
            return self.all_failed(w, tasks, &reason);
        }
        let epilogue = if op.kind() == hwwfc_core::OpKind::MatMul { w.elementwise() } else { None };
        let mut ws = family.workspace(
            self.tools(),
            op,
            Inputs { sets, seed: SEED, reference: true, epilogue, b_layout: w.b_layout() },
        )?;
        let mut records = Vec::new();
        let mut ready = Vec::new();
        for t in tasks {
            let rec = match (t.source, t.config) {
                (Source::Cublas, _) => self.time_baseline(w, ws.as_mut())?,
                (_, Some(c)) => match self.check(w, op, family, c, ws.as_mut())? {
                    Checked::Failed(rec) => rec,
                    Checked::Ready(r) if self.opts.interleave => {
                        ready.push(r);
                        continue;
                    }
                    Checked::Ready(r) => {
                        let mut timed = self.time_ready(w, vec![r], ws.as_mut())?;
                        timed.pop().ok_or_else(|| anyhow!("no record timed"))?
                    }
                },
                (_, None) => continue,
            };
            self.finish_task(rec, &mut records)?;
        }
        if !ready.is_empty() {
            for rec in self.time_ready(w, ready, ws.as_mut())? {
                self.finish_task(rec, &mut records)?;
            }
        }
        Ok(records)
    }

    /// Checks configuration `c`: compiled, launched once on the first input
    /// set into a poisoned output, and compared with the reference.
    fn check(
        &mut self,
        w: &Workload,
        op: &Op,
        family: &dyn KernelFamily,
        c: Config,
        ws: &mut dyn Workspace,
    ) -> Result<Checked> {
        let mut rec = self.base_record(w, Source::Kernel, Some(c));
        let f = match self.compiled.function(&family.program(&c)) {
            Some(Ok(f)) => f,
            Some(Err(log)) => return Ok(Checked::Failed(faults::failed(rec, faults::compile_failure(log)))),
            None => bail!("kernel {} was not compiled", family.label(&c)),
        };
        let cfg = family.launch(op, &c, self.gpu.launch_sms());
        let smem = cfg.shared_mem_bytes;
        rec.smem_bytes = Some(smem);
        rec.registers = f.num_regs().ok();
        rec.local_bytes = f.local_size_bytes().ok();
        if smem > 0 {
            if let Err(e) =
                f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
            {
                rec.reason = Some(format!("cannot set {smem} bytes of shared memory: {e:?}"));
                return Ok(Checked::Failed(rec));
            }
        }
        let stream = self.gpu.stream.clone();
        // The check: poisoned output, one run on the first set.
        let checked = (|| -> Result<Result<f64, String>, DriverError> {
            ws.poison()?;
            ws.launch(&f, &c, cfg, 0)?;
            stream.synchronize()?;
            ws.check()
        })();
        match checked {
            Err(e) => rec.reason = Some(launch_failure("launch", &e)),
            Ok(Err(why)) => rec.reason = Some(why),
            Ok(Ok(err)) => {
                rec.error = Some(err);
                return Ok(Checked::Ready(Ready { rec, c, f, cfg }));
            }
        }
        Ok(Checked::Failed(rec))
    }

    /// Times checked configurations: each alone (a first run picks its
    /// repeats), then all of them together, side by side.
    fn time_ready(&mut self, w: &Workload, ready: Vec<Ready>, ws: &mut dyn Workspace) -> Result<Vec<Record>> {
        let mut firsts = Vec::with_capacity(ready.len());
        let timer = &mut self.timer;
        let timed = (|| {
            for r in &ready {
                firsts.push(timer.once(|i| ws.launch(&r.f, &r.c, r.cfg, i))?);
            }
            timer.time_side_by_side(&firsts, |j, i| ws.launch(&ready[j].f, &ready[j].c, ready[j].cfg, i))
        })();
        Ok(match timed {
            Ok(t) => ready.into_iter().zip(t).map(|(r, t)| self.finish_ok(w, r.rec, t)).collect(),
            Err(e) => ready
                .into_iter()
                .map(|mut r| {
                    r.rec.reason = Some(launch_failure("timed launch", &e));
                    r.rec
                })
                .collect(),
        })
    }

    /// Times the vendor's library on the workload (its record's source is
    /// [`Source::Cublas`]).
    fn time_baseline(&mut self, w: &Workload, ws: &mut dyn Workspace) -> Result<Record> {
        let rec = self.base_record(w, Source::Cublas, None);
        let mut launch = |i: usize| -> Result<(), DriverError> {
            ws.run_baseline(i).unwrap_or(Err(DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_SUPPORTED)))
        };
        let first = self.timer.once(&mut launch).map_err(drv)?;
        let timing = self.timer.time(first, &mut launch).map_err(drv)?;
        Ok(self.finish_ok(w, rec, timing))
    }
}
