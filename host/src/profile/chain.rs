//! Running a whole schedule on the GPU: every layer's kernel in its chosen
//! configuration, back to back, timed end to end ([`time_chain`] on a
//! device, [`time_chain_on`] an opened GPU or green context); a
//! [`PreparedChain`] for a caller that runs several chains at once, layer
//! by layer; and beside it every configuration of every layer's shape, so
//! that each layer's choice meets its best ([`measure_schedule`]).
//!
//! Each layer gets its own random inputs of its own shape (the layers of a
//! built-in block are not shape-compatible tensors of one another: the
//! heads of an attention layer are a batch here), so the time is that of
//! the kernels in sequence, with what the L2 keeps between them, and the
//! launches one after another on one stream.

use crate::family::{self, Config, Inputs, Tools, Workspace};
use crate::gpu::blas::Blas;
use crate::gpu::source;
use crate::gpu::support::{Support, SEED};
use crate::gpu::timer::Timer;
use crate::gpu::{Gpu, Program, Timing, TimingPolicy};
use crate::input::workload_file::Workload;
use anyhow::{anyhow, Result};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, DriverError, LaunchConfig};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;

struct Layer<'a> {
    f: CudaFunction,
    c: Config,
    cfg: LaunchConfig,
    workspace: Box<dyn Workspace + 'a>,
}

fn drv(e: DriverError) -> anyhow::Error {
    anyhow!("{e:?}")
}

/// The machine code of the kernels of some chains, each program compiled
/// once (in parallel) and loadable into any context of the device.
pub struct Kernels {
    ptx: HashMap<Program, Ptx>,
}

impl Kernels {
    /// Compiles every distinct program of the layers of `chains` for
    /// `arch` (such as `sm_90`); an error names a layer that needs the
    /// program.
    pub fn compile(arch: &str, chains: &[&[(Workload, Config)]]) -> Result<Kernels> {
        let mut programs = Vec::new();
        let mut needed_by: HashMap<Program, String> = HashMap::new();
        for (w, c) in chains.iter().flat_map(|chain| chain.iter()) {
            let program = program_of(w, c)?;
            if !needed_by.contains_key(&program) {
                needed_by.insert(program.clone(), w.name().to_string());
                programs.push(program);
            }
        }
        let mut ptx = HashMap::new();
        for (program, compiled) in source::compile_all(&programs, arch) {
            let code = compiled
                .map_err(|e| anyhow!("layer `{}`: {e}", needed_by.get(&program).map_or("?", String::as_str)))?;
            ptx.insert(program, code);
        }
        Ok(Kernels { ptx })
    }
}

fn program_of(w: &Workload, c: &Config) -> Result<Program> {
    let op = w.op().ok_or_else(|| anyhow!("layer `{}` is an anchor, not a layer with a kernel family", w.name()))?;
    Ok(family::for_config(op.kind(), c).program(c))
}

/// A chain of layers ready to launch on one GPU (or green context): each
/// layer's kernel loaded into its context and its inputs allocated there,
/// every launch to its stream.
pub struct PreparedChain<'a> {
    layers: Vec<Layer<'a>>,
}

