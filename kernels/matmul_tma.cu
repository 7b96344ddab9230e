// Hopper matmul C[M,N] = A[M,K] * B[K,N]: TMA loads into 128-byte-swizzled
// shared memory, an mbarrier pipeline, wgmma from shared memory, one
// producer warpgroup and CONSUMERS consumer warpgroups, a persistent grid
// over the output tiles in grouped order. fp16 (or bf16 with -D BF16=1)
// inputs, fp32 accumulation, output in the input type; all row-major, the
// batch as the tensors' third dimension. sm_90a only.
//
// Compile-time parameters (-D): BM (tile rows: CONSUMERS x 64 or
// CONSUMERS x 128; 64 or 128 with PINGPONG), BN (tile columns, the wgmma
// N: 64, 128 or 256), STAGES (pipeline depth), CONSUMERS (1 or 2),
// SPLIT_K (1 by default: the reduction dimension cut into SPLIT_K ranges,
// each its own unit of work; at most ceil(K / 64), so that every split has
// a k-block), PINGPONG (0 by default: the consumers share each tile's
// rows; 1, with two consumers: each takes every other unit whole, and
// their main loops take turns, so that one's epilogue runs under the
// other's main loop). The reduction step is 64 elements: one 128-byte
// swizzle atom.
//
// Split-K: unit u is split u % SPLIT_K of tile u / SPLIT_K, over the
// k-blocks [s KT / SPLIT_K, (s + 1) KT / SPLIT_K). Each warp of a split
// writes its fp32 partial sums to the workspace W (SPLIT_K x batch x M x
// N floats), fences, and counts itself in `counters` (one per tile,
// consumer warpgroup and warp, zero before the launch); the warp that
// counts last adds every split's partial in split order (the same sums
// whichever arrives last), writes the output and sets its counter back to
// zero for the next launch. No block waits for another. With SPLIT_K 1, W
// and `counters` are not touched.
//
// EPILOGUE (optional, -D): an elementwise operation applied to the
// output as it is stored, numbered as in common.cuh (0 add, 1 silu_mul, 2
// gelu), its second operand E read in C's place and layout, 16 bytes a lane
// as the output is written (after the product is rounded to the output
// type): the matmul and the elementwise layer after it as one kernel. A
// consumer asks for its rows of E in the L2 when it starts a tile (the
// last split's, with split-K), and loads a row's E whole before using it,
// so that the loads overlap the main loop and one another. Without it, E
// is not read.
//
// B_KMAJOR (0 by default): B is given transposed, as its N x K
// transpose, row-major (K contiguous: PyTorch's Linear weights, attention's
// K read for Q K^T); its tensor map loads boxes of 64 (n) rows x 64 (k) as
// for A, and wgmma reads it K-major, not transposed. The cost of a layout
// change made in the loads, where a separate kernel would rewrite B.
//
// STORE_TMA (0 by default): the epilogue writes the tile, rounded to the
// output type, into shared memory (each consumer warpgroup its own WG_M x
// BN buffer after the barriers, in 64-column boxes swizzled as the loads'),
// and one thread of the warpgroup hands it to the TMA engine as bulk tensor
// stores (the extra parameter mapC: C's tensor map, boxes of 64 columns x
// WG_M rows), so that the warpgroup goes on to its next tile's main loop
// while the stores drain; before it writes the buffer again, it waits until
// the previous tile's stores have read it. Not with split-K or EPILOGUE.
//
// Shapes: any M; K and N multiples of 8 (TMA needs 16-byte row strides);
// edge tiles are zero-filled by TMA on load and masked on store.
//
// Both tensor maps load boxes of 64 x 64 elements. Shared memory of one
// stage: A as BM/64 boxes of 64 rows x 64 (K-major, row r at r x 128
// bytes), B as BN/64 boxes of 64 (k) rows x 64 (n) columns
// (MN-major: wgmma reads it transposed), or with B_KMAJOR of 64 (n) rows x
// 64 (k) like A's, each box swizzled in 128-byte rows by TMA and read
// through the same swizzle by wgmma.
#include "common.cuh"

#ifndef BF16
#define BF16 0
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef B_KMAJOR
#define B_KMAJOR 0
#endif
#ifndef STORE_TMA
#define STORE_TMA 0
#endif
#if STORE_TMA && (SPLIT_K > 1 || defined(EPILOGUE))
#error "STORE_TMA takes neither split-K nor a fused epilogue"
#endif
// wgmma's immediates: the scales of A and B, then whether each is read
// transposed (MN-major): A never, B unless it is K-major.
#if B_KMAJOR
#define WG_IMM "p, 1, 1, 0, 0"
#else
#define WG_IMM "p, 1, 1, 0, 1"
#endif
#if PINGPONG && CONSUMERS != 2
#error "PINGPONG takes two consumer warpgroups"
#endif
#if BF16
#define WG_AB "bf16.bf16"
#else
#define WG_AB "f16.f16"
#endif

