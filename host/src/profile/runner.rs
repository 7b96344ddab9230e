//! The measuring loop: for every workload, allocate random inputs (several
//! sets, rotated), compute a reference, then for every configuration not
//! yet in the records file: poison the output, run once, check against the
//! reference, and only then time it (warm-up, repeats with the L2 flushed
//! before each); append the record at once. With [`Options::interleave`],
//! a workload's configurations are all checked first and then timed side
//! by side, taking turns repeat by repeat, and written after the last.

use super::config::{self, Config};
use super::faults;
use super::record::{Key, Record, RecordLog, Source, Status};
use super::workload::Workload;
use crate::gpu::device::nvidia_smi;
use crate::gpu::{timer, Gpu, KernelSource, Program, Timing, TimingPolicy};
use anyhow::{anyhow, bail, Context, Result};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, DriverError, LaunchConfig, PushKernelArg};
use hwwfc_core::{HardwareSpec, OpKind};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Largest relative error of a matmul against cuBLAS that passes.
pub const MATMUL_TOLERANCE: f64 = 1e-2;
/// Largest absolute difference of a softmax against the fp64 reference
/// that passes.
pub const SOFTMAX_TOLERANCE: f64 = 1e-5;
/// Seed of every random input.
pub const SEED: u32 = 20260321;
/// Bytes written between timed runs to evict the L2.
pub const FLUSH_BYTES: usize = 256 << 20;

/// Narrows the configurations measured for a workload (all by default):
/// given the spec with the device's limits, the workload's operator and
/// every configuration the core allows, the ones to measure.
pub type Select = Box<dyn Fn(&HardwareSpec, &hwwfc_core::Op, Vec<Config>) -> Vec<Config>>;

/// Picks the spec of a device.
pub type SpecFor = Box<dyn Fn(&crate::gpu::DeviceInfo) -> Result<HardwareSpec>>;

/// What to profile and where.
pub struct Options {
    /// CUDA device ordinal.
    pub gpu: usize,
    /// The workloads.
    pub workloads: Vec<Workload>,
    /// Output folder (records.jsonl and meta.json).
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
    /// Also time cuBLAS on every matmul workload.
    pub cublas: bool,
    /// Check every configuration of a workload first, then time them all
    /// side by side, repeat by repeat ([`timer::time_interleaved`]), and
    /// write the workload's records after the last; otherwise each is
    /// timed right after its check and written at once.
    pub interleave: bool,
}

