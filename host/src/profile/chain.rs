//! Running a whole schedule on the GPU: every layer's kernel in its chosen
//! configuration, back to back, timed end to end.
//!
//! Each layer gets its own random inputs of its own shape (the layers of a
//! built-in block are not shape-compatible tensors of one another: the
//! heads of an attention layer are a batch here), so the time is that of
//! the kernels in sequence, with what the L2 keeps between them, and the
//! launches one after another on one stream.

use super::config::Config;
use super::runner::{fill_f16, fill_f32, matmul_launch, softmax_launch, FLUSH_BYTES, SEED};
use super::workload::Workload;
use crate::gpu::{timer, Gpu, KernelSource, Program, Timing, TimingPolicy};
use anyhow::{anyhow, bail, Result};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, DriverError, LaunchConfig, PushKernelArg};
use hwwfc_core::OpKind;

enum Buffers {
    MatMul { a: CudaSlice<u16>, b: CudaSlice<u16>, c: CudaSlice<u16>, dims: [i32; 3] },
    Softmax { x: CudaSlice<f32>, y: CudaSlice<f32>, dims: [i32; 2] },
}

struct Layer {
    f: CudaFunction,
    cfg: LaunchConfig,
    buffers: Buffers,
}

fn drv(e: DriverError) -> anyhow::Error {
    anyhow!("{e:?}")
}

/// Times the layers (workload and configuration) run back to back, with
/// the L2 flushed before each repeat of the whole chain.
pub fn time_chain(ordinal: usize, layers: &[(Workload, Config)], policy: &TimingPolicy) -> Result<Timing> {
    let gpu = Gpu::open(ordinal)?;
    let arch = gpu.info.arch();
    let support_ptx =
        Program { source: KernelSource::Support, defines: vec![] }.compile(&arch).map_err(|e| anyhow!(e))?;
    let support = gpu.ctx.load_module(support_ptx).map_err(drv)?;
    let mut prepared = Vec::new();
    for (i, (w, c)) in layers.iter().enumerate() {
        let op = w.op().ok_or_else(|| anyhow!("layer `{}` is not a matmul or softmax", w.name()))?;
        let kind = op.kind();
        let ptx = c.program(kind).compile(&arch).map_err(|e| anyhow!("layer `{}`: {e}", w.name()))?;
        let module = gpu.ctx.load_module(ptx).map_err(drv)?;
        let f = module.load_function(if kind == OpKind::MatMul { "matmul" } else { "softmax" }).map_err(drv)?;
        let seed = SEED.wrapping_add(1000 + 2 * i as u32);
        let (cfg, buffers) = match *w {
            Workload::MatMul { m, n, k, batch, .. } => {
                let (mu, nu, ku, bu) = (m as usize, n as usize, k as usize, batch as usize);
                let mut a = gpu.stream.alloc_zeros::<u16>(bu * mu * ku).map_err(drv)?;
                let mut b = gpu.stream.alloc_zeros::<u16>(bu * ku * nu).map_err(drv)?;
                fill_f16(&gpu, &support, &mut a, seed, 1.0)?;
                fill_f16(&gpu, &support, &mut b, seed + 1, 1.0)?;
                let c_buf = gpu.stream.alloc_zeros::<u16>(bu * mu * nu).map_err(drv)?;
                let smem = c.dynamic_smem(&op);
                f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
                    .map_err(drv)?;
                let dims = [m as i32, n as i32, k as i32];
                (matmul_launch(c, m, n, batch, smem), Buffers::MatMul { a, b, c: c_buf, dims })
            }
            Workload::Softmax { rows, cols, .. } => {
                let len = rows as usize * cols as usize;
                let mut x = gpu.stream.alloc_zeros::<f32>(len).map_err(drv)?;
                fill_f32(&gpu, &support, &mut x, seed, 4.0)?;
                let y = gpu.stream.alloc_zeros::<f32>(len).map_err(drv)?;
                (softmax_launch(c, rows), Buffers::Softmax { x, y, dims: [rows as i32, cols as i32] })
            }
            _ => bail!("layer `{}` is not a matmul or softmax", w.name()),
        };
        prepared.push(Layer { f, cfg, buffers });
    }
    let mut flush: CudaSlice<u32> = gpu.stream.alloc_zeros(FLUSH_BYTES / 4).map_err(drv)?;
    let stream = gpu.stream.clone();
    let mut launch_all = |_: usize| -> Result<(), DriverError> {
        for l in prepared.iter_mut() {
            let mut b = stream.launch_builder(&l.f);
            match &mut l.buffers {
                Buffers::MatMul { a, b: bb, c, dims } => {
                    b.arg(&*a).arg(&*bb).arg(c).arg(&dims[0]).arg(&dims[1]).arg(&dims[2]);
                }
                Buffers::Softmax { x, y, dims } => {
                    b.arg(&*x).arg(y).arg(&dims[0]).arg(&dims[1]);
                }
            }
            // SAFETY: the arguments match the kernels' signatures
            // (matmul: A, B, C, M, N, K; softmax: X, Y, rows, cols) and
            // the buffers hold those shapes.
            unsafe { b.launch(l.cfg) }?;
        }
        Ok(())
    };
    // A first run of the chain picks the number of repeats.
    let once = TimingPolicy { warmup: 1, min_repeats: 1, max_repeats: 1, target_ms: 0.0 };
    let first = timer::time(&gpu, &mut flush, &once, 1.0, &mut launch_all).map_err(drv)?;
    timer::time(&gpu, &mut flush, policy, first.median_us, &mut launch_all).map_err(drv)
}
