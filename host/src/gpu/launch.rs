//! Typed kernel launches: one function per C signature of `kernels/`, the
//! only place where the host pushes kernel arguments. Pushing arguments is
//! `unsafe` (the driver cannot check them against the kernel's signature);
//! each function here is safe to call because its parameter list is the
//! signature, written once, next to the C declaration it matches, and the
//! slices carry their lengths.
//!
//! A kernel family whose kernel has a new signature adds one function here;
//! a family with a signature already here (a matmul taking `A, B, C, M, N,
//! K`) adds none.

use super::tensor_map::TensorMap;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtrMut, DriverError, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Threads of a block of the support kernels' one-dimensional grids.
const BLOCK: u32 = 256;

/// A one-dimensional grid of 256-thread blocks over `n` elements (grid-stride
/// loops cover the rest past 8192 blocks).
pub fn grid_for(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n.div_ceil(BLOCK as usize)).clamp(1, 8192) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The output of a product and the second operand of its fused epilogue
/// (the output's shape; unread without an epilogue that has one).
pub struct Output<'a> {
    /// The output `C`.
    pub c: &'a mut CudaSlice<u16>,
    /// The epilogue's second operand `E`.
    pub e: &'a CudaSlice<u16>,
}

/// `kernel(const half_t* A, const half_t* B, half_t* C, int M, int N, int K,
/// const half_t* E)`: a row-major product `C = A B` of `batch` (the grid's
/// y) `M x K` by `K x N` fp16 matrices, `E` the second operand of a fused
/// epilogue (`C`'s shape; unread without one).
pub fn gemm_f16(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    cfg: LaunchConfig,
    a: &CudaSlice<u16>,
    b: &CudaSlice<u16>,
    out: Output<'_>,
    [m, n, k]: [u32; 3],
) -> Result<(), DriverError> {
    let (m, n, k) = (m as i32, n as i32, k as i32);
    let Output { c, e } = out;
    // SAFETY: the arguments are the signature above; the buffers hold the
    // shapes the kernel reads and writes (the caller allocated them for
    // these dimensions).
    unsafe { stream.launch_builder(f).arg(a).arg(b).arg(c).arg(&m).arg(&n).arg(&k).arg(e).launch(cfg) }.map(|_| ())
}

/// The split-K buffers of the Hopper matmul: `SPLIT_K x batch x M x N`
/// fp32 partial sums and one zeroed counter per tile, consumer warpgroup
/// and warp (unread where the kernel is compiled without split-K).
pub struct SplitK<'a> {
    /// The partial sums.
    pub partials: &'a mut CudaSlice<f32>,
    /// The arrival counters, zero before the launch (and after it).
    pub counters: &'a mut CudaSlice<u32>,
}

/// `matmul_tma(TensorMap A, TensorMap B, half_t* C, float* W, unsigned*
/// counters, int M, int N, int K, int batch, const half_t* E)`: the product
/// of the Hopper matmul, its operands described by tensor maps of `batch`
/// row-major `M x K` and `K x N` matrices, `W` and `counters` its split-K
/// buffers, `E` the second operand of a fused epilogue (unread without
/// one).
pub fn gemm_tma(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    cfg: LaunchConfig,
    [a, b]: [&TensorMap; 2],
    out: Output<'_>,
    split: SplitK<'_>,
    [m, n, k, batch]: [u32; 4],
) -> Result<(), DriverError> {
    let Output { c, e } = out;
    let (m, n, k, batch) = (m as i32, n as i32, k as i32, batch as i32);
    let SplitK { partials, counters } = split;
    // SAFETY: the arguments are the signature above; the maps describe the
    // operands of these dimensions, `c` holds `batch * m * n` elements, and
    // the caller sized the split-K buffers for the program's `SPLIT_K`.
    unsafe {
        stream
            .launch_builder(f)
            .arg(a)
            .arg(b)
            .arg(c)
            .arg(partials)
            .arg(counters)
            .arg(&m)
            .arg(&n)
            .arg(&k)
            .arg(&batch)
            .arg(e)
            .launch(cfg)
    }
    .map(|_| ())
}

