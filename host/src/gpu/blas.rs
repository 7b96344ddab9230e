//! cuBLAS, the vendor's matmul: the reference a matmul family is checked
//! against and the baseline it is timed beside.

use anyhow::{anyhow, bail, Result};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::CudaSlice;

/// A cuBLAS handle on the stream of every launch.
pub struct Blas {
    handle: CudaBlas,
}

impl Blas {
    /// A handle on `gpu`'s stream.
    pub fn new(gpu: &super::Gpu) -> Result<Blas> {
        Ok(Blas { handle: CudaBlas::new(gpu.stream.clone()).map_err(|e| anyhow!("cuBLAS: {e:?}"))? })
    }

    /// `C = A * B` (row-major, fp16, fp32 accumulation) for `batch`
    /// products of `m x k` by `k x n`; with `b_kmajor`, `b` holds each
    /// `B` as its `n x k` transpose, row-major.
    pub fn gemm_f16(
        &self,
        [m, n, k, batch]: [u32; 4],
        a: &CudaSlice<u16>,
        b: &CudaSlice<u16>,
        b_kmajor: bool,
        c: &mut CudaSlice<u16>,
    ) -> Result<()> {
        use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
        // SAFETY: u16 and half::f16 have the same layout.
        let (a, b) = unsafe { (a.transmute::<half::f16>(a.len()), b.transmute::<half::f16>(b.len())) };
        let (Some(a), Some(b)) = (a, b) else { bail!("cannot view the inputs as f16") };
        let len = c.len();
        // SAFETY: as above.
        let Some(mut cv) = (unsafe { c.transmute_mut::<half::f16>(len) }) else {
            bail!("cannot view the output as f16")
        };
        // Row-major C = A B is column-major C^T = B^T A^T; a row-major
        // K-major B is a column-major B, transposed by cuBLAS.
        let gemm = GemmConfig {
            transa: if b_kmajor { CUBLAS_OP_T } else { CUBLAS_OP_N },
            transb: CUBLAS_OP_N,
            m: n as i32,
            n: m as i32,
            k: k as i32,
            alpha: half::f16::ONE,
            lda: if b_kmajor { k as i32 } else { n as i32 },
            ldb: k as i32,
            beta: half::f16::ZERO,
            ldc: n as i32,
        };
        // SAFETY: the buffers hold batch products of these shapes.
        unsafe {
            if batch == 1 {
                self.handle.gemm(gemm, &b, &a, &mut cv)
            } else {
                let cfg = StridedBatchedConfig {
                    gemm,
                    batch_size: batch as i32,
                    stride_a: k as i64 * n as i64,
                    stride_b: m as i64 * k as i64,
                    stride_c: m as i64 * n as i64,
                };
                self.handle.gemm_strided_batched(cfg, &b, &a, &mut cv)
            }
        }
        .map_err(|e| anyhow!("cuBLAS gemm: {e:?}"))
    }
}
