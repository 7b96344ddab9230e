//! Running a whole schedule on the GPU: every layer's kernel in its chosen
//! configuration, back to back, timed end to end.
//!
//! Each layer gets its own random inputs of its own shape (the layers of a
//! built-in block are not shape-compatible tensors of one another: the
//! heads of an attention layer are a batch here), so the time is that of
//! the kernels in sequence, with what the L2 keeps between them, and the
//! launches one after another on one stream.

use crate::family::{self, Config, Inputs, Tools, Workspace};
use crate::gpu::blas::Blas;
use crate::gpu::support::{Support, SEED};
use crate::gpu::timer::Timer;
use crate::gpu::{Gpu, Timing, TimingPolicy};
use crate::input::workload_file::Workload;
use anyhow::{anyhow, Result};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, DriverError, LaunchConfig};

struct Layer<'a> {
    f: CudaFunction,
    cfg: LaunchConfig,
    workspace: Box<dyn Workspace + 'a>,
}

fn drv(e: DriverError) -> anyhow::Error {
    anyhow!("{e:?}")
}

/// Times the layers (workload and configuration) run back to back, with
/// the L2 flushed before each repeat of the whole chain.
pub fn time_chain(ordinal: usize, layers: &[(Workload, Config)], policy: &TimingPolicy) -> Result<Timing> {
    let gpu = Gpu::open(ordinal)?;
    let arch = gpu.info.arch();
    let support = Support::compile(&gpu)?;
    let blas = Blas::new(&gpu)?;
    let tools = Tools { gpu: &gpu, support: &support, blas: &blas };
    let mut prepared = Vec::new();
    for (i, (w, c)) in layers.iter().enumerate() {
        let op = w.op().ok_or_else(|| anyhow!("layer `{}` is not a matmul or softmax", w.name()))?;
        let family = family::for_kind(op.kind());
        let ptx = family.program(c).compile(&arch).map_err(|e| anyhow!("layer `{}`: {e}", w.name()))?;
        let module = gpu.ctx.load_module(ptx).map_err(drv)?;
        let f = module.load_function(family.entry()).map_err(drv)?;
        let cfg = family.launch(&op, c);
        if cfg.shared_mem_bytes > 0 {
            f.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                cfg.shared_mem_bytes as i32,
            )
            .map_err(drv)?;
        }
        let seed = SEED.wrapping_add(1000 + 2 * i as u32);
        let workspace = family.workspace(tools, &op, Inputs { sets: 1, seed, reference: false })?;
        prepared.push(Layer { f, cfg, workspace });
    }
    let mut timer = Timer::new(&gpu, *policy).map_err(drv)?;
    let mut launch_all = |_: usize| -> Result<(), DriverError> {
        for l in prepared.iter_mut() {
            l.workspace.launch(&l.f, l.cfg, 0)?;
        }
        Ok(())
    };
    // A first run of the chain picks the number of repeats.
    let once = TimingPolicy { warmup: 1, min_repeats: 1, max_repeats: 1, target_ms: 0.0 };
    let first = timer.time_under(&once, 1.0, &mut launch_all).map_err(drv)?;
    timer.time(first.median_us, &mut launch_all).map_err(drv)
}
