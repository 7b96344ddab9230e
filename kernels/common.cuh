// Shared helpers of the HW-WFC kernels. The kernels are compiled at run
// time by NVRTC with no CUDA headers: fp16 values are stored as 16-bit
// integers and converted with PTX, and the asynchronous copies, matrix
// loads and tensor-core products are written as inline PTX (sm_80+).
#pragma once

typedef unsigned short half_t;

__device__ __forceinline__ float h2f(half_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ half_t f2h(float f) {
    half_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned a;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

#define NEG_INF __int_as_float(0xff800000)

// The elementwise operations, numbered as the core's ElementwiseKind (wire
// order): 0 `x + e`, 1 `silu(x) * e`, 2 `gelu(x)` (tanh approximation).
// Kind 3, the row norm, reduces whole rows: the elementwise kernel has its
// own path for it, and no matmul epilogue runs it. The sigmoid's
// reciprocal and GELU's tanh use the hardware's approximations (relative
// error about 2^-11, under the fp16 output's rounding): an IEEE division
// or tanhf per element costs a matmul's epilogue, which has few warps to
// hide it, more than its memory traffic.
#define NORM_EPS 1e-5f
#define OP_BINARY(op) ((op) == 0 || (op) == 1)  // whether the operation reads a second operand

__device__ __forceinline__ float rcp_approx(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ float tanh_approx(float x) {
    float r;
    asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

template <int KIND>
__device__ __forceinline__ float apply_op(float x, float e) {
    if (KIND == 0) return x + e;
    if (KIND == 1) return x * rcp_approx(1.f + __expf(-x)) * e;
    if (KIND == 2) return 0.5f * x * (1.f + tanh_approx(0.7978845608f * (x + 0.044715f * x * x * x)));
    return x;
}

// Transposes matrix blockIdx.z of a batch of fp16 `rows x cols` matrices,
// Y[z][c, r] = X[z][r, c], through 32 x 32 tiles in shared memory (padded
// against bank conflicts): blocks of 32 x 8 threads, a grid of
// (ceil(cols / 32), ceil(rows / 32), batch).
__device__ __forceinline__ void transpose_tiles(const half_t* __restrict__ X, half_t* __restrict__ Y, int rows,
                                                int cols) {
    __shared__ half_t tile[32][34];
    X += (size_t)blockIdx.z * rows * cols;
    Y += (size_t)blockIdx.z * rows * cols;
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = X[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols) Y[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