/// A configuration that passed its check, ready to be timed.
struct Ready {
    rec: Record,
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

/// A unit of work: one record to make.
struct Task {
    source: Source,
    config: Option<Config>,
}

struct Kernels {
    support: Arc<cudarc::driver::CudaModule>,
    transpose: CudaFunction,
    by_program: HashMap<Program, Result<CudaFunction, String>>,
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

fn drv(e: DriverError) -> anyhow::Error {
    anyhow!("{e:?}")
}

/// The reason of a failed record for a driver error at `stage`: its name
/// and the driver's message (see [`faults::driver_failure`]).
fn launch_failure(stage: &str, e: &DriverError) -> String {
    faults::driver_failure(stage, e.0, e.error_string().ok().and_then(|s| s.to_str().ok()))
}

/// Runs the profile; returns what it did.
pub fn run(opts: &Options) -> Result<Summary> {
    let started = Instant::now();
    // What a resumed run would read is checked before the GPU is opened.
    super::record::check_output(&opts.out)?;
    let gpu = Gpu::open(opts.gpu)?;
    let spec = config::device_limits(&(opts.spec_for)(&gpu.info)?, &gpu.info);
    std::fs::create_dir_all(&opts.out).with_context(|| format!("{}: cannot create", opts.out.display()))?;
    let mut log = RecordLog::open(&opts.out.join("records.jsonl"))?;
    let mut summary = Summary { resumed: log.resumed, repaired_bytes: log.repaired_bytes, ..Summary::default() };
    if log.repaired_bytes > 0 {
        eprintln!("records.jsonl: cut off a truncated last line ({} bytes); it is measured again", log.repaired_bytes);
    }

    // The plan: every record not yet in the file.
    let mut plan: Vec<(usize, Vec<Task>)> = Vec::new();
    for (wi, w) in opts.workloads.iter().enumerate() {
        let mut tasks = Vec::new();
        let key = |source, config: Option<Config>| Key {
            source,
            workload: w.name().to_string(),
            config: config.map_or(0, |c| c.index),
        };
        match w.op() {
            Some(op) => {
                let all = config::configs(&spec, &op);
                let chosen = match &opts.select {
                    Some(select) => select(&spec, &op, all),
                    None => all,
                };
                for c in chosen {
                    if !log.contains(&key(Source::Kernel, Some(c))) {
                        tasks.push(Task { source: Source::Kernel, config: Some(c) });
                    }
                }
                if opts.cublas && op.kind() == OpKind::MatMul && !log.contains(&key(Source::Cublas, None)) {
                    tasks.push(Task { source: Source::Cublas, config: None });
                }
            }
            None => {
                let source = if matches!(w, Workload::Copy { .. }) { Source::Copy } else { Source::Kernel };
                if !log.contains(&key(source, None)) {
                    tasks.push(Task { source, config: None });
                }
            }
        }
        if !tasks.is_empty() {
            plan.push((wi, tasks));
        }
    }
    let total: usize = plan.iter().map(|(_, t)| t.len()).sum();
    if total == 0 {
        eprintln!("nothing to measure: all {} records are in {}", log.resumed, opts.out.display());
        return Ok(summary);
    }

    let meta_path = opts.out.join("meta.json");
    let run_index = super::meta::begin(&meta_path, opts, &gpu, &spec)?;
    let compile_start = Instant::now();
    let kernels = compile_all(&gpu, &opts.workloads, &plan)?;
    summary.compile_seconds = compile_start.elapsed().as_secs_f64();
    let blas = CudaBlas::new(gpu.stream.clone()).map_err(|e| anyhow!("cuBLAS: {e:?}"))?;
    let mut flush: CudaSlice<u32> = gpu.stream.alloc_zeros(FLUSH_BYTES / 4).map_err(drv)?;

    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} ETA {eta_precise} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut ctx = RunCtx {
        gpu: &gpu,
        kernels: &kernels,
        blas: &blas,
        flush: &mut flush,
        opts,
        bar: &bar,
        log: &mut log,
        written: 0,
        failed: 0,
    };
    for (wi, tasks) in &plan {
        let w = &opts.workloads[*wi];
        bar.set_message(w.name().to_string());
        let started = Instant::now();
        ctx.workload(w, tasks)?;
        summary.workload_seconds.push((w.name().to_string(), started.elapsed().as_secs_f64()));
    }
    summary.measured = ctx.written;
    summary.failed = ctx.failed;
    bar.finish_and_clear();
    summary.seconds = started.elapsed().as_secs_f64();
    super::meta::finish(&meta_path, run_index, &summary, nvidia_smi(opts.gpu))?;
    Ok(summary)
}

fn compile_all(gpu: &Gpu, workloads: &[Workload], plan: &[(usize, Vec<Task>)]) -> Result<Kernels> {
    let arch = gpu.info.arch();
    let mut programs: Vec<Program> = Vec::new();
    for (wi, tasks) in plan {
        let Some(op) = workloads[*wi].op() else { continue };
        for t in tasks {
            if let Some(c) = t.config {
                let p = c.program(op.kind());
                if !programs.contains(&p) {
                    programs.push(p);
                }
            }
        }
    }
    let fixed = [
        Program { source: KernelSource::Support, defines: vec![] },
        Program { source: KernelSource::Transpose, defines: vec![] },
    ];
    let all: Vec<Program> = fixed.iter().cloned().chain(programs.iter().cloned()).collect();
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get()).min(32);
    let start = Instant::now();
    let chunk = all.len().div_ceil(threads).max(1);
    let compiled: Vec<(Program, Result<cudarc::nvrtc::Ptx, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = all
            .chunks(chunk)
            .map(|part| {
                let arch = arch.clone();
                s.spawn(move || part.iter().map(|p| (p.clone(), p.compile(&arch))).collect::<Vec<_>>())
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    eprintln!("compiled {} kernels for {arch} in {:.1} s", compiled.len(), start.elapsed().as_secs_f64());
    let mut by_program = HashMap::new();
    let mut support = None;
    let mut transpose = None;
    for (p, ptx) in compiled {
        let loaded = ptx.and_then(|ptx| gpu.ctx.load_module(ptx).map_err(|e| format!("module load: {e:?}")));
        match p.source {
            KernelSource::Support => support = Some(loaded.map_err(|e| anyhow!("support.cu: {e}"))?),
            KernelSource::Transpose => {
                let m = loaded.map_err(|e| anyhow!("transpose.cu: {e}"))?;
                transpose = Some(m.load_function("transpose").map_err(drv)?);
            }
            KernelSource::MatMul | KernelSource::Softmax => {
                let entry = if p.source == KernelSource::MatMul { "matmul" } else { "softmax" };
                let f = loaded.and_then(|m| m.load_function(entry).map_err(|e| format!("{e:?}")));
                by_program.insert(p, f);
            }
        }
    }
    Ok(Kernels {
        support: support.ok_or_else(|| anyhow!("support.cu did not compile"))?,
        transpose: transpose.ok_or_else(|| anyhow!("transpose.cu did not compile"))?,
        by_program,
    })
}

struct RunCtx<'a> {
    gpu: &'a Gpu,
    kernels: &'a Kernels,
    blas: &'a CudaBlas,
    flush: &'a mut CudaSlice<u32>,
    opts: &'a Options,
    bar: &'a indicatif::ProgressBar,
    /// Every record is appended here the moment it is made.
    log: &'a mut RecordLog,
    written: usize,
    failed: usize,
}

/// Device buffers of one workload: rotated input sets, the output and the
/// reference.
struct Buffers<T, O> {
    inputs: Vec<(CudaSlice<T>, CudaSlice<T>)>,
    out: CudaSlice<O>,
    reference: CudaSlice<O>,
}

/// Fills `buf` with uniform random fp16 values in `[-scale, scale]`.
pub fn fill_f16(
    gpu: &Gpu,
    support: &Arc<cudarc::driver::CudaModule>,
    buf: &mut CudaSlice<u16>,
    seed: u32,
    scale: f32,
) -> Result<()> {
    let f = support.load_function("fill_random_f16").map_err(drv)?;
    let n = buf.len() as u64;
    let cfg = LaunchConfig { grid_dim: (grid_for(buf.len()), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: fill_random_f16(half_t*, u64, u32, float) writes n elements of buf.
    unsafe { gpu.stream.launch_builder(&f).arg(buf).arg(&n).arg(&seed).arg(&scale).launch(cfg) }.map_err(drv)?;
    Ok(())
}

/// Fills `buf` with uniform random fp32 values in `[-scale, scale]`.
pub fn fill_f32(
    gpu: &Gpu,
    support: &Arc<cudarc::driver::CudaModule>,
    buf: &mut CudaSlice<f32>,
    seed: u32,
    scale: f32,
) -> Result<()> {
    let f = support.load_function("fill_random_f32").map_err(drv)?;
    let n = buf.len() as u64;
    let cfg = LaunchConfig { grid_dim: (grid_for(buf.len()), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: fill_random_f32(float*, u64, u32, float) writes n elements of buf.
    unsafe { gpu.stream.launch_builder(&f).arg(buf).arg(&n).arg(&seed).arg(&scale).launch(cfg) }.map_err(drv)?;
    Ok(())
}

/// The launch of the matmul kernel in configuration `c`: a one-dimensional
/// grid of tiles in grouped order, the batch along y.
pub fn matmul_launch(c: &Config, m: u32, n: u32, batch: u32, smem: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(c.tile_n as u32) * m.div_ceil(c.tile_m as u32), batch, 1),
        block_dim: (c.threads(), 1, 1),
        shared_mem_bytes: smem,
    }
}

/// The launch of the softmax kernel in configuration `c`: a block per row.
pub fn softmax_launch(c: &Config, rows: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (rows, 1, 1), block_dim: (c.threads(), 1, 1), shared_mem_bytes: 0 }
}

fn grid_for(n: usize) -> u32 {
    (n.div_ceil(256)).clamp(1, 8192) as u32
}

/// Launches a checked matmul configuration on input set `i` (mod the
/// number of sets).
fn matmul_launcher<'a>(
    stream: &'a Arc<cudarc::driver::CudaStream>,
    buf: &'a mut Buffers<u16, u16>,
    [m, n, k, _]: [u32; 4],
) -> impl FnMut(&Ready, usize) -> Result<(), DriverError> + 'a {
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let sets = buf.inputs.len();
    let (inputs, out) = (&buf.inputs, &mut buf.out);
    move |r: &Ready, i: usize| {
        let (a, b) = &inputs[i % sets];
        // SAFETY: matmul(const half_t*, const half_t*, half_t*, int, int, int)
        // over these shapes.
        unsafe { stream.launch_builder(&r.f).arg(a).arg(b).arg(&mut *out).arg(&mi).arg(&ni).arg(&ki).launch(r.cfg) }
            .map(|_| ())
    }
}

/// Launches a checked softmax configuration on input set `i` (mod the
/// number of sets).
fn softmax_launcher<'a>(
    stream: &'a Arc<cudarc::driver::CudaStream>,
    inputs: &'a [CudaSlice<f32>],
    out: &'a mut CudaSlice<f32>,
    rows: u32,
    cols: u32,
) -> impl FnMut(&Ready, usize) -> Result<(), DriverError> + 'a {
    let (ri, ci) = (rows as i32, cols as i32);
    let sets = inputs.len();
    move |r: &Ready, i: usize| {
        // SAFETY: softmax(const float*, float*, int, int), one block per row.
        unsafe { stream.launch_builder(&r.f).arg(&inputs[i % sets]).arg(&mut *out).arg(&ri).arg(&ci).launch(r.cfg) }
            .map(|_| ())
    }
}

