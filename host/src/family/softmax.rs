//! The row softmax (`kernels/softmax.cu`), fp32: a block per row, `COLS`
//! columns per pass, `THREADS` threads. Checked against an fp64 reference
//! on the GPU.

use super::{Config, Inputs, KernelFamily, Tools, Workspace};
use crate::gpu::launch;
use crate::gpu::KernelSource;
use anyhow::Result;
use cudarc::driver::{CudaFunction, CudaSlice, DriverError, LaunchConfig};
use hwwfc_core::{Op, OpKind};

/// Largest absolute difference from the fp64 reference that passes.
pub const TOLERANCE: f64 = 1e-5;

/// Offset of the softmax inputs' seeds from the run's base seed.
const SEED_OFFSET: u32 = 100;

/// The row softmax family.
pub struct RowSoftmax;

/// `[rows, cols]` of a softmax (zeros for another operator).
fn dims(op: &Op) -> [u32; 2] {
    match *op {
        Op::Softmax { rows, cols, .. } => [rows, cols],
        _ => [0; 2],
    }
}

fn len(op: &Op) -> usize {
    let [r, c] = dims(op);
    r as usize * c as usize
}

impl KernelFamily for RowSoftmax {
    fn name(&self) -> &'static str {
        "softmax"
    }

    fn op_kind(&self) -> OpKind {
        OpKind::Softmax
    }

    fn source(&self) -> KernelSource {
        crate::kernel_source!("softmax.cu")
    }

    fn entry(&self) -> &'static str {
        "softmax"
    }

    fn defines(&self, c: &Config) -> Vec<(String, u32)> {
        vec![("COLS".into(), c.tile_n as u32), ("THREADS".into(), c.threads())]
    }

    fn label(&self, c: &Config) -> String {
        format!("c{} t{}", c.tile_n, c.threads())
    }

    fn launch(&self, op: &Op, c: &Config, _sm_count: u32) -> LaunchConfig {
        LaunchConfig { grid_dim: (dims(op)[0], 1, 1), block_dim: (c.threads(), 1, 1), shared_mem_bytes: 0 }
    }

    fn input_set_bytes(&self, op: &Op) -> usize {
        4 * len(op)
    }

    fn output_bytes(&self, op: &Op) -> usize {
        // The output and the reference, fp32.
        8 * len(op)
    }

    fn workspace<'a>(&self, tools: Tools<'a>, op: &Op, inputs: Inputs) -> Result<Box<dyn Workspace + 'a>> {
        let stream = &tools.gpu.stream;
        let n = len(op);
        let mut sets = Vec::new();
        for s in 0..inputs.sets {
            let mut x: CudaSlice<f32> = stream.alloc_zeros(n)?;
            tools.support.fill_f32(&mut x, inputs.seed.wrapping_add(SEED_OFFSET + s as u32), 4.0)?;
            sets.push(x);
        }
        let mut ws = SoftmaxWorkspace { tools, dims: dims(op), sets, out: stream.alloc_zeros(n)?, reference: None };
        if inputs.reference {
            let mut reference = stream.alloc_zeros::<f32>(n)?;
            let x = ws.sets.first().ok_or_else(|| anyhow::anyhow!("no input set"))?;
            tools.support.softmax_reference(x, &mut reference, ws.dims)?;
            stream.synchronize()?;
            ws.reference = Some(reference);
        }
        Ok(Box::new(ws))
    }
}

struct SoftmaxWorkspace<'a> {
    tools: Tools<'a>,
    dims: [u32; 2],
    sets: Vec<CudaSlice<f32>>,
    out: CudaSlice<f32>,
    reference: Option<CudaSlice<f32>>,
}

impl Workspace for SoftmaxWorkspace<'_> {
    fn poison(&mut self) -> Result<(), DriverError> {
        self.tools.support.poison_f32(&mut self.out)
    }

    fn launch(&mut self, f: &CudaFunction, _c: &Config, cfg: LaunchConfig, set: usize) -> Result<(), DriverError> {
        let x = &self.sets[set % self.sets.len()];
        launch::rows_f32(&self.tools.gpu.stream, f, cfg, x, &mut self.out, self.dims)
    }

    fn check(&self) -> Result<Result<f64, String>, DriverError> {
        let Some(reference) = &self.reference else { return Ok(Err("no reference to check against".into())) };
        Ok(self.tools.support.max_difference_f32(&self.out, reference)?.and_then(|worst| {
            if worst < TOLERANCE {
                Ok(worst)
            } else {
                Err(format!("max abs difference {worst:.3e} >= {TOLERANCE:e}"))
            }
        }))
    }
}
