// Tiled matmul C[M,N] = A[M,K] * B[K,N], fp16 inputs, fp32 accumulation on
// the tensor cores (mma.sync m16n8k16), fp16 output; all row-major,
// `gridDim.y` independent products (batch) one after another in memory.
//
// Compile-time parameters (-D): BM, BN, BK (block tile), WM, WN (warp grid;
// each warp computes a (BM/WM) x (BN/WN) tile), STAGES (cp.async pipeline
// depth). The core's `space` and `constraint` modules enumerate the valid
// combinations; `resource` computes the same shared-memory size as here.
//
// The grid is one-dimensional: ceil(M/BM) * ceil(N/BN) blocks, in grouped
// order (see GROUP_M); gridDim.y is the batch.
//
// EPILOGUE (optional, -D): an elementwise operation applied to the fp32
// products before they are stored, numbered as in common.cuh (0 add, 1
// silu_mul, 2 gelu), its second operand E read in C's place and layout:
// the matmul and the elementwise layer after it as one kernel. Without it,
// E is not read.
//
// Any shape works: edge tiles are zero-filled on load and masked on store.
// Rows whose length is a multiple of 8 elements load with 16-byte
// cp.async; other rows (K or N odd, say) take a scalar path.
#include "common.cuh"

#define THREADS (32 * WM * WN)
#define PAD 8                 // fp16 elements after each smem row
#define AS (BK + PAD)         // A tile row stride in smem
#define BS (BN + PAD)         // B tile row stride in smem
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MI (WTM / 16)
#define NI (WTN / 8)
#define STAGE_ELEMS (BM * AS + BK * BS)

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#define A_CHUNKS (BM * BK / 8)  // 16-byte chunks of an A tile
#define B_CHUNKS (BK * BN / 8)
#define A_ITERS ((A_CHUNKS + THREADS - 1) / THREADS)
#define B_ITERS ((B_CHUNKS + THREADS - 1) / THREADS)

// Loads the k-tile starting at k0 into the pipeline stage at byte offset
// `stage` of shared memory (`sbase` is the shared address of its start).
// Each thread copies the same chunks of every tile, so the loops have
// constant trip counts and the divisions are shifts.
__device__ __forceinline__ void load_tile(half_t* smem, unsigned sbase, unsigned stage, const half_t* A,
                                          const half_t* B, int M, int N, int K, int m0, int n0, int k0, int tid,
                                          bool vecA, bool vecB) {
    if (vecA) {
#pragma unroll
        for (int j = 0; j < A_ITERS; j++) {
            const int i = tid + j * THREADS;
            if (A_CHUNKS % THREADS == 0 || i < A_CHUNKS) {
                const int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
                const int gr = m0 + r, gc = k0 + c;
                const bool ok = gr < M && gc < K;
                const unsigned dst = sbase + stage + (r * AS + c) * 2;
                // 32-bit offsets from the block's first row: every tensor
                // has fewer than 2^31 elements (the core checks it).
                const half_t* src = A + (size_t)m0 * K + (unsigned)(r * K + gc);
                cp_async16(dst, ok ? (const void*)src : (const void*)A, ok ? 16 : 0);
            }
        }
    } else {
        half_t* sA = (half_t*)((unsigned char*)smem + stage);
        for (int i = tid; i < A_CHUNKS; i += THREADS) {
            const int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
            const int gr = m0 + r, gc = k0 + c;
#pragma unroll
            for (int j = 0; j < 8; j++)
                sA[r * AS + c + j] = (gr < M && gc + j < K) ? A[(size_t)gr * K + gc + j] : (half_t)0;
        }
    }
    const unsigned bstage = stage + BM * AS * 2;
    if (vecB) {
#pragma unroll
        for (int j = 0; j < B_ITERS; j++) {
            const int i = tid + j * THREADS;
            if (B_CHUNKS % THREADS == 0 || i < B_CHUNKS) {
                const int r = i / (BN / 8), c = (i % (BN / 8)) * 8;
                const int gr = k0 + r, gc = n0 + c;
                const bool ok = gr < K && gc < N;
                const unsigned dst = sbase + bstage + (r * BS + c) * 2;
                const half_t* src = B + (unsigned)(gr * N + gc);
                cp_async16(dst, ok ? (const void*)src : (const void*)B, ok ? 16 : 0);
            }
        }
    } else {
        half_t* sB = (half_t*)((unsigned char*)smem + bstage);
        for (int i = tid; i < B_CHUNKS; i += THREADS) {
            const int r = i / (BN / 8), c = (i % (BN / 8)) * 8;
            const int gr = k0 + r, gc = n0 + c;
#pragma unroll
            for (int j = 0; j < 8; j++)
                sB[r * BS + c + j] = (gr < K && gc + j < N) ? B[(size_t)gr * N + gc + j] : (half_t)0;
        }
    }
}