/// The record of a configuration's check: ready to time when it ran and
/// passed (its error kept), failed with the reason otherwise.
fn checked_verdict(
    mut rec: Record,
    checked: Result<Result<f64, String>, DriverError>,
    f: CudaFunction,
    cfg: LaunchConfig,
) -> Checked {
    match checked {
        Err(e) => rec.reason = Some(launch_failure("launch", &e)),
        Ok(Err(why)) => rec.reason = Some(why),
        Ok(Ok(err)) => {
            rec.error = Some(err);
            return Checked::Ready(Ready { rec, f, cfg });
        }
    }
    Checked::Failed(rec)
}

impl RunCtx<'_> {
    /// Appends `rec` to the records file at once (flushed to disk), so a
    /// run killed later loses nothing it measured.
    fn emit(&mut self, rec: &Record) -> Result<()> {
        self.log.append(rec)?;
        self.written += 1;
        if rec.status == Status::Failed {
            self.failed += 1;
        }
        Ok(())
    }

    fn support(&self, name: &str) -> Result<CudaFunction> {
        self.kernels.support.load_function(name).map_err(drv)
    }

    fn base_record(&self, w: &Workload, source: Source, config: Option<Config>) -> Record {
        Record::pending(source, w.clone(), config, self.opts.run_label.clone(), now())
    }

    fn finish_ok(&self, w: &Workload, mut rec: Record, timing: Timing) -> Record {
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

    fn input_sets(&self, set_bytes: usize) -> usize {
        let l2 = self.gpu.info.l2_bytes as usize;
        (3 * l2).div_ceil(set_bytes.max(1)).clamp(2, 8)
    }

    /// Refuses a workload that cannot fit, naming the sizes.
    fn check_memory(&self, w: &Workload, need: usize) -> Result<(), String> {
        let (free, _) = self.gpu.ctx.mem_get_info().map_err(|e| format!("{e:?}"))?;
        faults::memory_verdict(w.name(), need as u64, free as u64)
    }

    fn fill_f16(&self, buf: &mut CudaSlice<u16>, seed: u32, scale: f32) -> Result<()> {
        fill_f16(self.gpu, &self.kernels.support, buf, seed, scale)
    }

    fn fill_f32(&self, buf: &mut CudaSlice<f32>, seed: u32, scale: f32) -> Result<()> {
        fill_f32(self.gpu, &self.kernels.support, buf, seed, scale)
    }

    fn poison_f16(&self, buf: &mut CudaSlice<u16>) -> Result<(), DriverError> {
        let f = self.kernels.support.load_function("fill_u16")?;
        let n = buf.len() as u64;
        let nan: u16 = 0x7E00;
        let cfg = LaunchConfig { grid_dim: (grid_for(buf.len()), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: fill_u16(half_t*, u64, half_t) writes n elements of buf.
        unsafe { self.gpu.stream.launch_builder(&f).arg(buf).arg(&n).arg(&nan).launch(cfg) }.map(|_| ())
    }

    fn poison_f32(&self, buf: &mut CudaSlice<f32>) -> Result<(), DriverError> {
        use cudarc::driver::DevicePtrMut;
        let bytes = buf.len() * 4;
        let (ptr, _g) = buf.device_ptr_mut(&self.gpu.stream);
        // SAFETY: writes `bytes` bytes of buf (all-ones bits are a NaN).
        unsafe { cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, self.gpu.stream.cu_stream()) }
    }

    /// Relative error of a matmul output against the reference, or why
    /// it is unusable.
    fn check_f16(&self, out: &CudaSlice<u16>, reference: &CudaSlice<u16>) -> Result<Result<f64, String>, DriverError> {
        let f = self.kernels.support.load_function("compare_f16")?;
        let mut acc: CudaSlice<f64> = self.gpu.stream.alloc_zeros(3)?;
        let n = out.len() as u64;
        let cfg = LaunchConfig { grid_dim: (grid_for(out.len()), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: compare_f16(const half_t*, const half_t*, u64, double*) reads n of each, writes 3 doubles.
        unsafe { self.gpu.stream.launch_builder(&f).arg(out).arg(reference).arg(&n).arg(&mut acc).launch(cfg) }?;
        let v = self.gpu.stream.clone_dtoh(&acc)?;
        if v[2] > 0.0 {
            return Ok(Err(format!("{} outputs unwritten or not finite", v[2] as u64)));
        }
        let rel = (v[0] / v[1].max(f64::MIN_POSITIVE)).sqrt();
        Ok(if rel < MATMUL_TOLERANCE {
            Ok(rel)
        } else {
            Err(format!("relative error {rel:.3e} >= {MATMUL_TOLERANCE:e}"))
        })
    }

    /// Largest absolute difference of a softmax output, or why it is
    /// unusable.
    fn check_f32(&self, out: &CudaSlice<f32>, reference: &CudaSlice<f32>) -> Result<Result<f64, String>, DriverError> {
        let f = self.kernels.support.load_function("compare_f32")?;
        let mut acc: CudaSlice<u32> = self.gpu.stream.alloc_zeros(2)?;
        let n = out.len() as u64;
        let cfg = LaunchConfig { grid_dim: (grid_for(out.len()), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: compare_f32(const float*, const float*, u64, unsigned*) reads n of each, writes 2 words.
        unsafe { self.gpu.stream.launch_builder(&f).arg(out).arg(reference).arg(&n).arg(&mut acc).launch(cfg) }?;
        let v = self.gpu.stream.clone_dtoh(&acc)?;
        if v[1] > 0 {
            return Ok(Err(format!("{} outputs unwritten or not finite", v[1])));
        }
        let worst = f32::from_bits(v[0]) as f64;
        Ok(if worst < SOFTMAX_TOLERANCE {
            Ok(worst)
        } else {
            Err(format!("max abs difference {worst:.3e} >= {SOFTMAX_TOLERANCE:e}"))
        })
    }

    /// Times one launch with events (after a flush), in microseconds.
    fn time_once(&mut self, launch: &mut dyn FnMut(usize) -> Result<(), DriverError>) -> Result<f64, DriverError> {
        let policy = TimingPolicy { warmup: 0, min_repeats: 1, max_repeats: 1, target_ms: 0.0 };
        Ok(timer::time(self.gpu, self.flush, &policy, 1.0, launch)?.median_us)
    }

    fn workload(&mut self, w: &Workload, tasks: &[Task]) -> Result<Vec<Record>> {
        let t0 = Instant::now();
        let records = match w {
            Workload::MatMul { m, n, k, batch, .. } => self.matmul(w, [*m, *n, *k, *batch], tasks)?,
            Workload::Softmax { rows, cols, .. } => self.softmax(w, *rows, *cols, tasks)?,
            Workload::Transpose { rows, cols, .. } => {
                let r = self.transpose(w, *rows, *cols)?;
                self.emit(&r)?;
                vec![r]
            }
            Workload::Copy { bytes, .. } => {
                let r = self.copy(w, *bytes)?;
                self.emit(&r)?;
                vec![r]
            }
        };
        if self.opts.verbose {
            let best = records
                .iter()
                .filter(|r| r.source == Source::Kernel && r.status == Status::Ok)
                .filter_map(|r| r.timing.as_ref().map(|t| (t.median_us, r)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let failed = records.iter().filter(|r| r.status == Status::Failed).count();
            let cublas = records.iter().find(|r| r.source == Source::Cublas).and_then(|r| r.timing.as_ref());
            let line = format!(
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
                t0.elapsed().as_secs_f64()
            );
            self.bar.suspend(|| eprintln!("{line}"));
        }
        Ok(records)
    }

    fn matmul(&mut self, w: &Workload, [m, n, k, batch]: [u32; 4], tasks: &[Task]) -> Result<Vec<Record>> {
        let (mu, nu, ku, bu) = (m as usize, n as usize, k as usize, batch as usize);
        let (a_len, b_len, c_len) = (bu * mu * ku, bu * ku * nu, bu * mu * nu);
        let set_bytes = 2 * (a_len + b_len);
        let sets = self.input_sets(set_bytes);
        if let Err(reason) = self.check_memory(w, set_bytes * sets + 4 * c_len) {
            return self.all_failed(w, tasks, &reason);
        }
        let stream = self.gpu.stream.clone();
        let mut inputs = Vec::new();
        for s in 0..sets {
            let mut a: CudaSlice<u16> = stream.alloc_zeros(a_len).map_err(drv)?;
            let mut b: CudaSlice<u16> = stream.alloc_zeros(b_len).map_err(drv)?;
            self.fill_f16(&mut a, SEED.wrapping_add(2 * s as u32), 1.0)?;
            self.fill_f16(&mut b, SEED.wrapping_add(2 * s as u32 + 1), 1.0)?;
            inputs.push((a, b));
        }
        let mut buf = Buffers {
            inputs,
            out: stream.alloc_zeros::<u16>(c_len).map_err(drv)?,
            reference: stream.alloc_zeros::<u16>(c_len).map_err(drv)?,
        };
        // The reference: cuBLAS on the first set, itself checked on a sample
        // against fp64 on the CPU.
        {
            let (a, b) = &buf.inputs[0];
            cublas_matmul(self.blas, [m, n, k, batch], a, b, &mut buf.reference)?;
            stream.synchronize().map_err(drv)?;
            verify_reference(&stream, [mu, nu, ku, bu], a, b, &buf.reference)?;
        }
        let mut records = Vec::new();
        let mut ready = Vec::new();
        let dims = [m, n, k, batch];
        for t in tasks {
            let rec = match (t.source, t.config) {
                (Source::Cublas, _) => self.time_cublas(w, dims, &mut buf)?,
                (_, Some(c)) => match self.check_matmul(w, c, dims, &mut buf)? {
                    Checked::Failed(rec) => rec,
                    Checked::Ready(r) if self.opts.interleave => {
                        ready.push(r);
                        continue;
                    }
                    Checked::Ready(r) => {
                        let mut timed = self.time_ready(w, vec![r], matmul_launcher(&stream, &mut buf, dims))?;
                        timed.pop().ok_or_else(|| anyhow!("no record timed"))?
                    }
                },
                (_, None) => continue,
            };
            self.finish_task(rec, &mut records)?;
        }
        if !ready.is_empty() {
            for rec in self.time_ready(w, ready, matmul_launcher(&stream, &mut buf, dims))? {
                self.finish_task(rec, &mut records)?;
            }
        }
        Ok(records)
    }

    /// Counts, writes and keeps a finished record; ends the run when the
    /// GPU context is lost.
    fn finish_task(&mut self, rec: Record, records: &mut Vec<Record>) -> Result<()> {
        self.bar.inc(1);
        self.emit(&rec)?;
        // A failure the context survives is recorded and the run goes on.
        faults::after(&rec)?;
        records.push(rec);
        Ok(())
    }

    /// The compiled kernel of configuration `c`, or NVRTC's log when it
    /// did not compile.
    fn compiled(&self, c: Config, kind: OpKind) -> Result<Result<CudaFunction, &str>> {
        match self.kernels.by_program.get(&c.program(kind)) {
            Some(Ok(f)) => Ok(Ok(f.clone())),
            Some(Err(log)) => Ok(Err(log.as_str())),
            None => bail!("kernel {} was not compiled", c.label(kind)),
        }
    }

    /// Times checked configurations: each alone (a first run picks its
    /// repeats), then all of them together, side by side.
    fn time_ready(
        &mut self,
        w: &Workload,
        ready: Vec<Ready>,
        mut launch: impl FnMut(&Ready, usize) -> Result<(), DriverError>,
    ) -> Result<Vec<Record>> {
        let mut firsts = Vec::with_capacity(ready.len());
        let timed = (|| -> Result<Vec<Timing>, DriverError> {
            for r in &ready {
                firsts.push(self.time_once(&mut |i| launch(r, i))?);
            }
            timer::time_interleaved(self.gpu, self.flush, &self.opts.policy, &firsts, |j, i| launch(&ready[j], i))
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

    fn all_failed(&mut self, w: &Workload, tasks: &[Task], reason: &str) -> Result<Vec<Record>> {
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

    fn time_cublas(&mut self, w: &Workload, dims: [u32; 4], buf: &mut Buffers<u16, u16>) -> Result<Record> {
        let rec = self.base_record(w, Source::Cublas, None);
        let blas = self.blas;
        let sets = buf.inputs.len();
        let (inputs, out) = (&buf.inputs, &mut buf.out);
        let mut launch = |i: usize| -> Result<(), DriverError> {
            let (a, b) = &inputs[i % sets];
            cublas_matmul(blas, dims, a, b, out)
                .map_err(|_| DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_LAUNCH_FAILED))
        };
        let first = self.time_once(&mut launch).map_err(drv)?;
        let timing = timer::time(self.gpu, self.flush, &self.opts.policy, first, &mut launch).map_err(drv)?;
        Ok(self.finish_ok(w, rec, timing))
    }

    /// Checks configuration `c` of a matmul: compiled, launched once on
    /// the first input set into a poisoned output, and compared with the
    /// reference.
    fn check_matmul(
        &mut self,
        w: &Workload,
        c: Config,
        [m, n, k, batch]: [u32; 4],
        buf: &mut Buffers<u16, u16>,
    ) -> Result<Checked> {
        let op = w.op().ok_or_else(|| anyhow!("not a matmul"))?;
        let mut rec = self.base_record(w, Source::Kernel, Some(c));
        let f = match self.compiled(c, OpKind::MatMul)? {
            Ok(f) => f,
            Err(log) => return Ok(Checked::Failed(faults::failed(rec, faults::compile_failure(log)))),
        };
        let smem = c.dynamic_smem(&op);
        rec.smem_bytes = Some(smem);
        rec.registers = f.num_regs().ok();
        rec.local_bytes = f.local_size_bytes().ok();
        if let Err(e) =
            f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
        {
            rec.reason = Some(format!("cannot set {smem} bytes of shared memory: {e:?}"));
            return Ok(Checked::Failed(rec));
        }
        let cfg = matmul_launch(&c, m, n, batch, smem);
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        let stream = self.gpu.stream.clone();
        // The check: poisoned output, one run on the first set.
        let checked = (|| -> Result<Result<f64, String>, DriverError> {
            self.poison_f16(&mut buf.out)?;
            let (a, b) = &buf.inputs[0];
            // SAFETY: matmul(const half_t*, const half_t*, half_t*, int, int, int) over these shapes.
            unsafe {
                stream.launch_builder(&f).arg(a).arg(b).arg(&mut buf.out).arg(&mi).arg(&ni).arg(&ki).launch(cfg)
            }?;
            stream.synchronize()?;
            self.check_f16(&buf.out, &buf.reference)
        })();
        Ok(checked_verdict(rec, checked, f, cfg))
    }

    fn softmax(&mut self, w: &Workload, rows: u32, cols: u32, tasks: &[Task]) -> Result<Vec<Record>> {
        let len = rows as usize * cols as usize;
        let set_bytes = 4 * len;
        let sets = self.input_sets(set_bytes);
        if let Err(reason) = self.check_memory(w, set_bytes * (sets + 2)) {
            return self.all_failed(w, tasks, &reason);
        }
        let stream = self.gpu.stream.clone();
        let mut inputs = Vec::new();
        for s in 0..sets {
            let mut x: CudaSlice<f32> = stream.alloc_zeros(len).map_err(drv)?;
            self.fill_f32(&mut x, SEED.wrapping_add(100 + s as u32), 4.0)?;
            inputs.push(x);
        }
        let mut out: CudaSlice<f32> = stream.alloc_zeros(len).map_err(drv)?;
        let mut reference: CudaSlice<f32> = stream.alloc_zeros(len).map_err(drv)?;
        {
            let f = self.support("softmax_reference")?;
            let cfg = LaunchConfig { grid_dim: (rows.div_ceil(8), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            let (r, c) = (rows as i32, cols as i32);
            // SAFETY: softmax_reference(const float*, float*, int, int), one warp per row.
            unsafe { stream.launch_builder(&f).arg(&inputs[0]).arg(&mut reference).arg(&r).arg(&c).launch(cfg) }
                .map_err(drv)?;
            stream.synchronize().map_err(drv)?;
        }
        let mut records = Vec::new();
        let mut ready = Vec::new();
        for t in tasks {
            let Some(c) = t.config else { continue };
            let rec = match self.check_softmax(w, c, rows, cols, &inputs[0], &mut out, &reference)? {
                Checked::Failed(rec) => rec,
                Checked::Ready(r) if self.opts.interleave => {
                    ready.push(r);
                    continue;
                }
                Checked::Ready(r) => {
                    let mut timed =
                        self.time_ready(w, vec![r], softmax_launcher(&stream, &inputs, &mut out, rows, cols))?;
                    timed.pop().ok_or_else(|| anyhow!("no record timed"))?
                }
            };
            self.finish_task(rec, &mut records)?;
        }
        if !ready.is_empty() {
            for rec in self.time_ready(w, ready, softmax_launcher(&stream, &inputs, &mut out, rows, cols))? {
                self.finish_task(rec, &mut records)?;
            }
        }
        Ok(records)
    }

    /// Checks configuration `c` of a softmax: compiled, launched once on
    /// the first input set into a poisoned output, and compared with the
    /// reference.
    #[allow(clippy::too_many_arguments)]
    fn check_softmax(
        &mut self,
        w: &Workload,
        c: Config,
        rows: u32,
        cols: u32,
        input: &CudaSlice<f32>,
        out: &mut CudaSlice<f32>,
        reference: &CudaSlice<f32>,
    ) -> Result<Checked> {
        let mut rec = self.base_record(w, Source::Kernel, Some(c));
        let f = match self.compiled(c, OpKind::Softmax)? {
            Ok(f) => f,
            Err(log) => return Ok(Checked::Failed(faults::failed(rec, faults::compile_failure(log)))),
        };
        rec.registers = f.num_regs().ok();
        rec.local_bytes = f.local_size_bytes().ok();
        rec.smem_bytes = Some(0);
        let cfg = softmax_launch(&c, rows);
        let (ri, ci) = (rows as i32, cols as i32);
        let stream = self.gpu.stream.clone();
        let checked = (|| -> Result<Result<f64, String>, DriverError> {
            self.poison_f32(out)?;
            // SAFETY: softmax(const float*, float*, int, int), one block per row.
            unsafe { stream.launch_builder(&f).arg(input).arg(&mut *out).arg(&ri).arg(&ci).launch(cfg) }?;
            stream.synchronize()?;
            self.check_f32(out, reference)
        })();
        Ok(checked_verdict(rec, checked, f, cfg))
    }

    fn transpose(&mut self, w: &Workload, rows: u32, cols: u32) -> Result<Record> {
        let len = rows as usize * cols as usize;
        let mut rec = self.base_record(w, Source::Kernel, None);
        if let Err(reason) = self.check_memory(w, 2 * len * 4) {
            rec.reason = Some(reason);
            self.bar.inc(1);
            return Ok(rec);
        }
        let stream = self.gpu.stream.clone();
        let mut inputs = Vec::new();
        for s in 0..self.input_sets(2 * len) {
            let mut x: CudaSlice<u16> = stream.alloc_zeros(len).map_err(drv)?;
            self.fill_f16(&mut x, SEED.wrapping_add(200 + s as u32), 1.0)?;
            inputs.push(x);
        }
        let mut out: CudaSlice<u16> = stream.alloc_zeros(len).map_err(drv)?;
        let f = self.kernels.transpose.clone();
        let cfg = LaunchConfig {
            grid_dim: (cols.div_ceil(32), rows.div_ceil(32), 1),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        };
        let (ri, ci) = (rows as i32, cols as i32);
        self.poison_f16(&mut out).map_err(drv)?;
        // SAFETY: transpose(const half_t*, half_t*, int, int).
        unsafe { stream.launch_builder(&f).arg(&inputs[0]).arg(&mut out).arg(&ri).arg(&ci).launch(cfg) }
            .map_err(drv)?;
        let x = stream.clone_dtoh(&inputs[0]).map_err(drv)?;
        let y = stream.clone_dtoh(&out).map_err(drv)?;
        let (r, c) = (rows as usize, cols as usize);
        let wrong =
            (0..r).flat_map(|i| (0..c).map(move |j| (i, j))).filter(|&(i, j)| y[j * r + i] != x[i * c + j]).count();
        if wrong > 0 {
            rec.reason = Some(format!("{wrong} elements wrong"));
            self.bar.inc(1);
            return Ok(rec);
        }
        rec.error = Some(0.0);
        let sets = inputs.len();
        let (inputs, out) = (&inputs, &mut out);
        let mut launch = |i: usize| -> Result<(), DriverError> {
            // SAFETY: as above.
            unsafe { stream.launch_builder(&f).arg(&inputs[i % sets]).arg(&mut *out).arg(&ri).arg(&ci).launch(cfg) }
                .map(|_| ())
        };
        let first = self.time_once(&mut launch).map_err(drv)?;
        let t = timer::time(self.gpu, self.flush, &self.opts.policy, first, &mut launch).map_err(drv)?;
        self.bar.inc(1);
        Ok(self.finish_ok(w, rec, t))
    }

    fn copy(&mut self, w: &Workload, bytes: u64) -> Result<Record> {
        let mut rec = self.base_record(w, Source::Copy, None);
        if let Err(reason) = self.check_memory(w, bytes.saturating_mul(2) as usize) {
            rec.reason = Some(reason);
            self.bar.inc(1);
            return Ok(rec);
        }
        let n = (bytes / 4) as usize;
        let stream = self.gpu.stream.clone();
        let mut src: CudaSlice<f32> = stream.alloc_zeros(n).map_err(drv)?;
        self.fill_f32(&mut src, SEED.wrapping_add(300), 1.0)?;
        let mut dst: CudaSlice<f32> = stream.alloc_zeros(n).map_err(drv)?;
        let mut launch = |_: usize| -> Result<(), DriverError> { stream.memcpy_dtod(&src, &mut dst) };
        let first = self.time_once(&mut launch).map_err(drv)?;
        let t = timer::time(self.gpu, self.flush, &self.opts.policy, first, &mut launch).map_err(drv)?;
        let host_src = stream.clone_dtoh(&src).map_err(drv)?;
        let host_dst = stream.clone_dtoh(&dst).map_err(drv)?;
        if host_src != host_dst {
            rec.reason = Some("copy differs from its source".into());
            self.bar.inc(1);
            return Ok(rec);
        }
        rec.error = Some(0.0);
        self.bar.inc(1);
        Ok(self.finish_ok(w, rec, t))
    }
}

/// `C = A * B` (row-major, fp16, fp32 accumulation) through cuBLAS.
fn cublas_matmul(
    blas: &CudaBlas,
    [m, n, k, batch]: [u32; 4],
    a: &CudaSlice<u16>,
    b: &CudaSlice<u16>,
    c: &mut CudaSlice<u16>,
) -> Result<()> {
    use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
    // SAFETY: u16 and half::f16 have the same layout.
    let (a, b) = unsafe { (a.transmute::<half::f16>(a.len()), b.transmute::<half::f16>(b.len())) };
    let (Some(a), Some(b)) = (a, b) else { bail!("cannot view the inputs as f16") };
    let len = c.len();
    // SAFETY: as above.
    let Some(mut cv) = (unsafe { c.transmute_mut::<half::f16>(len) }) else { bail!("cannot view the output as f16") };
    // Row-major C = A B is column-major C^T = B^T A^T.
    let gemm = GemmConfig {
        transa: CUBLAS_OP_N,
        transb: CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: half::f16::ONE,
        lda: n as i32,
        ldb: k as i32,
        beta: half::f16::ZERO,
        ldc: n as i32,
    };
    // SAFETY: the buffers hold batch products of these shapes.
    unsafe {
        if batch == 1 {
            blas.gemm(gemm, &b, &a, &mut cv)
        } else {
            let cfg = StridedBatchedConfig {
                gemm,
                batch_size: batch as i32,
                stride_a: k as i64 * n as i64,
                stride_b: m as i64 * k as i64,
                stride_c: m as i64 * n as i64,
            };
            blas.gemm_strided_batched(cfg, &b, &a, &mut cv)
        }
    }
    .map_err(|e| anyhow!("cuBLAS gemm: {e:?}"))
}

/// Checks the cuBLAS reference on 64 sampled outputs against fp64 dot
/// products on the CPU.
fn verify_reference(
    stream: &Arc<cudarc::driver::CudaStream>,
    [m, n, k, batch]: [usize; 4],
    a: &CudaSlice<u16>,
    b: &CudaSlice<u16>,
    c: &CudaSlice<u16>,
) -> Result<()> {
    let ha = stream.clone_dtoh(a).map_err(drv)?;
    let hb = stream.clone_dtoh(b).map_err(drv)?;
    let hc = stream.clone_dtoh(c).map_err(drv)?;
    let f = |v: u16| half::f16::from_bits(v).to_f64();
    let (mut err, mut refsq) = (0.0f64, 0.0f64);
    let mut state = 0x2545F4914F6CDD1Du64;
    for _ in 0..64 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let (z, i, j) =
            ((state % batch as u64) as usize, ((state >> 20) % m as u64) as usize, ((state >> 40) % n as u64) as usize);
        let exact: f64 = (0..k).map(|p| f(ha[z * m * k + i * k + p]) * f(hb[z * k * n + p * n + j])).sum();
        let got = f(hc[z * m * n + i * n + j]);
        err += (got - exact).powi(2);
        refsq += exact * exact;
    }
    let rel = (err / refsq.max(f64::MIN_POSITIVE)).sqrt();
    if rel.is_nan() || rel >= MATMUL_TOLERANCE {
        bail!("the cuBLAS reference disagrees with fp64 on the CPU (relative error {rel:.3e}); not measuring");
    }
    Ok(())
}
