// Row softmax in fp32: Y[r, :] = exp(X[r, :] - max) / sum(exp(X[r, :] - max)).
//
// Compile-time parameters (-D): COLS (columns a block handles per step)
// and THREADS (threads per row; one block per row). Each thread keeps
// COLS / THREADS elements of a step in registers, loaded coalesced.
//
// A row of at most COLS columns is read once. A longer row takes an online
// pass (running max and rescaled sum, Milakov and Gimelshein 2018), then a
// normalizing pass: two reads and one write.
#include "common.cuh"

#define EPT (COLS / THREADS)
#define WARPS (THREADS / 32)

__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
    float nm = fmaxf(m, m2);
    if (nm == NEG_INF) return;  // both empty
    s = s * expf(m - nm) + s2 * expf(m2 - nm);
    m = nm;
}

// Block-wide (max, sum) of every thread's pair; the result in all threads.
__device__ __forceinline__ void block_combine(float& m, float& s, float* sm_m, float* sm_s) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, off);
        float s2 = __shfl_xor_sync(0xffffffffu, s, off);
        combine(m, s, m2, s2);
    }
    if (WARPS > 1) {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        if (lane == 0) {
            sm_m[warp] = m;
            sm_s[warp] = s;
        }
        __syncthreads();
        m = NEG_INF;
        s = 0.f;
        for (int w = 0; w < WARPS; w++) combine(m, s, sm_m[w], sm_s[w]);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
    softmax(const float* __restrict__ X, float* __restrict__ Y, int rows, int cols) {
    __shared__ float sm_m[WARPS], sm_s[WARPS];
    const size_t row = blockIdx.x;
    if (row >= (size_t)rows) return;
    const float* x = X + row * cols;
    float* y = Y + row * cols;
    const int tid = threadIdx.x;
    float m = NEG_INF, s = 0.f;

    if (cols <= COLS) {
        float v[EPT];
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = j * THREADS + tid;
            v[j] = idx < cols ? x[idx] : NEG_INF;
            m = fmaxf(m, v[j]);
        }
        float lm = m;
#pragma unroll
        for (int j = 0; j < EPT; j++) s += v[j] == NEG_INF ? 0.f : expf(v[j] - lm);
        block_combine(m, s, sm_m, sm_s);
        const float inv = 1.f / s;
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = j * THREADS + tid;
            if (idx < cols) y[idx] = expf(v[j] - m) * inv;
        }
        return;
    }

    for (int c0 = 0; c0 < cols; c0 += COLS) {
        float v[EPT];
        float cm = NEG_INF;
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = c0 + j * THREADS + tid;
            v[j] = idx < cols ? x[idx] : NEG_INF;
            cm = fmaxf(cm, v[j]);
        }
        if (cm == NEG_INF) continue;
        float cs = 0.f;
#pragma unroll
        for (int j = 0; j < EPT; j++) cs += v[j] == NEG_INF ? 0.f : expf(v[j] - cm);
        combine(m, s, cm, cs);
    }
    block_combine(m, s, sm_m, sm_s);
    const float inv = 1.f / s;
    for (int c0 = 0; c0 < cols; c0 += COLS) {
#pragma unroll
        for (int j = 0; j < EPT; j++) {
            int idx = c0 + j * THREADS + tid;
            if (idx < cols) y[idx] = expf(x[idx] - m) * inv;
        }
    }
}