#define BK 64
#if PINGPONG
#define WG_M BM  // each consumer warpgroup computes whole tiles
#else
#define WG_M (BM / CONSUMERS)  // rows of one consumer warpgroup
#endif
#define MI (WG_M / 64)         // m64 instructions per consumer per k16 step
#define THREADS (128 * (CONSUMERS + 1))
#define A_BYTES (BM * BK * 2)
#define A_BOX_BYTES (64 * BK * 2)  // one 64-row box of A
#define B_BOX_BYTES (BK * 64 * 2)  // one 64-column box of B
#define B_BYTES (BN * BK * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define GROUP_M 8
#define ROWS8_BYTES 1024  // bytes from one 8-row group of a swizzled box to the next
#define BARRIER_BYTES 1024  // the stages' barriers, padded so that what follows is 1024-aligned
#define OUT_BYTES (WG_M * BN * 2)  // STORE_TMA: one consumer's output tile in shared memory

// A tensor map as the driver encodes it (cuTensorMapEncodeTiled): 128
// opaque bytes, passed by value as a __grid_constant__ parameter.
struct __align__(64) TensorMap {
    unsigned long long opaque[16];
};

__device__ __forceinline__ half_t to_out(float f) {
#if BF16
    half_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    return f2h(f);
#endif
}

// Two values rounded to the output type, packed into one 32-bit word
// (`lo` in the low half): two neighbouring columns of C.
__device__ __forceinline__ unsigned pack_out(float lo, float hi) {
    return to_out(lo) | ((unsigned)to_out(hi) << 16);
}

__device__ __forceinline__ float from_out(unsigned h) {
#if BF16
    return __uint_as_float(h << 16);
#else
    return h2f((half_t)h);
#endif
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ unsigned mbar_try_wait(unsigned bar, unsigned parity) {
    unsigned done;
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    return done;
}
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
// Waits until the phase of parity `parity` of the barrier has completed.
// A wait of more than 10 s can only be a bug (a load that never lands): the
// thread traps, so that the launch fails with an error instead of hanging.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    if (mbar_try_wait(bar, parity)) return;
    const unsigned long long start = global_ns();
    for (unsigned spin = 1; !mbar_try_wait(bar, parity); spin++)
        if (spin % 1024 == 0 && global_ns() - start > 10000000000ull) asm volatile("trap;");
}
// A box of the 3-d tensor `map` at coordinates (c0 innermost, c1, c2) into
// shared memory at `dst`, completing on barrier `bar`.
__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, int c0, int c1, int c2, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
        "[%5];\n" ::"r"(dst),
        "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}

// The box of shared memory at `src` to the 3-d tensor `map` at coordinates
// (c0 innermost, c1, c2), as part of this thread's current bulk group; TMA
// leaves out what falls outside the tensor.
__device__ __forceinline__ void tma_store(const TensorMap* map, unsigned src, int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(map),
        "r"(c0), "r"(c1), "r"(c2), "r"(src)
        : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until this thread's bulk groups have read their shared memory.
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// Waits until this thread's bulk groups are complete.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// A shared-memory matrix descriptor of wgmma: start address, leading and
// stride byte offsets (16-byte units), 128-byte swizzle.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// The wgmma instructions, one per N: A (K-major) and B (MN-major,
// transposed, or K-major with B_KMAJOR: WG_IMM) from shared-memory
// descriptors; the
// accumulators are scaled by `scale_d` (0 on a tile's first step, which
// overwrites them). Each lists its accumulator registers.
// m64n64k16: 32 fp32 accumulators per thread.
__device__ __forceinline__ void wgmma_n64(float (&d)[32], unsigned long long da, unsigned long long db, int scale_d) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %34, 0; "
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." WG_AB " "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, " WG_IMM "; }\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(scale_d));
}

// m64n128k16: 64 fp32 accumulators per thread.
__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long da, unsigned long long db, int scale_d) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %66, 0; "
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." WG_AB " "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, " WG_IMM "; }\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}

// m64n256k16: 128 fp32 accumulators per thread.
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da, unsigned long long db, int scale_d) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %130, 0; "
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." WG_AB " "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, " WG_IMM "; }\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