/// `kernel(const float* X, float* Y, int rows, int cols)`: a row-wise
/// operator on a `rows x cols` fp32 matrix (the softmax, its reference).
pub fn rows_f32(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    cfg: LaunchConfig,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    [rows, cols]: [u32; 2],
) -> Result<(), DriverError> {
    let (r, c) = (rows as i32, cols as i32);
    // SAFETY: the arguments are the signature above, over `rows * cols`
    // elements of each buffer.
    unsafe { stream.launch_builder(f).arg(x).arg(y).arg(&r).arg(&c).launch(cfg) }.map(|_| ())
}

/// `transpose(const half_t* X, half_t* Y, int rows, int cols)`: `Y` (`cols
/// x rows`) the transpose of `X` (`rows x cols`), each of the grid's `z`
/// matrices of a batch.
pub fn transpose_f16(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    cfg: LaunchConfig,
    x: &CudaSlice<u16>,
    y: &mut CudaSlice<u16>,
    [rows, cols]: [u32; 2],
) -> Result<(), DriverError> {
    let (r, c) = (rows as i32, cols as i32);
    // SAFETY: the arguments are the signature above, over `rows * cols`
    // elements of each buffer.
    unsafe { stream.launch_builder(f).arg(x).arg(y).arg(&r).arg(&c).launch(cfg) }.map(|_| ())
}

/// The operands of an elementwise kernel (see `kernels/elementwise.cu`):
/// `x` the first, `e` the second (the residual, the up projection), `w` the
/// norm's weights, one per column; a kernel that does not read `e` or `w`
/// is given `x` in their place.
pub struct ElementwiseOperands<'a> {
    /// The first operand, `rows x cols`.
    pub x: &'a CudaSlice<u16>,
    /// The second operand, `rows x cols`.
    pub e: &'a CudaSlice<u16>,
    /// The weights, `cols`.
    pub w: &'a CudaSlice<u16>,
}

/// `elementwise(const half_t* X, const half_t* E, const half_t* W, half_t*
/// Y, int rows, int cols)`: an elementwise layer's kernel over `rows x
/// cols` fp16 tensors.
pub fn elementwise_f16(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    cfg: LaunchConfig,
    ops: &ElementwiseOperands<'_>,
    y: &mut CudaSlice<u16>,
    [rows, cols]: [u32; 2],
) -> Result<(), DriverError> {
    let (r, c) = (rows as i32, cols as i32);
    // SAFETY: the arguments are the signature above, over `rows * cols`
    // elements of `x`, `e` and `y` and `cols` of `w` (the caller sized them).
    unsafe { stream.launch_builder(f).arg(ops.x).arg(ops.e).arg(ops.w).arg(y).arg(&r).arg(&c).launch(cfg) }.map(|_| ())
}

