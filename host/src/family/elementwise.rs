//! The elementwise layers (`kernels/elementwise.cu`): the residual add,
//! SiLU times gate, GELU and the RMSNorm, fp16 with fp32 arithmetic, as a
//! row kernel of the softmax's shape (a block per row, `COLS` columns per
//! step, `THREADS` threads), the operation compiled in (`OP`). Checked
//! against an fp64 reference on the GPU.

use super::{Config, Inputs, KernelFamily, Tools, Workspace};
use crate::gpu::launch::{self, ElementwiseOperands};
use crate::gpu::support::kind_code;
use crate::gpu::KernelSource;
use anyhow::Result;
use cudarc::driver::{CudaFunction, CudaSlice, DriverError, LaunchConfig};
use hwwfc_core::{ElementwiseKind, Op, OpKind};

/// Largest relative error against the fp64 reference that passes (the
/// output's fp16 rounding is about 3e-4).
pub const TOLERANCE: f64 = 5e-3;

/// Offset of the elementwise inputs' seeds from the run's base seed.
const SEED_OFFSET: u32 = 200;

/// Scale of the random operands: wide enough that SiLU and GELU leave
/// their linear range.
const SCALE: f32 = 3.0;

/// The elementwise family.
pub struct RowElementwise;

/// `(kind, [rows, cols])` of an elementwise layer (`None` for another
/// operator).
fn dims(op: &Op) -> Option<(ElementwiseKind, [u32; 2])> {
    match *op {
        Op::Elementwise { kind, rows, cols, .. } => Some((kind, [rows, cols])),
        Op::MatMul { .. } | Op::Softmax { .. } => None,
    }
}

/// Elements of one `rows x cols` tensor.
fn len(op: &Op) -> usize {
    dims(op).map_or(0, |(_, [r, c])| r as usize * c as usize)
}

impl KernelFamily for RowElementwise {
    fn name(&self) -> &'static str {
        "elementwise"
    }

    fn op_kind(&self) -> OpKind {
        OpKind::Elementwise
    }

    fn source(&self) -> KernelSource {
        crate::kernel_source!("elementwise.cu")
    }

    fn entry(&self) -> &'static str {
        "elementwise"
    }

    /// `OP` is the configuration's operation (a configuration without one,
    /// which [`super::config::configs`] never makes, compiles the add).
    fn defines(&self, c: &Config) -> Vec<(String, u32)> {
        vec![
            ("COLS".into(), c.tile_n as u32),
            ("THREADS".into(), c.threads()),
            ("OP".into(), c.elementwise.map_or(0, kind_code) as u32),
        ]
    }

    fn label(&self, c: &Config) -> String {
        format!("{} c{} t{}", c.elementwise.map_or("?", ElementwiseKind::name), c.tile_n, c.threads())
    }

    fn launch(&self, op: &Op, c: &Config, _sm_count: u32) -> LaunchConfig {
        let rows = dims(op).map_or(1, |(_, [r, _])| r);
        LaunchConfig { grid_dim: (rows, 1, 1), block_dim: (c.threads(), 1, 1), shared_mem_bytes: 0 }
    }

    fn input_set_bytes(&self, op: &Op) -> usize {
        let operands = dims(op).map_or(1, |(k, _)| k.operands() as usize);
        2 * operands * len(op)
    }

    fn output_bytes(&self, op: &Op) -> usize {
        // The output and the reference, fp16, and the norm's weights.
        4 * len(op) + 2 * dims(op).map_or(0, |(_, [_, c])| c as usize)
    }

    fn workspace<'a>(&self, tools: Tools<'a>, op: &Op, inputs: Inputs) -> Result<Box<dyn Workspace + 'a>> {
        let (kind, dims) = dims(op).ok_or_else(|| anyhow::anyhow!("not an elementwise layer"))?;
        let stream = &tools.gpu.stream;
        let n = len(op);
        let mut sets = Vec::new();
        for s in 0..inputs.sets {
            let seed = inputs.seed.wrapping_add(SEED_OFFSET + 2 * s as u32);
            let mut x: CudaSlice<u16> = stream.alloc_zeros(n)?;
            tools.support.fill_f16(&mut x, seed, SCALE)?;
            let e = if kind.operands() > 1 {
                let mut e: CudaSlice<u16> = stream.alloc_zeros(n)?;
                tools.support.fill_f16(&mut e, seed + 1, SCALE)?;
                Some(e)
            } else {
                None
            };
            sets.push((x, e));
        }
        let mut weights: CudaSlice<u16> = stream.alloc_zeros(dims[1] as usize)?;
        tools.support.fill_f16(&mut weights, inputs.seed.wrapping_add(SEED_OFFSET - 1), 1.0)?;
        let mut ws =
            ElementwiseWorkspace { tools, kind, dims, sets, weights, out: stream.alloc_zeros(n)?, reference: None };
        if inputs.reference {
            let mut reference = stream.alloc_zeros::<u16>(n)?;
            tools.support.elementwise_reference(kind, &ws.operands(0), &mut reference, dims)?;
            stream.synchronize()?;
            ws.reference = Some(reference);
        }
        Ok(Box::new(ws))
    }
}

struct ElementwiseWorkspace<'a> {
    tools: Tools<'a>,
    kind: ElementwiseKind,
    dims: [u32; 2],
    /// The first operand and, for the binary kinds, the second, per set.
    sets: Vec<(CudaSlice<u16>, Option<CudaSlice<u16>>)>,
    weights: CudaSlice<u16>,
    out: CudaSlice<u16>,
    reference: Option<CudaSlice<u16>>,
}

impl ElementwiseWorkspace<'_> {
    fn operands(&self, set: usize) -> ElementwiseOperands<'_> {
        let (x, e) = &self.sets[set % self.sets.len()];
        ElementwiseOperands { x, e: e.as_ref().unwrap_or(x), w: &self.weights }
    }
}

impl Workspace for ElementwiseWorkspace<'_> {
    fn poison(&mut self) -> Result<(), DriverError> {
        self.tools.support.poison_f16(&mut self.out)
    }

    fn launch(&mut self, f: &CudaFunction, c: &Config, cfg: LaunchConfig, set: usize) -> Result<(), DriverError> {
        if c.elementwise != Some(self.kind) {
            // A program of another operation would compute something else.
            return Err(DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        let (x, e) = &self.sets[set % self.sets.len()];
        let ops = ElementwiseOperands { x, e: e.as_ref().unwrap_or(x), w: &self.weights };
        launch::elementwise_f16(&self.tools.gpu.stream, f, cfg, &ops, &mut self.out, self.dims)
    }

    fn check(&self) -> Result<Result<f64, String>, DriverError> {
        super::check_f16(self.tools.support, &self.out, self.reference.as_ref(), TOLERANCE)
    }
}
