// Elementwise layers in fp16 with fp32 arithmetic, as a row kernel of the
// softmax's shape: one block per row, COLS columns per step, THREADS
// threads, each keeping COLS / THREADS elements of a step in registers,
// loaded coalesced.
//
// Compile-time parameters (-D): COLS, THREADS, and OP, what is computed
// (the core's ElementwiseKind, in its wire order):
//   0  Y = X + E            (a residual add)
//   1  Y = silu(X) * E      (SwiGLU's gate times its up projection)
//   2  Y = gelu(X)          (tanh approximation)
//   3  Y = X * rsqrt(mean(X^2) + eps) * W   (RMSNorm; W: one weight per column)
// OP 3 reads its row twice where it is longer than COLS (a sum of squares,
// then the scaling), once otherwise; the others read each input once.
#include "common.cuh"

#define EPT (COLS / THREADS)
#define WARPS (THREADS / 32)

// Block-wide sum of every thread's value; the result in all threads.
__device__ __forceinline__ float block_sum(float s, float* sm) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (WARPS > 1) {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        if (lane == 0) sm[warp] = s;
        __syncthreads();
        s = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) s += sm[w];
    }
    return s;
}

extern "C" __global__ void __launch_bounds__(THREADS)
    elementwise(const half_t* __restrict__ X, const half_t* __restrict__ E, const half_t* __restrict__ W,
                half_t* __restrict__ Y, int rows, int cols) {
    const size_t row = blockIdx.x;
    if (row >= (size_t)rows) return;
    const half_t* x = X + row * cols;
    half_t* y = Y + row * cols;
    const int tid = threadIdx.x;
#if OP == 3
    __shared__ float sm[WARPS];
    if (cols <= COLS) {
        float v[EPT];
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = j * THREADS + tid;
            v[j] = idx < cols ? h2f(x[idx]) : 0.f;
            s += v[j] * v[j];
        }
        const float scale = rsqrtf(block_sum(s, sm) / cols + NORM_EPS);
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = j * THREADS + tid;
            if (idx < cols) y[idx] = f2h(v[j] * scale * h2f(W[idx]));
        }
        return;
    }
    float s = 0.f;
    for (int c0 = 0; c0 < cols; c0 += COLS) {
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = c0 + j * THREADS + tid;
            float v = idx < cols ? h2f(x[idx]) : 0.f;
            s += v * v;
        }
    }
    const float scale = rsqrtf(block_sum(s, sm) / cols + NORM_EPS);
    for (int c0 = 0; c0 < cols; c0 += COLS) {
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = c0 + j * THREADS + tid;
            if (idx < cols) y[idx] = f2h(h2f(x[idx]) * scale * h2f(W[idx]));
        }
    }
#else
    const half_t* e = E + row * cols;
    for (int c0 = 0; c0 < cols; c0 += COLS) {
        float v[EPT], w[EPT];
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = c0 + j * THREADS + tid;
            v[j] = idx < cols ? h2f(x[idx]) : 0.f;
#if OP != 2
            w[j] = idx < cols ? h2f(e[idx]) : 0.f;
#else
            w[j] = 0.f;
#endif
        }
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = c0 + j * THREADS + tid;
            if (idx < cols) y[idx] = f2h(apply_op<OP>(v[j], w[j]));
        }
    }
#endif
}