#define WGMMA_(n) wgmma_n##n
#define WGMMA(n) WGMMA_(n)

// Output tile `t` of the persistent loop: batch z, first row m0 and column
// n0, in grouped order within one product.
__device__ __forceinline__ void tile_origin(int t, int tiles_m, int tiles_n, int& z, int& m0, int& n0) {
    const int per = tiles_m * tiles_n;
    z = t / per;
    const int id = t % per;
    const int group = id / (GROUP_M * tiles_n);
    const int first_m = group * GROUP_M;
    const int rows = min(tiles_m - first_m, GROUP_M);
    m0 = (first_m + (id % (GROUP_M * tiles_n)) % rows) * BM;
    n0 = ((id % (GROUP_M * tiles_n)) / rows) * BN;
}

// The k-blocks [kb, ke) of split `sp`.
__device__ __forceinline__ void split_range(int sp, int KT, int& kb, int& ke) {
    kb = (int)((long long)sp * KT / SPLIT_K);
    ke = (int)((long long)(sp + 1) * KT / SPLIT_K);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul_tma(const __grid_constant__ TensorMap mapA, const __grid_constant__ TensorMap mapB,
               half_t* __restrict__ C, float* __restrict__ W, unsigned* __restrict__ counters, int M, int N, int K,
               int batch, const half_t* __restrict__ E
#if STORE_TMA
               ,
               const __grid_constant__ TensorMap mapC
#endif
    ) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // Swizzled boxes need 1024-byte alignment: the launch adds 1 KB of slack.
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned full = base + STAGES * STAGE_BYTES;  // STAGES barriers: the stage is loaded
    const unsigned empty = full + 8 * STAGES;           // STAGES barriers: the stage is consumed
    const int wg = threadIdx.x / 128;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n * batch;
    const int units = tiles * SPLIT_K;
    const int KT = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, (PINGPONG ? 1 : CONSUMERS) * 128);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // Producer: one thread issues every load.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int u = blockIdx.x; u < units; u += gridDim.x) {
                int z, m0, n0, kb, ke;
                tile_origin(u / SPLIT_K, tiles_m, tiles_n, z, m0, n0);
                split_range(u % SPLIT_K, KT, kb, ke);
                for (int kt = kb; kt < ke; kt++, it++) {
                    const int s = it % STAGES;
                    mbar_wait(empty + 8 * s, ((it / STAGES) & 1) ^ 1);
                    const unsigned bar = full + 8 * s, dst = base + s * STAGE_BYTES;
                    mbar_expect_tx(bar, STAGE_BYTES);
#pragma unroll
                    for (int i = 0; i < BM / 64; i++)
                        tma_load(dst + i * A_BOX_BYTES, &mapA, kt * BK, m0 + 64 * i, z, bar);
#pragma unroll
                    for (int j = 0; j < BN / 64; j++)
#if B_KMAJOR
                        tma_load(dst + A_BYTES + j * B_BOX_BYTES, &mapB, kt * BK, n0 + 64 * j, z, bar);
#else
                        tma_load(dst + A_BYTES + j * B_BOX_BYTES, &mapB, n0 + 64 * j, kt * BK, z, bar);
#endif
                }
            }
        }
    } else {
        // Consumers: warpgroup c computes rows [c WG_M, (c+1) WG_M) of the tile.
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int c = wg - 1, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
        // The consumer's first row in a tile, and its index among the
        // warpgroups that share a tile (ping-pong: each has its own).
        const int crow = PINGPONG ? 0 : c * WG_M, cshare = PINGPONG ? 0 : c;
        float d[MI][BN / 2];
        int it = 0, j = 0;
        for (int u = blockIdx.x; u < units; u += gridDim.x, j++) {
            const int t = u / SPLIT_K, sp = u % SPLIT_K;
            int z, m0, n0, kb, ke;
            tile_origin(t, tiles_m, tiles_n, z, m0, n0);
            split_range(sp, KT, kb, ke);
#if PINGPONG
            // Units alternate between the two consumers; a consumer skips
            // the other's stages, and starts its main loop only once the
            // other has finished the previous unit's (named barrier 1 + c,
            // the other's arrival and this one's wait), so that the
            // stages it waits for are never more than one phase ahead and
            // one consumer's epilogue overlaps the other's main loop.
            if ((j & 1) != c) {
                it += ke - kb;
                continue;
            }
            if (j > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(1 + c) : "memory");
#endif
#if defined(EPILOGUE)
            if (OP_BINARY(EPILOGUE) && sp == SPLIT_K - 1) {
                // The epilogue's second operand, rows of this consumer,
                // fetched into the L2 under the main loop: one 128-byte
                // line per lane and step (BN * 2 / 128 lines a row).
                const half_t* e0 = E + (size_t)z * M * N;
                for (int l = tid; l < WG_M * (BN / 64); l += 128) {
                    const int row = m0 + crow + l / (BN / 64), col = n0 + 64 * (l % (BN / 64));
                    if (row < M && col < N) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(e0 + (size_t)row * N + col));
                }
            }
#endif
            for (int kt = kb; kt < ke; kt++, it++) {
                const int s = it % STAGES;
                mbar_wait(full + 8 * s, (it / STAGES) & 1);
                const unsigned a = base + s * STAGE_BYTES + crow * 128, b = base + s * STAGE_BYTES + A_BYTES;
                wgmma_fence();
#pragma unroll
                for (int k = 0; k < BK / 16; k++) {
#if B_KMAJOR
                    // As A: 16 k a step within each 128-byte row, 8-row
                    // groups 1 KB apart across the BN / 64 boxes.
                    const unsigned long long db = smem_desc(b + k * 32, 16, ROWS8_BYTES);
#else
                    const unsigned long long db = smem_desc(b + k * 2048, B_BOX_BYTES, ROWS8_BYTES);
#endif
#pragma unroll
                    for (int mi = 0; mi < MI; mi++)
                        WGMMA(BN)(d[mi], smem_desc(a + mi * 64 * 128 + k * 32, 16, ROWS8_BYTES), db, kt != kb || k != 0);
                }
                wgmma_commit();
                // Keep this step's products in flight; the previous step's
                // are done, so its stage goes back to the producer.
                wgmma_wait<1>();
                if (kt > kb) mbar_arrive(empty + 8 * ((it - 1) % STAGES));
            }
            wgmma_wait<0>();
            mbar_arrive(empty + 8 * ((it - 1) % STAGES));
#if PINGPONG
            if (u + gridDim.x < units) asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - c) : "memory");
