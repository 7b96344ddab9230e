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
// then the scaling), once otherwise, keeping a step in registers; the
// others read each input once and stream: with rows of a multiple of 8
// elements and 8 or more elements a thread per step, in 16-byte accesses
// (eight adjacent elements a thread), else element by element.
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
    if (EPT % 8 == 0 && cols % 8 == 0) {
        // 16-byte accesses: a thread takes eight adjacent elements of each
        // slab of 8 THREADS, EPT / 8 slabs a step.
        for (int c0 = 0; c0 < cols; c0 += COLS) {
#pragma unroll 4
            for (int j = 0; j < EPT / 8; j++) {
                const int idx = c0 + (j * THREADS + tid) * 8;
                if (idx >= cols) break;
                const uint4 xv = *(const uint4*)(x + idx);
                uint4 ev = make_uint4(0, 0, 0, 0);
                if (OP_BINARY(OP)) ev = *(const uint4*)(e + idx);
                const unsigned xs[4] = {xv.x, xv.y, xv.z, xv.w}, es[4] = {ev.x, ev.y, ev.z, ev.w};
                unsigned ys[4];
#pragma unroll
                for (int p = 0; p < 4; p++) {
                    const float lo = apply_op<OP>(h2f((half_t)(xs[p] & 0xFFFF)), h2f((half_t)(es[p] & 0xFFFF)));
                    const float hi = apply_op<OP>(h2f((half_t)(xs[p] >> 16)), h2f((half_t)(es[p] >> 16)));
                    ys[p] = (unsigned)f2h(lo) | ((unsigned)f2h(hi) << 16);
                }
                *(uint4*)(y + idx) = make_uint4(ys[0], ys[1], ys[2], ys[3]);
            }
        }
        return;
    }
    for (int c0 = 0; c0 < cols; c0 += COLS) {
#pragma unroll 8
        for (int j = 0; j < EPT; j++) {
            const int idx = c0 + j * THREADS + tid;
            if (idx < cols) y[idx] = f2h(apply_op<OP>(h2f(x[idx]), OP_BINARY(OP) ? h2f(e[idx]) : 0.f));
        }
    }
#endif
}
