//! The measuring loop: check the run folder, open the device, plan what is
//! not yet measured, compile it, then for every workload measure its
//! family's configurations (or its anchor), writing every record as it is
//! made; the run's metadata before and after.

use super::compiled::{Compiled, Ptxs};
use super::context::Context;
use super::deal;
use super::estimate::Estimator;
use super::options::{GpuList, Options, Summary};
use super::plan;
use super::task::Task;
use crate::database::record::{Record, RecordLog, RecordSink, Source, Status};
use crate::database::{RunFolder, RECORDS_FILE};
use crate::family;
use crate::gpu::blas::Blas;
use crate::gpu::device::{device_limits, nvidia_smi};
use crate::gpu::support::SEED;
use crate::gpu::timer::Timer;
use crate::gpu::Gpu;
use crate::input::partition::{Partition, PartitionArgs};
use crate::input::workload_file::Workload;
use anyhow::{anyhow, bail, Result};
use std::sync::Mutex;
use std::time::Instant;

/// Runs the profile; returns what it did.
pub fn run(opts: &Options) -> Result<Summary> {
    let started = Instant::now();
    let folder = RunFolder::new(&opts.out);
    // What a resumed run would read is checked before the GPU is opened.
    folder.check()?;
    let ordinals = devices(opts)?;
    let gpu = Gpu::open_partition(ordinals[0], opts.partition.sms)?;
    one_model(&gpu, &ordinals)?;
    let whole = device_limits(&(opts.spec_for)(&gpu.info)?, &gpu.info);
    // The SMs the driver made, and the budget asked for.
    let made = PartitionArgs { sms: gpu.partition_sms, smem_kb: opts.partition.smem_kb };
    let (spec, partition) = made.apply(&whole)?;
    same_partition(&folder, partition)?;
    folder.create()?;
    let mut log = folder.writer()?;
    let mut summary = Summary { resumed: log.resumed, repaired_bytes: log.repaired_bytes, ..Summary::default() };
    if log.repaired_bytes > 0 {
        eprintln!("{RECORDS_FILE}: cut off a truncated last line ({} bytes); it is measured again", log.repaired_bytes);
    }
    let plan = plan::plan(opts, &spec, |k| log.contains(k));
    let total: usize = plan.iter().map(|(_, t)| t.len()).sum();
    if total == 0 {
        eprintln!("nothing to measure: all {} records are in {}", log.resumed, opts.out.display());
        return Ok(summary);
    }

    let mut meta = opts.run_meta(&gpu, &spec, SEED);
    meta.partition = partition;
    if ordinals.len() > 1 {
        meta.gpus = ordinals.clone();
    }
    let run_index = folder.begin_run(meta)?;
    if ordinals.len() > 1 {
        let arch = gpu.info.arch();
        drop(gpu);
        let measured = on_several_gpus(opts, &spec, &arch, &ordinals, &plan, &mut log, &mut summary);
        summary.seconds = started.elapsed().as_secs_f64();
        measured?;
        folder.finish_run(run_index, &summary, nvidia_smi(ordinals[0]))?;
        return Ok(summary);
    }
    let compile_start = Instant::now();
    let compiled = Compiled::build(&gpu, &plan::programs(&opts.workloads, &plan))?;
    summary.compile_seconds = compile_start.elapsed().as_secs_f64();
    let blas = Blas::new(&gpu)?;
    let timer = Timer::new(&gpu, opts.policy).map_err(|e| anyhow!("{e:?}"))?;
    let bar = progress_bar(total);

    let mut ctx = Context {
        gpu: &gpu,
        compiled: &compiled,
        blas: &blas,
        timer,
        opts,
        bar: &bar,
        log: &mut log,
        name_gpu: false,
        written: 0,
        failed: 0,
    };
    for (wi, tasks) in &plan {
        let w = &opts.workloads[*wi];
        bar.set_message(w.name().to_string());
        let started = Instant::now();
        let records = ctx.workload(w, tasks)?;
        let seconds = started.elapsed().as_secs_f64();
        if opts.verbose {
            bar.suspend(|| eprintln!("{}", workload_line(w, &records, seconds)));
        }
        summary.workload_seconds.push((w.name().to_string(), seconds));
    }
    summary.measured = ctx.written;
    summary.failed = ctx.failed;
    bar.finish_and_clear();
    summary.seconds = started.elapsed().as_secs_f64();
    folder.finish_run(run_index, &summary, nvidia_smi(ordinals[0]))?;
    Ok(summary)
}

