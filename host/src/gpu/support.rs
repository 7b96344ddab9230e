//! The profiler's support kernels (`kernels/support.cu`): random inputs,
//! poisoned outputs, the softmax and elementwise references and the comparisons of an
//! output with its reference, compiled once per run.

use super::launch;
use super::{Gpu, KernelSource, Program};
use cudarc::driver::{CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig};
use std::sync::Arc;

/// `kernels/support.cu`.
pub const SOURCE: KernelSource = crate::kernel_source!("support.cu");

/// Seed of every random input; a buffer's seed is this plus its own offset.
pub const SEED: u32 = 20260321;

/// The bits of a quiet fp16 NaN, the poison of fp16 outputs.
const NAN_F16: u16 = 0x7E00;

/// The compiled support kernels, on the stream of every launch.
pub struct Support {
    module: Arc<CudaModule>,
    stream: Arc<CudaStream>,
}

impl Support {
    /// The support program (no parameters).
    pub fn program() -> Program {
        Program { source: SOURCE, defines: vec![], arch_specific: false }
    }

    /// The support kernels of `module` (compiled from [`Support::program`]).
    pub fn new(gpu: &Gpu, module: Arc<CudaModule>) -> Support {
        Support { module, stream: gpu.stream.clone() }
    }

    /// Compiles and loads the support kernels on `gpu`.
    pub fn compile(gpu: &Gpu) -> anyhow::Result<Support> {
        let ptx = Support::program().compile(&gpu.info.arch()).map_err(|e| anyhow::anyhow!("support.cu: {e}"))?;
        let module = gpu.ctx.load_module(ptx).map_err(|e| anyhow::anyhow!("support.cu: {e:?}"))?;
        Ok(Support::new(gpu, module))
    }

    fn function(&self, name: &str) -> Result<CudaFunction, DriverError> {
        self.module.load_function(name)
    }

    /// Uniform random fp16 values in `[-scale, scale]`.
    pub fn fill_f16(&self, buf: &mut CudaSlice<u16>, seed: u32, scale: f32) -> Result<(), DriverError> {
        launch::fill_random_f16(&self.stream, &self.function("fill_random_f16")?, buf, seed, scale)
    }

    /// Uniform random fp32 values in `[-scale, scale]`.
    pub fn fill_f32(&self, buf: &mut CudaSlice<f32>, seed: u32, scale: f32) -> Result<(), DriverError> {
        launch::fill_random_f32(&self.stream, &self.function("fill_random_f32")?, buf, seed, scale)
    }

    /// Every element of an fp16 output set to NaN, so that an element the
    /// kernel does not write fails the check.
    pub fn poison_f16(&self, buf: &mut CudaSlice<u16>) -> Result<(), DriverError> {
        launch::fill_u16(&self.stream, &self.function("fill_u16")?, buf, NAN_F16)
    }

    /// Every element of an fp32 output set to NaN (all-ones bits).
    pub fn poison_f32(&self, buf: &mut CudaSlice<f32>) -> Result<(), DriverError> {
        launch::memset_f32(&self.stream, buf, 0xFF)
    }