#endif
            const int q = lane % 4;
#if SPLIT_K > 1
            {
                // This warp's partial sums to W: lane (r, q) holds columns
                // 8 g + 2 q and 8 g + 2 q + 1 of rows r and r + 8.
                const size_t plane = (size_t)batch * M * N;
                float* part = W + (size_t)z * M * N;
#pragma unroll
                for (int mi = 0; mi < MI; mi++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int row = m0 + crow + mi * 64 + warp * 16 + lane / 4 + 8 * h;
#pragma unroll
                        for (int g = 0; g < BN / 8; g++) {
                            const int col = n0 + 8 * g + 2 * q;
                            if (row < M && col < N)
                                __stcg((float2*)(part + sp * plane + (size_t)row * N + col),
                                       make_float2(d[mi][4 * g + 2 * h], d[mi][4 * g + 2 * h + 1]));
                        }
                    }
                __threadfence();
                __syncwarp();
                unsigned* counter = counters + ((size_t)t * CONSUMERS + cshare) * 4 + warp;
                unsigned arrived = 0;
                if (lane == 0) arrived = atomicAdd(counter, 1u);
                arrived = __shfl_sync(0xffffffffu, arrived, 0);
                if (arrived != SPLIT_K - 1) continue;  // another split finishes this tile
                if (lane == 0) *counter = 0;
                __threadfence();
                // The last split: every split's partial, in split order.
#pragma unroll
                for (int mi = 0; mi < MI; mi++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int row = m0 + crow + mi * 64 + warp * 16 + lane / 4 + 8 * h;
#pragma unroll
                        for (int g = 0; g < BN / 8; g++) {
                            const int col = n0 + 8 * g + 2 * q;
                            if (row < M && col < N) {
                                float2 sum = make_float2(0.0f, 0.0f);
                                for (int s = 0; s < SPLIT_K; s++) {
                                    const float2 v = s == sp ? make_float2(d[mi][4 * g + 2 * h], d[mi][4 * g + 2 * h + 1])
                                                             : __ldcg((const float2*)(part + s * plane + (size_t)row * N + col));
                                    sum.x += v.x;
                                    sum.y += v.y;
                                }
                                d[mi][4 * g + 2 * h] = sum.x;
                                d[mi][4 * g + 2 * h + 1] = sum.y;
                            }
                        }
                    }
            }