// Grouped block order: consecutive blocks sweep GROUP_M tile rows before
// moving to the next tile column, so the tiles running at once share their
// A and B panels in L2.
#define GROUP_M 8

// Blocks per SM the compiler must leave registers for: two (or more) when
// the accumulators are few enough to fit in 128 registers per thread.
#define ACC_PER_THREAD (BM * BN / THREADS)
#define MIN_BLOCKS ((ACC_PER_THREAD <= 64) ? (65536 / (THREADS * 128)) : 1)

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    matmul(const half_t* __restrict__ A, const half_t* __restrict__ B, half_t* __restrict__ C, int M, int N, int K,
           const half_t* __restrict__ E) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    half_t* smem = (half_t*)smem_raw;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm0 = (warp / WN) * WTM, wn0 = (warp % WN) * WTN;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    int tm, tn;
    {
        const int id = blockIdx.x;
        const int group = id / (GROUP_M * tiles_n);
        const int first_m = group * GROUP_M;
        const int rows = min(tiles_m - first_m, GROUP_M);
        tm = first_m + (id % (GROUP_M * tiles_n)) % rows;
        tn = (id % (GROUP_M * tiles_n)) / rows;
    }
    const int m0 = tm * BM, n0 = tn * BN;
    const unsigned sbase = smem_addr(smem);
    const size_t z = blockIdx.y;
    A += z * (size_t)M * K;
    B += z * (size_t)K * N;
    C += z * (size_t)M * N;
#ifdef EPILOGUE
    E += z * (size_t)M * N;
#endif
    const bool vecA = (K % 8) == 0, vecB = (N % 8) == 0;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int v = 0; v < 4; v++) acc[i][j][v] = 0.f;

    const int KT = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < KT) load_tile(smem, sbase, s * STAGE_ELEMS * 2, A, B, M, N, K, m0, n0, s * BK, tid, vecA, vecB);
        cp_commit();
    }

#pragma unroll 1
    for (int kt = 0; kt < KT; kt++) {
        cp_wait<STAGES - 2>();
        __syncthreads();
        const int nk = kt + STAGES - 1;
        if (nk < KT)
            load_tile(smem, sbase, (nk % STAGES) * STAGE_ELEMS * 2, A, B, M, N, K, m0, n0, nk * BK, tid, vecA, vecB);
        cp_commit();

        const unsigned sA = sbase + (kt % STAGES) * STAGE_ELEMS * 2;
        const unsigned sB = sA + BM * AS * 2;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[MI][4];
            unsigned bf[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                int row = wm0 + mi * 16 + (lane % 16);
                int col = kk + (lane / 16) * 8;
                ldsm_x4(af[mi], sA + (row * AS + col) * 2);
            }
#pragma unroll
            for (int ni = 0; ni < NI; ni += 2) {
                int krow = kk + (lane % 16);
                int col = wn0 + ni * 8 + (lane / 16) * 8;
                unsigned r[4];
                ldsm_x4_t(r, sB + (krow * BS + col) * 2);
                bf[ni][0] = r[0];
                bf[ni][1] = r[1];
                bf[ni + 1][0] = r[2];
                bf[ni + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++) mma16816(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
        }
    }
    cp_wait<0>();

    const bool pairs = (N % 2) == 0;
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
#pragma unroll
        for (int ni = 0; ni < NI; ni++) {
            const int col = n0 + wn0 + ni * 8 + (lane % 4) * 2;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = m0 + wm0 + mi * 16 + lane / 4 + h * 8;
                if (row >= M) continue;
                float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
#ifdef EPILOGUE
                {
                    float e0 = 0.f, e1 = 0.f;
                    if (OP_BINARY(EPILOGUE)) {
                        const half_t* e = E + (size_t)row * N + col;
                        if (col < N) e0 = h2f(e[0]);
                        if (col + 1 < N) e1 = h2f(e[1]);
                    }
                    v0 = apply_op<EPILOGUE>(v0, e0);
                    v1 = apply_op<EPILOGUE>(v1, e1);
                }
#endif
                half_t lo = f2h(v0), hi = f2h(v1);
                half_t* dst = C + (size_t)row * N + col;
                if (pairs && col + 1 < N) {
                    *(unsigned*)dst = (unsigned)lo | ((unsigned)hi << 16);
                } else {
                    if (col < N) dst[0] = lo;
                    if (col + 1 < N) dst[1] = hi;
                }
            }
        }
    }
}