/// Refuses to resume a run folder measured on another partition (or on
/// the whole GPU when a partition is asked for, or the other way round):
/// a folder holds one partition's records.
fn same_partition(folder: &RunFolder, partition: Option<Partition>) -> Result<()> {
    let describe = |p: Option<Partition>| p.map_or_else(|| "the whole GPU".to_string(), |p| p.to_string());
    for run in folder.meta()?.runs {
        if run.partition != partition {
            bail!(
                "{}: its run `{}` measured on {}, this one would measure on {}: use another folder",
                folder.path().display(),
                run.run,
                describe(run.partition),
                describe(partition)
            );
        }
    }
    Ok(())
}

/// Measures `plan` on the GPUs `ordinals` (of the model of `spec`, whose
/// architecture is `arch`), one worker each, every record through `log`;
/// fills in `summary` as far as it got.
fn on_several_gpus(
    opts: &Options,
    spec: &hwwfc_core::HardwareSpec,
    arch: &str,
    ordinals: &[usize],
    plan: &[(usize, Vec<Task>)],
    log: &mut RecordLog,
    summary: &mut Summary,
) -> Result<()> {
    let compile_start = Instant::now();
    let programs = plan::programs(&opts.workloads, plan);
    let ptx = Compiled::compile(arch, &programs);
    summary.compile_seconds = compile_start.elapsed().as_secs_f64();
    let total: usize = plan.iter().map(|(_, t)| t.len()).sum();
    let bar = progress_bar(total);
    let estimator = Estimator::new(spec, opts.policy);
    let work = plan
        .iter()
        .map(|(wi, tasks)| {
            let seconds = estimator.workload(&opts.workloads[*wi], tasks).iter().sum();
            (*wi, tasks.clone(), seconds)
        })
        .collect();
    let seconds = Mutex::new(Vec::new());
    let mut counted = Counted { log, written: 0, failed: 0 };
    let make = |i: usize| GpuWorker::open(ordinals[i], ptx.clone(), &programs, opts, &bar, &seconds);
    let dealt = deal::deal(work, ordinals.len(), make, &mut counted);
    summary.failed = counted.failed;
    summary.measured = counted.written;
    summary.workload_seconds = seconds.into_inner().unwrap_or_default();
    bar.finish_and_clear();
    dealt.map(|_| ())
}

/// The ordinals of the run's GPUs: `--gpus` (every one the driver reports
/// for `all`), else `--gpu`.
fn devices(opts: &Options) -> Result<Vec<usize>> {
    match &opts.gpus {
        None => Ok(vec![opts.gpu]),
        Some(GpuList::These(list)) if !list.is_empty() => Ok(list.clone()),
        Some(GpuList::These(_)) => Err(anyhow!("--gpus: no GPU named")),
        Some(GpuList::All) => {
            let first = Gpu::open(0)?;
            drop(first);
            let count = cudarc::driver::CudaContext::device_count().map_err(|e| anyhow!("{e:?}"))?;
            Ok((0..count.max(1) as usize).collect())
        }
    }
}

/// Refuses GPUs of different models in one run.
fn one_model(first: &Gpu, ordinals: &[usize]) -> Result<()> {
    for &o in &ordinals[1..] {
        let other = Gpu::open(o)?;
        if other.info.name != first.info.name || other.info.compute_capability != first.info.compute_capability {
            bail!(
                "GPU {o} is a {}, GPU {} a {}: the GPUs of one run must be of one model (run each model on its own)",
                other.info.name,
                ordinals[0],
                first.info.name
            );
        }
    }
    Ok(())
}

/// The progress bar of a run: one step per record, over every GPU.
fn progress_bar(total: usize) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} ETA {eta_precise} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// The records file, counting the records written to it and the failed.
struct Counted<'a> {
    log: &'a mut RecordLog,
    written: usize,
    failed: usize,
}

impl RecordSink for Counted<'_> {
    fn append(&mut self, rec: &Record) -> Result<()> {
        self.log.append(rec)?;
        self.written += 1;
        if rec.status == Status::Failed {
            self.failed += 1;
        }
        Ok(())
    }
}

/// One GPU of a run over several: its context, kernels and cuBLAS, made
/// in the thread that uses them.
struct GpuWorker<'a> {
    gpu: Gpu,
    compiled: Compiled,
    blas: Blas,
    opts: &'a Options,
    bar: &'a indicatif::ProgressBar,
    seconds: &'a Mutex<Vec<(String, f64)>>,
}