#endif
#if STORE_TMA
            // Epilogue through shared memory: lane (r, q) holds columns
            // 8 g + 2 q and 8 g + 2 q + 1 of rows r and r + 8; each pair
            // goes to its 16-byte chunk of the row, the chunk index
            // swizzled by the row (as TMA's 128-byte swizzle), so that a
            // warp's 32 stores fall on 32 banks. Thread 0 of the
            // warpgroup first waits for the previous tile's stores to
            // have read the buffer (named barrier 3 + c, this warpgroup's
            // 128 threads).
            const unsigned stage_out = full + BARRIER_BYTES + c * OUT_BYTES;
            if (tid == 0) bulk_wait_read();
            asm volatile("bar.sync %0, 128;\n" ::"r"(3 + c) : "memory");
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int row = mi * 64 + warp * 16 + lane / 4 + 8 * h;
#pragma unroll
                    for (int g = 0; g < BN / 8; g++) {
                        const unsigned v = pack_out(d[mi][4 * g + 2 * h], d[mi][4 * g + 2 * h + 1]);
                        const unsigned at = stage_out + (g / 8) * (WG_M * 128) + row * 128 +
                                            (((g % 8) ^ (row % 8)) * 16) + 4 * q;
                        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(v) : "memory");
                    }
                }
            // The writes are the generic proxy's; TMA reads through the
            // async proxy.
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            asm volatile("bar.sync %0, 128;\n" ::"r"(3 + c) : "memory");
            if (tid == 0) {
#pragma unroll
                for (int b = 0; b < BN / 64; b++) tma_store(&mapC, stage_out + b * (WG_M * 128), n0 + 64 * b, m0 + crow, z);
                bulk_commit();
            }
#else
            // Epilogue: registers to global memory. A quad of lanes holds
            // two columns of each 8-column group of a row; four shuffles
            // turn four groups around so that each lane stores one whole
            // group, 16 bytes (N is a multiple of 8, so a group is inside
            // or outside the matrix as a whole).
            half_t* out = C + (size_t)z * M * N;
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int row = m0 + crow + mi * 64 + warp * 16 + lane / 4 + 8 * h;
#ifdef EPILOGUE
                    // Every load of the row's second operand issued before
                    // the first is used: BN / 32 in flight, not one.
                    uint4 ev[BN / 32];
#pragma unroll
                    for (int g = 0; g < BN / 32; g++) {
                        const int col = n0 + 8 * (4 * g + q);
                        ev[g] = make_uint4(0, 0, 0, 0);
                        if (OP_BINARY(EPILOGUE) && row < M && col < N)
                            ev[g] = *(const uint4*)(E + (size_t)z * M * N + (size_t)row * N + col);
                    }
#endif
#pragma unroll
                    for (int jb = 0; jb < BN / 8; jb += 4) {
                        unsigned pair[4], mine[4];
#pragma unroll
                        for (int x = 0; x < 4; x++)
                            pair[x] = pack_out(d[mi][4 * (jb + x) + 2 * h], d[mi][4 * (jb + x) + 2 * h + 1]);
#pragma unroll
                        for (int r = 0; r < 4; r++) {
                            // Round r: lane q offers its pair of group (q + r) % 4
                            // and takes, from lane (q - r) % 4, that lane's pair
                            // of group q.
                            const int give = (q + r) & 3, from = (q - r) & 3;
                            unsigned v = give == 0 ? pair[0] : give == 1 ? pair[1] : give == 2 ? pair[2] : pair[3];
                            v = __shfl_sync(0xffffffffu, v, (lane & ~3) | from);
#pragma unroll
                            for (int x = 0; x < 4; x++)
                                if (x == from) mine[x] = v;
                        }
                        const int col = n0 + 8 * (jb + q);
                        if (row < M && col < N) {
#ifdef EPILOGUE
                            const uint4 e = ev[jb / 4];
                            const unsigned ew[4] = {e.x, e.y, e.z, e.w};
#pragma unroll
                            for (int x = 0; x < 4; x++) {
                                const float lo = apply_op<EPILOGUE>(from_out(mine[x] & 0xFFFF), from_out(ew[x] & 0xFFFF));
                                const float hi = apply_op<EPILOGUE>(from_out(mine[x] >> 16), from_out(ew[x] >> 16));
                                mine[x] = pack_out(lo, hi);
                            }
#endif
                            uint4 w = make_uint4(mine[0], mine[1], mine[2], mine[3]);
                            *(uint4*)(out + (size_t)row * N + col) = w;
                        }
                    }
                }
            }
#endif
        }
#if STORE_TMA
        // The block's shared memory must outlive the last stores' reads.
        if (tid == 0) bulk_wait();
#endif
    }
}