impl<'a> PreparedChain<'a> {
    /// Loads each layer's kernel (from `kernels`) into `tools.gpu` and
    /// fills its inputs (seeded by its place in the chain).
    pub fn prepare(tools: Tools<'a>, layers: &[(Workload, Config)], kernels: &Kernels) -> Result<PreparedChain<'a>> {
        let gpu = tools.gpu;
        let mut prepared = Vec::new();
        for (i, (w, c)) in layers.iter().enumerate() {
            let op =
                w.op().ok_or_else(|| anyhow!("layer `{}` is an anchor, not a layer with a kernel family", w.name()))?;
            let family = family::for_config(op.kind(), c);
            let ptx = kernels
                .ptx
                .get(&family.program(c))
                .cloned()
                .ok_or_else(|| anyhow!("layer `{}`: its kernel was not compiled", w.name()))?;
            let module = gpu.ctx.load_module(ptx).map_err(drv)?;
            let f = module.load_function(family.entry()).map_err(drv)?;
            let cfg = family.launch(&op, c, gpu.launch_sms());
            if cfg.shared_mem_bytes > 0 {
                f.set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    cfg.shared_mem_bytes as i32,
                )
                .map_err(drv)?;
            }
            let seed = SEED.wrapping_add(1000 + 2 * i as u32);
            let epilogue = if op.kind() == hwwfc_core::OpKind::MatMul { c.elementwise } else { None };
            let workspace = family.workspace(
                tools,
                &op,
                Inputs { sets: 1, seed, reference: false, epilogue, b_layout: c.b_layout },
            )?;
            prepared.push(Layer { f, c: *c, cfg, workspace });
        }
        Ok(PreparedChain { layers: prepared })
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether the chain has no layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Launches layer `i` (nothing past the last).
    pub fn launch_layer(&mut self, i: usize) -> Result<(), DriverError> {
        match self.layers.get_mut(i) {
            Some(l) => l.workspace.launch(&l.f, &l.c, l.cfg, 0),
            None => Ok(()),
        }
    }

    /// Launches every layer, in order.
    pub fn launch(&mut self) -> Result<(), DriverError> {
        for l in self.layers.iter_mut() {
            l.workspace.launch(&l.f, &l.c, l.cfg, 0)?;
        }
        Ok(())
    }

    /// Launches every layer, in order, each by the vendor's library where
    /// its family has one (cuBLAS for a matmul), else by its own kernel in
    /// its configuration (a softmax: there is no vendor's softmax to call
    /// from here); returns the layers the vendor ran.
    pub fn launch_vendor(&mut self) -> Result<usize, DriverError> {
        let mut vendor = 0;
        for l in self.layers.iter_mut() {
            match l.workspace.run_baseline(0) {
                Some(r) => {
                    r?;
                    vendor += 1;
                }
                None => l.workspace.launch(&l.f, &l.c, l.cfg, 0)?,
            }
        }
        Ok(vendor)
    }
}

/// Times `launch_all` on `gpu`, with the L2 flushed before each repeat: a
/// first run picks the number of repeats under `policy`.
fn time_launches(
    gpu: &Gpu,
    policy: &TimingPolicy,
    mut launch_all: impl FnMut(usize) -> Result<(), DriverError>,
) -> Result<Timing> {
    let mut timer = Timer::new(gpu, *policy).map_err(drv)?;
    let once = TimingPolicy { warmup: 1, min_repeats: 1, max_repeats: 1, target_ms: 0.0 };
    let first = timer.time_under(&once, 1.0, &mut launch_all).map_err(drv)?;
    timer.time(first.median_us, &mut launch_all).map_err(drv)
}

/// Times a prepared chain on `gpu` (the GPU or green context it was
/// prepared on), with the L2 flushed before each repeat: a first run picks
/// the number of repeats under `policy`.
pub fn time_prepared(gpu: &Gpu, chain: &mut PreparedChain<'_>, policy: &TimingPolicy) -> Result<Timing> {
    time_launches(gpu, policy, |_| chain.launch())
}

/// Times the same chain with the vendor's library in place of our kernels
/// where a family has one ([`PreparedChain::launch_vendor`]), like
/// [`time_prepared`]; with the layers the vendor ran.
pub fn time_prepared_vendor(
    gpu: &Gpu,
    chain: &mut PreparedChain<'_>,
    policy: &TimingPolicy,
) -> Result<(Timing, usize)> {
    let mut vendor_layers = 0;
    let timing = time_launches(gpu, policy, |_| chain.launch_vendor().map(|n| vendor_layers = n))?;
    Ok((timing, vendor_layers))
}

/// Compiles and loads the kernels of `layers` on an opened `gpu` and
/// runs `f` on the prepared chain.
fn with_chain<T>(
    gpu: &Gpu,
    layers: &[(Workload, Config)],
    f: impl FnOnce(&mut PreparedChain<'_>) -> Result<T>,
) -> Result<T> {
    let kernels = Kernels::compile(&gpu.info.arch(), &[layers])?;
    let support = Support::compile(gpu)?;
    let blas = Blas::new(gpu)?;
    let tools = Tools { gpu, support: &support, blas: &blas };
    let mut chain = PreparedChain::prepare(tools, layers, &kernels)?;
    f(&mut chain)
}

/// Times the layers (workload and configuration) run back to back on an
/// opened `gpu` (the whole device, or a green context of it), with the L2
/// flushed before each repeat of the whole chain.
pub fn time_chain_on(gpu: &Gpu, layers: &[(Workload, Config)], policy: &TimingPolicy) -> Result<Timing> {
    with_chain(gpu, layers, |chain| time_prepared(gpu, chain, policy))
}

/// Times the layers (workload and configuration) run back to back on
/// device `ordinal`, with the L2 flushed before each repeat of the whole
/// chain.
pub fn time_chain(ordinal: usize, layers: &[(Workload, Config)], policy: &TimingPolicy) -> Result<Timing> {
    let gpu = Gpu::open(ordinal)?;
    time_chain_on(&gpu, layers, policy)
}

/// The chain of [`time_chain`] timed twice in one process on the same
/// inputs: with our kernels, and with the vendor's library in their place
/// where a family has one; with the layers the vendor ran.
fn time_chain_and_vendor(
    ordinal: usize,
    layers: &[(Workload, Config)],
    policy: &TimingPolicy,
) -> Result<(Timing, Timing, usize)> {
    let gpu = Gpu::open(ordinal)?;
    with_chain(&gpu, layers, |chain| {
        let ours = time_prepared(&gpu, chain, policy)?;
        let (vendor, vendor_layers) = time_prepared_vendor(&gpu, chain, policy)?;
        Ok((ours, vendor, vendor_layers))
    })
}

/// One layer of a measured schedule.
#[derive(Clone, Debug)]
pub struct LayerTiming {
    /// The layer's shape, named after it.
    pub workload: Workload,
    /// The configuration the schedule chose.
    pub scheduled: Config,
    /// Its median time alone, microseconds (none if it failed).
    pub scheduled_us: Option<f64>,
    /// The fastest configuration of the layer's shape and its median.
    pub best: Option<(Config, f64)>,
}

/// A schedule measured on the GPU: end to end, and layer by layer against
/// every configuration of the layer's shape.
#[derive(Clone, Debug)]
pub struct ScheduleTiming {
    /// The layers back to back ([`time_chain`]).
    pub chain: Timing,
    /// The same chain, in the same process and on the same inputs, with
    /// the vendor's library in place of our kernels where a family has one
    /// (cuBLAS for the matmuls; the softmax stays ours).
    pub vendor_chain: Timing,
    /// How many of the layers the vendor ran in `vendor_chain`.
    pub vendor_layers: usize,
    /// Each layer alone.
    pub layers: Vec<LayerTiming>,
}

/// Times `layers` back to back (and with the vendor's library), then,
/// with `layer_bests`, profiles every configuration of
/// every layer's shape into the run folder `out` (resuming it) under
/// `spec`, labelled `label`.
pub fn measure_schedule(
    gpu: usize,
    layers: &[(Workload, Config)],
    spec: &hwwfc_core::HardwareSpec,
    out: std::path::PathBuf,
    label: String,
    layer_bests: bool,
) -> Result<ScheduleTiming> {
    use crate::database::{kernel_medians, RunFolder};
    let (chain, vendor_chain, vendor_layers) = time_chain_and_vendor(gpu, layers, &TimingPolicy::default())?;
    if !layer_bests {
        let layers = layers
            .iter()
            .map(|(w, c)| LayerTiming { workload: w.clone(), scheduled: *c, scheduled_us: None, best: None })
            .collect();
        return Ok(ScheduleTiming { chain, vendor_chain, vendor_layers, layers });
    }
    let spec_for = Box::new({
        let spec = spec.clone();
        move |_: &crate::gpu::DeviceInfo| Ok(spec.clone())
    });
    let workloads: Vec<Workload> = layers.iter().map(|(w, _)| w.clone()).collect();
    super::run(&super::Options::new(gpu, workloads.clone(), out.clone(), spec_for, label))?;
    let medians = kernel_medians(&RunFolder::new(&out).records()?, &workloads);
    let layers = layers
        .iter()
        .map(|(w, c)| {
            let mine = medians.get(w.name()).map_or(&[][..], Vec::as_slice);
            LayerTiming {
                workload: w.clone(),
                scheduled: *c,
                scheduled_us: mine.iter().find(|(rc, _)| rc.index == c.index).map(|x| x.1),
                best: mine.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1)),
            }
        })
        .collect();
    Ok(ScheduleTiming { chain, vendor_chain, vendor_layers, layers })
}