impl<'a> GpuWorker<'a> {
    fn open(
        ordinal: usize,
        ptx: Ptxs,
        programs: &[(crate::gpu::Program, &'static str)],
        opts: &'a Options,
        bar: &'a indicatif::ProgressBar,
        seconds: &'a Mutex<Vec<(String, f64)>>,
    ) -> Result<GpuWorker<'a>> {
        // Each worker in a green context of its own GPU, as the first.
        let gpu = Gpu::open_partition(ordinal, opts.partition.sms)?;
        let compiled = Compiled::load(&gpu, ptx, programs)?;
        let blas = Blas::new(&gpu)?;
        Ok(GpuWorker { gpu, compiled, blas, opts, bar, seconds })
    }
}

impl deal::Worker for GpuWorker<'_> {
    fn measure(&mut self, workload: usize, tasks: &[Task], sink: &mut dyn RecordSink) -> Result<()> {
        let timer = Timer::new(&self.gpu, self.opts.policy).map_err(|e| anyhow!("{e:?}"))?;
        let mut ctx = Context {
            gpu: &self.gpu,
            compiled: &self.compiled,
            blas: &self.blas,
            timer,
            opts: self.opts,
            bar: self.bar,
            log: sink,
            name_gpu: true,
            written: 0,
            failed: 0,
        };
        let w = &self.opts.workloads[workload];
        let started = Instant::now();
        let records = ctx.workload(w, tasks)?;
        let seconds = started.elapsed().as_secs_f64();
        if self.opts.verbose {
            let line = workload_line(w, &records, seconds);
            self.bar.suspend(|| eprintln!("{line}  GPU {}", self.gpu.info.ordinal));
        }
        if let Ok(mut s) = self.seconds.lock() {
            s.push((w.name().to_string(), seconds));
        }
        Ok(())
    }
}

impl Context<'_> {
    /// Measures the tasks of one workload: its families', each in its own
    /// workspace (the vendor's baseline with the first family that has
    /// one), or its anchor.
    fn workload(&mut self, w: &Workload, tasks: &[Task]) -> Result<Vec<Record>> {
        if let Some(op) = w.op() {
            let kind = op.kind();
            let baseline = family::for_kind(kind).find(|f| f.has_baseline()).map(|f| f.placement());
            let mut records = Vec::new();
            for f in family::for_kind(kind) {
                let mine: Vec<Task> = tasks
                    .iter()
                    .copied()
                    .filter(|t| match &t.config {
                        Some(c) => family::for_config(kind, c).placement() == f.placement(),
                        None => baseline == Some(f.placement()),
                    })
                    .collect();
                if !mine.is_empty() {
                    records.extend(self.family_workload(w, &op, f, &mine)?);
                }
            }
            return Ok(records);
        }
        let r = match w {
            Workload::Transpose { rows, cols, .. } => self.transpose(w, *rows, *cols)?,
            Workload::Copy { bytes, .. } => self.copy(w, *bytes)?,
            Workload::MatMul { .. } | Workload::Softmax { .. } | Workload::Elementwise { .. } => return Ok(Vec::new()),
        };
        self.emit(&r)?;
        Ok(vec![r])
    }
}

/// The log line of a measured workload: its records, failures, fastest
/// configuration and cuBLAS.
fn workload_line(w: &Workload, records: &[Record], seconds: f64) -> String {
    let best = records
        .iter()
        .filter(|r| r.source == Source::Kernel && r.status == Status::Ok)
        .filter_map(|r| r.timing.as_ref().map(|t| (t.median_us, r)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let failed = records.iter().filter(|r| r.status == Status::Failed).count();
    let cublas = records.iter().find(|r| r.source == Source::Cublas).and_then(|r| r.timing.as_ref());
    format!(
        "{:<28} {:>18} {:>4} records {:>3} failed  best {:>10}  cublas {:>10}  ({:.1} s)",
        w.name(),
        w.shape(),
        records.len(),
        failed,
        best.map_or("-".into(), |(t, r)| format!(
            "{t:.2} us{}",
            r.tflops.map_or(String::new(), |f| format!(" {f:.0}TF"))
        )),
        cublas.map_or("-".into(), |t| format!("{:.2} us", t.median_us)),
        seconds
    )
}