    /// The row softmax of `x` into `reference`, in fp64 arithmetic, one
    /// warp per row.
    pub fn softmax_reference(
        &self,
        x: &CudaSlice<f32>,
        reference: &mut CudaSlice<f32>,
        [rows, cols]: [u32; 2],
    ) -> Result<(), DriverError> {
        let cfg = LaunchConfig { grid_dim: (rows.div_ceil(8), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        launch::rows_f32(&self.stream, &self.function("softmax_reference")?, cfg, x, reference, [rows, cols])
    }

    /// The elementwise operation `kind` of `ops` into `reference`, `rows x
    /// cols`, in fp64 arithmetic, one warp per row.
    pub fn elementwise_reference(
        &self,
        kind: hwwfc_core::ElementwiseKind,
        ops: &launch::ElementwiseOperands<'_>,
        reference: &mut CudaSlice<u16>,
        dims: [u32; 2],
    ) -> Result<(), DriverError> {
        let f = self.function("elementwise_reference")?;
        launch::elementwise_reference(&self.stream, &f, kind_code(kind), ops, reference, dims)
    }

    /// `y = kind(y, e)` in place, fp32 arithmetic: the elementwise layer as
    /// its own kernel after a product (`kind` not the norm, which has no
    /// second operand).
    pub fn elementwise_apply(
        &self,
        kind: hwwfc_core::ElementwiseKind,
        y: &mut CudaSlice<u16>,
        e: &CudaSlice<u16>,
    ) -> Result<(), DriverError> {
        let f = self.function("elementwise_apply")?;
        launch::elementwise_apply(&self.stream, &f, kind_code(kind), y, e)
    }

    /// `y`, `batch` matrices of `cols x rows`, the transposes of the
    /// `rows x cols` matrices of `x` (`kernels/transpose.cu`'s tiles).
    pub fn transpose_f16(
        &self,
        x: &CudaSlice<u16>,
        y: &mut CudaSlice<u16>,
        [rows, cols, batch]: [u32; 3],
    ) -> Result<(), DriverError> {
        let cfg = LaunchConfig {
            grid_dim: (cols.div_ceil(32), rows.div_ceil(32), batch),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        };
        launch::transpose_f16(&self.stream, &self.function("transpose_batched")?, cfg, x, y, [rows, cols])
    }

    /// `out` against `reference`, fp16: the relative error
    /// `||out - ref|| / ||ref||`, or why the output is unusable.
    pub fn relative_error_f16(
        &self,
        out: &CudaSlice<u16>,
        reference: &CudaSlice<u16>,
    ) -> Result<Result<f64, String>, DriverError> {
        let [err, refsq, bad] = launch::compare_f16(&self.stream, &self.function("compare_f16")?, out, reference)?;
        if bad > 0.0 {
            return Ok(Err(format!("{} outputs unwritten or not finite", bad as u64)));
        }
        Ok(Ok((err / refsq.max(f64::MIN_POSITIVE)).sqrt()))
    }

    /// `out` against `reference`, fp32: the largest absolute difference, or
    /// why the output is unusable.
    pub fn max_difference_f32(
        &self,
        out: &CudaSlice<f32>,
        reference: &CudaSlice<f32>,
    ) -> Result<Result<f64, String>, DriverError> {
        let [worst, bad] = launch::compare_f32(&self.stream, &self.function("compare_f32")?, out, reference)?;
        if bad > 0 {
            return Ok(Err(format!("{bad} outputs unwritten or not finite")));
        }
        Ok(Ok(f32::from_bits(worst) as f64))
    }
}

/// The number of an elementwise operation in the kernels (`OP`, the
/// reference's `op`): the core's wire order.
pub fn kind_code(kind: hwwfc_core::ElementwiseKind) -> i32 {
    hwwfc_core::ElementwiseKind::ALL.iter().position(|&k| k == kind).map_or(-1, |i| i as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::ElementwiseKind;

    #[test]
    fn the_kernels_number_the_operations_as_the_core_orders_them() {
        // `common.cuh`'s `apply_op` and `elementwise.cu`'s `OP` read these
        // numbers: 0 add, 1 silu_mul, 2 gelu, 3 the norm.
        let codes = ElementwiseKind::ALL.map(kind_code);
        assert_eq!(codes, [0, 1, 2, 3]);
        assert_eq!(ElementwiseKind::ALL.map(ElementwiseKind::name), ["add", "silu_mul", "gelu", "norm"]);
        let common = include_str!("../../../kernels/common.cuh");
        assert!(common.contains("if (KIND == 0) return x + e;"));
        assert!(common.contains("#define OP_BINARY(op) ((op) == 0 || (op) == 1)"));
    }
}