/// `elementwise_reference(int op, const half_t* X, const half_t* E, const
/// half_t* W, half_t* R, int rows, int cols)`: the fp64 reference of an
/// elementwise layer (`op` the core's `ElementwiseKind` in wire order), one
/// warp per row.
pub fn elementwise_reference(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    op: i32,
    ops: &ElementwiseOperands<'_>,
    r: &mut CudaSlice<u16>,
    [rows, cols]: [u32; 2],
) -> Result<(), DriverError> {
    let cfg = LaunchConfig { grid_dim: (rows.div_ceil(8), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let (rr, c) = (rows as i32, cols as i32);
    // SAFETY: as for `elementwise_f16`, with the operation first.
    unsafe { stream.launch_builder(f).arg(&op).arg(ops.x).arg(ops.e).arg(ops.w).arg(r).arg(&rr).arg(&c).launch(cfg) }
        .map(|_| ())
}

/// `elementwise_apply(int op, half_t* Y, const half_t* E, u64 n)`: `Y =
/// op(Y, E)` in place over every element of `y` (`op` not the norm).
pub fn elementwise_apply(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    op: i32,
    y: &mut CudaSlice<u16>,
    e: &CudaSlice<u16>,
) -> Result<(), DriverError> {
    let n = y.len() as u64;
    let cfg = grid_for(y.len().div_ceil(2));
    // SAFETY: the signature above; reads `n` elements of `e` (the caller
    // sized it as `y`) and rewrites the `n` of `y`.
    unsafe { stream.launch_builder(f).arg(&op).arg(y).arg(e).arg(&n).launch(cfg) }.map(|_| ())
}

/// `fill_random_f16(half_t* p, u64 n, unsigned seed, float scale)`:
/// uniform random values in `[-scale, scale]` into every element of `buf`.
pub fn fill_random_f16(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    buf: &mut CudaSlice<u16>,
    seed: u32,
    scale: f32,
) -> Result<(), DriverError> {
    let n = buf.len() as u64;
    let cfg = grid_for(buf.len());
    // SAFETY: the signature above; writes the `n` elements of `buf`.
    unsafe { stream.launch_builder(f).arg(buf).arg(&n).arg(&seed).arg(&scale).launch(cfg) }.map(|_| ())
}

/// `fill_random_f32(float* p, u64 n, unsigned seed, float scale)`: uniform
/// random values in `[-scale, scale]` into every element of `buf`.
pub fn fill_random_f32(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    buf: &mut CudaSlice<f32>,
    seed: u32,
    scale: f32,
) -> Result<(), DriverError> {
    let n = buf.len() as u64;
    let cfg = grid_for(buf.len());
    // SAFETY: the signature above; writes the `n` elements of `buf`.
    unsafe { stream.launch_builder(f).arg(buf).arg(&n).arg(&seed).arg(&scale).launch(cfg) }.map(|_| ())
}

/// `fill_u16(half_t* p, u64 n, half_t v)`: `value` into every element of
/// `buf`.
pub fn fill_u16(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    buf: &mut CudaSlice<u16>,
    value: u16,
) -> Result<(), DriverError> {
    let n = buf.len() as u64;
    let cfg = grid_for(buf.len());
    // SAFETY: the signature above; writes the `n` elements of `buf`.
    unsafe { stream.launch_builder(f).arg(buf).arg(&n).arg(&value).launch(cfg) }.map(|_| ())
}

/// Every byte of `buf` set to `byte` (no kernel: the driver's memset).
pub fn memset_f32(stream: &Arc<CudaStream>, buf: &mut CudaSlice<f32>, byte: u8) -> Result<(), DriverError> {
    let bytes = buf.len() * 4;
    let (ptr, _guard) = buf.device_ptr_mut(stream);
    // SAFETY: writes the `bytes` bytes of `buf`, on the stream it is used on.
    unsafe { cudarc::driver::result::memset_d8_async(ptr, byte, bytes, stream.cu_stream()) }
}

/// `compare_f16(const half_t* c, const half_t* r, u64 n, double* out)`:
/// the sum of squared differences, the sum of squared references, and the
/// count of outputs that are not finite.
pub fn compare_f16(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    out: &CudaSlice<u16>,
    reference: &CudaSlice<u16>,
) -> Result<[f64; 3], DriverError> {
    let mut acc: CudaSlice<f64> = stream.alloc_zeros(3)?;
    let n = out.len() as u64;
    let cfg = grid_for(out.len());
    // SAFETY: the signature above; reads `n` elements of each input and
    // writes the 3 doubles of `acc`.
    unsafe { stream.launch_builder(f).arg(out).arg(reference).arg(&n).arg(&mut acc).launch(cfg) }?;
    let v = stream.clone_dtoh(&acc)?;
    Ok([v[0], v[1], v[2]])
}

/// `compare_f32(const float* y, const float* r, u64 n, unsigned* out)`:
/// the bits of the largest absolute difference, and the count of outputs
/// that are not finite.
pub fn compare_f32(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    out: &CudaSlice<f32>,
    reference: &CudaSlice<f32>,
) -> Result<[u32; 2], DriverError> {
    let mut acc: CudaSlice<u32> = stream.alloc_zeros(2)?;
    let n = out.len() as u64;
    let cfg = grid_for(out.len());
    // SAFETY: the signature above; reads `n` elements of each input and
    // writes the 2 words of `acc`.
    unsafe { stream.launch_builder(f).arg(out).arg(reference).arg(&n).arg(&mut acc).launch(cfg) }?;
    let v = stream.clone_dtoh(&acc)?;
    Ok([v[0], v[1]])
}
