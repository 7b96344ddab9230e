// Support kernels of the profiler: random inputs from a fixed seed,
// references and the checks that gate every timing.
#include "common.cuh"

__device__ __forceinline__ unsigned hash32(unsigned long long i, unsigned seed) {
    unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull + 1;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 29;
    return (unsigned)(x >> 16);
}

// Uniform in [-scale, scale], never exactly zero.
__device__ __forceinline__ float uniform(unsigned long long i, unsigned seed, float scale) {
    float u = ((hash32(i, seed) & 0xFFFFFF) + 0.5f) / 16777216.0f;  // (0, 1)
    return (2.f * u - 1.f) * scale;
}

extern "C" __global__ void fill_random_f16(half_t* p, unsigned long long n, unsigned seed, float scale) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = f2h(uniform(i, seed, scale));
}

extern "C" __global__ void fill_random_f32(float* p, unsigned long long n, unsigned seed, float scale) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = uniform(i, seed, scale);
}

// out[0] += sum (c - r)^2, out[1] += sum r^2, out[2] += count of NaN or
// infinite c (a poisoned element left unwritten is NaN).
extern "C" __global__ void compare_f16(const half_t* c, const half_t* r, unsigned long long n, double* out) {
    double err = 0, ref = 0, bad = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float a = h2f(c[i]), b = h2f(r[i]);
        if (!(fabsf(a) <= 3.0e38f)) {
            bad += 1;
            continue;
        }
        double d = (double)a - (double)b;
        err += d * d;
        ref += (double)b * b;
    }
    for (int off = 16; off > 0; off /= 2) {
        err += __shfl_xor_sync(0xffffffffu, err, off);
        ref += __shfl_xor_sync(0xffffffffu, ref, off);
        bad += __shfl_xor_sync(0xffffffffu, bad, off);
    }
    if (threadIdx.x % 32 == 0) {
        atomicAdd(out, err);
        atomicAdd(out + 1, ref);
        atomicAdd(out + 2, bad);
    }
}

// out[0] = max |y - r| as float bits (non-negative floats order as
// integers), out[1] += count of NaN or infinite y.
extern "C" __global__ void compare_f32(const float* y, const float* r, unsigned long long n, unsigned* out) {
    float worst = 0.f;
    unsigned bad = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float a = y[i];
        if (!(fabsf(a) <= 3.0e38f)) {
            bad++;
            continue;
        }
        worst = fmaxf(worst, fabsf(a - r[i]));
    }
    for (int off = 16; off > 0; off /= 2) {
        worst = fmaxf(worst, __shfl_xor_sync(0xffffffffu, worst, off));
        bad += __shfl_xor_sync(0xffffffffu, bad, off);
    }
    if (threadIdx.x % 32 == 0) {
        atomicMax(out, __float_as_uint(worst));
        atomicAdd(out + 1, bad);
    }
}

// Reference softmax in fp64, one warp per row.
extern "C" __global__ void softmax_reference(const float* X, float* R, int rows, int cols) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* x = X + (size_t)row * cols;
    float* r = R + (size_t)row * cols;
    double m = -1.0e300;
    for (int c = lane; c < cols; c += 32) m = fmax(m, (double)x[c]);
    for (int off = 16; off > 0; off /= 2) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, off));
    double s = 0;
    for (int c = lane; c < cols; c += 32) s += exp((double)x[c] - m);
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    for (int c = lane; c < cols; c += 32) r[c] = (float)(exp((double)x[c] - m) / s);
}

// Fills n 16-bit words with v (the poison before each checked run).
extern "C" __global__ void fill_u16(half_t* p, unsigned long long n, half_t v) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = v;
}

// Reference of an elementwise layer in fp64, one warp per row: `op` as the
// core's ElementwiseKind (0 add, 1 silu_mul, 2 gelu, 3 RMSNorm with the
// weights W), X the first operand, E the second (unread by gelu and the
// norm). Also the vendor chain's stand-in for an epilogue a library does not
// fuse.
extern "C" __global__ void elementwise_reference(int op, const half_t* X, const half_t* E, const half_t* W,
                                                 half_t* R, int rows, int cols) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const half_t* x = X + (size_t)row * cols;
    const half_t* e = E + (size_t)row * cols;
    half_t* r = R + (size_t)row * cols;
    double scale = 1.0;
    if (op == 3) {
        double s = 0;
        for (int c = lane; c < cols; c += 32) s += (double)h2f(x[c]) * h2f(x[c]);
        for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
        scale = 1.0 / sqrt(s / cols + (double)NORM_EPS);
    }
    for (int c = lane; c < cols; c += 32) {
        const double v = h2f(x[c]);
        double y;
        if (op == 0) y = v + h2f(e[c]);
        else if (op == 1) y = v / (1.0 + exp(-v)) * h2f(e[c]);
        else if (op == 2) y = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        else y = v * scale * h2f(W[c]);
        r[c] = f2h((float)y);
    }
}

// Y = op(Y, E) in place over n elements, fp32 arithmetic, two elements a
// thread (n even; a last odd one alone): the separate elementwise kernel a
// library runs after a product where it does not fuse the operation (the
// vendor chain's and the cuBLAS baseline's, beside a fused epilogue).
template <int KIND>
__device__ __forceinline__ void apply_pairs(half_t* Y, const half_t* E, unsigned long long n) {
    for (unsigned long long i = 2 * (blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x); i < n;
         i += 2ull * gridDim.x * blockDim.x) {
        if (i + 1 < n && (n % 2) == 0) {
            const unsigned y = *(const unsigned*)(Y + i), e = OP_BINARY(KIND) ? *(const unsigned*)(E + i) : 0u;
            const float lo = apply_op<KIND>(h2f((half_t)(y & 0xFFFF)), h2f((half_t)(e & 0xFFFF)));
            const float hi = apply_op<KIND>(h2f((half_t)(y >> 16)), h2f((half_t)(e >> 16)));
            *(unsigned*)(Y + i) = (unsigned)f2h(lo) | ((unsigned)f2h(hi) << 16);
        } else {
            for (unsigned long long j = i; j < n && j < i + 2; j++)
                Y[j] = f2h(apply_op<KIND>(h2f(Y[j]), OP_BINARY(KIND) ? h2f(E[j]) : 0.f));
        }
    }
}

extern "C" __global__ void elementwise_apply(int op, half_t* Y, const half_t* E, unsigned long long n) {
    if (op == 0) apply_pairs<0>(Y, E, n);
    else if (op == 1) apply_pairs<1>(Y, E, n);
    else if (op == 2) apply_pairs<2>(Y, E, n);
}

// A batch of fp16 `rows x cols` matrices transposed, one per blockIdx.z:
// what a kernel that reads a matmul's B row-major runs first where B is
// stored K-major.
extern "C" __global__ void __launch_bounds__(256)
    transpose_batched(const half_t* __restrict__ X, half_t* __restrict__ Y, int rows, int cols) {
    transpose_tiles(X, Y, rows, cols);
}
