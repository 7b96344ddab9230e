// Builds `kernels/matmul_tma.cu` through NVRTC for sm_90a as the host does,
// checks every configuration against cuBLAS on random inputs (output
// poisoned first, so an unwritten element fails), and times it beside
// cuBLAS: the median of REPS launches, each between two events.
//
//   nvcc -O2 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
//        matmul_tma_bench.cu -lnvrtc -lcuda -lcublas -o matmul_tma_bench
//   ./matmul_tma_bench KERNEL_DIR [EXTRA_DEFINES...]
//
// One line per (dtype, shape, configuration); `bench.sh` beside this builds
// and runs it on the device. QUICK=1 keeps the first two shapes; DECODE=1
// takes the decode shapes (M <= 16) and the split-K configurations instead;
// PINGPONG=1 the ping-pong configurations beside the cooperative ones of the
// same tiles. With -DSTORE_TMA=1 among the extra options, the kernel stores
// its output through shared memory and TMA: the launch passes C's tensor
// map and the output buffers' shared memory, and a configuration whose
// stages no longer fit beside them runs with as many as fit (the config
// column names them).
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#define CK(x)                                                                      \
    do {                                                                           \
        CUresult r_ = (x);                                                         \
        if (r_ != CUDA_SUCCESS) {                                                  \
            const char* s_;                                                        \
            cuGetErrorString(r_, &s_);                                             \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_);         \
            exit(1);                                                               \
        }                                                                          \
    } while (0)
#define CR(x)                                                                      \
    do {                                                                           \
        cudaError_t r_ = (x);                                                      \
        if (r_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(r_)); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

static const int REPS = 20;

struct Config {
    int bm, bn, consumers, stages, split, pingpong;
};
struct Shape {
    int m, n, k, batch;
    const char* name;
};

__global__ void fill(unsigned short* p, size_t n, unsigned seed, int bf16) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned x = (unsigned)i * 2654435761u ^ seed * 2246822519u;
        x ^= x >> 15;
        x *= 2246822519u;
        x ^= x >> 13;
        float v = (x & 0xFFFFFF) / 8388608.0f - 1.0f;
        p[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16(v)) : __half_as_ushort(__float2half(v));
    }
}

__global__ void compare(const unsigned short* out, const unsigned short* ref, size_t n, int bf16, double* sums,
                        unsigned long long* bad) {
    double e = 0, r = 0;
    unsigned long long b = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float o = bf16 ? __bfloat162float(__ushort_as_bfloat16(out[i])) : __half2float(__ushort_as_half(out[i]));
        float f = bf16 ? __bfloat162float(__ushort_as_bfloat16(ref[i])) : __half2float(__ushort_as_half(ref[i]));
        if (!isfinite(o)) b++;
        else e += (double)(o - f) * (o - f);
        r += (double)f * f;
    }
    atomicAdd(&sums[0], e);
    atomicAdd(&sums[1], r);
    atomicAdd(bad, b);
}

static std::string read(const std::string& p) {
    std::ifstream f(p);
    if (!f) {
        fprintf(stderr, "cannot read %s\n", p.c_str());
        exit(1);
    }
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

static CUmodule build(const std::string& dir, const Config& c, int bf16, const std::vector<std::string>& extra,
                      int* regs, int* local) {
    std::string src = read(dir + "/matmul_tma.cu"), common = read(dir + "/common.cuh");
    size_t at = src.find("#include \"common.cuh\"");
    src.replace(at, strlen("#include \"common.cuh\""), common);
    nvrtcProgram prog;
    nvrtcCreateProgram(&prog, src.c_str(), "matmul_tma.cu", 0, nullptr, nullptr);
    std::vector<std::string> opts = {"-DBM=" + std::to_string(c.bm), "-DBN=" + std::to_string(c.bn),
                                     "-DCONSUMERS=" + std::to_string(c.consumers),
                                     "-DSTAGES=" + std::to_string(c.stages), "-DSPLIT_K=" + std::to_string(c.split),
                                     "-DPINGPONG=" + std::to_string(c.pingpong),
                                     "-DBF16=" + std::to_string(bf16),
                                     "--gpu-architecture=sm_90a", "-std=c++17"};
    for (auto& e : extra) opts.push_back(e);
    std::vector<const char*> o;
    for (auto& s : opts) o.push_back(s.c_str());
    nvrtcResult r = nvrtcCompileProgram(prog, (int)o.size(), o.data());
    size_t n;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, 0);
    nvrtcGetProgramLog(prog, &log[0]);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "nvrtc: %s\n", log.c_str());
        exit(1);
    }
    nvrtcGetCUBINSize(prog, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(prog, cubin.data());
    nvrtcDestroyProgram(&prog);
    CUmodule m;
    CK(cuModuleLoadData(&m, cubin.data()));
    CUfunction f;
    CK(cuModuleGetFunction(&f, m, "matmul_tma"));
    CK(cuFuncGetAttribute(regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
    CK(cuFuncGetAttribute(local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f));
    return m;
}

static CUtensorMap tensor_map(void* p, int bf16, unsigned long long inner, unsigned long long outer,
                              unsigned long long batch, unsigned box_inner, unsigned box_outer) {
    CUtensorMap map;
    cuuint64_t dims[3] = {inner, outer, batch};
    cuuint64_t strides[2] = {inner * 2, inner * outer * 2};
    cuuint32_t box[3] = {box_inner, box_outer, 1};
    cuuint32_t es[3] = {1, 1, 1};
    CK(cuTensorMapEncodeTiled(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, p,
                              dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return map;
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s KERNEL_DIR [EXTRA_NVRTC_OPTIONS...]\n", argv[0]);
        return 2;
    }
    std::string dir = argv[1];
    std::vector<std::string> extra(argv + 2, argv + argc);
    const bool store_tma = std::find(extra.begin(), extra.end(), "-DSTORE_TMA=1") != extra.end();
    CK(cuInit(0));
    CR(cudaSetDevice(0));
    CR(cudaFree(0));
    int sms, smem_max;
    CR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CR(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    cublasHandle_t blas;
    cublasCreate(&blas);

    std::vector<Config> configs = {{128, 256, 2, 4, 1}, {128, 256, 2, 3, 1}, {256, 128, 2, 4, 1},
                                   {128, 128, 2, 6, 1}, {128, 128, 1, 6, 1}, {64, 256, 1, 5, 1},
                                   {64, 128, 1, 8, 1},  {128, 64, 2, 8, 1},  {64, 64, 1, 8, 1}};
    std::vector<Shape> shapes = {{4096, 4096, 4096, 1, "square4k"},      {8192, 8192, 8192, 1, "square8k"},
                                 {4096, 14336, 4096, 1, "llama3_up"},   {4096, 4096, 14336, 1, "llama3_down"},
                                 {2048, 6144, 4096, 1, "llama3_qkv2k"}, {512, 4096, 4096, 1, "prefill512"},
                                 {2048, 2048, 128, 32, "attn_scores"},  {1000, 1032, 776, 3, "odd_batched"},
                                 {77, 50264, 768, 1, "lm_head77"},      {16, 4096, 4096, 1, "decode16"}};
    if (getenv("QUICK")) shapes.resize(2);
    if (getenv("PINGPONG")) {
        configs.clear();
        for (int pp : {0, 1})
            for (Config c : std::vector<Config>{{128, 128, 2, 4, 1}, {128, 128, 2, 6, 1}, {64, 256, 2, 4, 1},
                                                {128, 64, 2, 6, 1}, {64, 128, 2, 6, 1}}) {
                // Ping-pong: BM rows per consumer; cooperative: BM split
                // between the two, so the same tile rows take 2 x BM there.
                c.pingpong = pp;
                if (!pp) c.bm *= 2;
                if (!pp && c.bm * c.bn > 256 * 128) continue;
                configs.push_back(c);
            }
        shapes.erase(shapes.begin() + 1);  // not 8192^3
        shapes.push_back({768, 3072, 768, 1, "gpt2_ffn"});
        shapes.push_back({6304, 3072, 768, 1, "vit_mlp_fc"});
        shapes.push_back({4096, 768, 3072, 1, "bert_ffn_out"});
        shapes.push_back({1024, 1024, 64, 12, "gpt2_scores"});
    }
    if (getenv("DECODE")) {
        configs.clear();
        for (int split : {1, 2, 4, 8}) {
            configs.push_back({64, 64, 1, 6, split});
            configs.push_back({64, 128, 1, 6, split});
            configs.push_back({64, 256, 1, 4, split});
            configs.push_back({128, 128, 2, 4, split});
        }
        shapes = {{1, 6144, 4096, 1, "qkv_b1"},       {8, 6144, 4096, 1, "qkv_b8"},
                  {16, 4096, 4096, 1, "o_proj_b16"},  {1, 28672, 4096, 1, "gate_up_b1"},
                  {16, 4096, 14336, 1, "down_b16"},   {64, 4096, 4096, 1, "o_proj_b64"},
                  {3, 1032, 200, 2, "odd_batched"}};
    }

    // Rows of one consumer warpgroup's output tile, and the shared memory of
    // a configuration: its stages, the barriers (1 KB with STORE_TMA, which
    // puts the output buffers 1 KB-aligned after them), the output buffers,
    // and 1 KB of slack for the alignment.
    auto wg_rows = [](const Config& c) { return c.pingpong ? c.bm : c.bm / c.consumers; };
    auto smem_of = [&](const Config& c) -> unsigned {
        const unsigned stage = (c.bm * 64 + 64 * c.bn) * 2;
        if (!store_tma) return c.stages * stage + 16 * c.stages + 1024;
        return c.stages * stage + 1024 + c.consumers * wg_rows(c) * c.bn * 2 + 1024;
    };
    if (store_tma)
        for (auto& c : configs)
            while (c.stages > 2 && smem_of(c) > (unsigned)smem_max) c.stages--;

    size_t maxA = 0, maxB = 0, maxC = 0, maxW = 0, maxTiles = 0;
    for (auto& s : shapes) {
        maxA = std::max(maxA, (size_t)s.m * s.k * s.batch);
        maxB = std::max(maxB, (size_t)s.k * s.n * s.batch);
        maxC = std::max(maxC, (size_t)s.m * s.n * s.batch);
        for (auto& c : configs) {
            if (c.split > 1) maxW = std::max(maxW, (size_t)c.split * s.m * s.n * s.batch);
            maxTiles = std::max(maxTiles, (size_t)((s.m + c.bm - 1) / c.bm) * ((s.n + c.bn - 1) / c.bn) * s.batch);
        }
    }
    unsigned short *A, *B, *C, *R;
    CR(cudaMalloc(&A, maxA * 2));
    CR(cudaMalloc(&B, maxB * 2));
    CR(cudaMalloc(&C, maxC * 2));
    CR(cudaMalloc(&R, maxC * 2));
    // Split-K's partial sums, and its counters (one per tile, consumer
    // warpgroup and warp; zero, and left zero by every launch).
    float* W;
    unsigned* counters;
    CR(cudaMalloc(&W, std::max(maxW, (size_t)1) * 4));
    CR(cudaMalloc(&counters, maxTiles * 8 * 4));
    CR(cudaMemset(counters, 0, maxTiles * 8 * 4));
    double* sums;
    unsigned long long* bad;
    CR(cudaMalloc(&sums, 16));
    CR(cudaMalloc(&bad, 8));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);

    printf("%-5s %-13s %-22s %-16s %5s %9s %9s %8s %8s %6s\n", "dtype", "shape", "MxNxK xb", "config", "regs",
           "rel_err", "us", "TFLOP/s", "cuBLAS", "ratio");
    int failures = 0;
    for (int bf16 = 0; bf16 < 2; bf16++) {
        std::map<int, std::pair<CUmodule, CUfunction>> mods;
        std::vector<std::pair<int, int>> res(configs.size());
        for (size_t i = 0; i < configs.size(); i++) {
            CUmodule m = build(dir, configs[i], bf16, extra, &res[i].first, &res[i].second);
            CUfunction f;
            CK(cuModuleGetFunction(&f, m, "matmul_tma"));
            mods[i] = {m, f};
        }
        cudaDataType t = bf16 ? CUDA_R_16BF : CUDA_R_16F;
        for (auto& s : shapes) {
            size_t na = (size_t)s.m * s.k * s.batch, nb = (size_t)s.k * s.n * s.batch, nc = (size_t)s.m * s.n * s.batch;
            fill<<<1024, 256>>>(A, na, 1 + s.m, bf16);
            fill<<<1024, 256>>>(B, nb, 7 + s.n, bf16);
            float alpha = 1, beta = 0;
            auto run_blas = [&](unsigned short* out) {
                cublasStatus_t st = cublasGemmStridedBatchedEx(
                    blas, CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, B, t, s.n, (long long)s.k * s.n, A, t, s.k,
                    (long long)s.m * s.k, &beta, out, t, s.n, (long long)s.m * s.n, s.batch, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT);
                if (st != CUBLAS_STATUS_SUCCESS) {
                    fprintf(stderr, "cublas %d\n", (int)st);
                    exit(1);
                }
            };
            run_blas(R);
            std::vector<float> tb;
            for (int r = 0; r < REPS + 3; r++) {
                cudaEventRecord(e0);
                run_blas(C);
                cudaEventRecord(e1);
                CR(cudaEventSynchronize(e1));
                float ms;
                cudaEventElapsedTime(&ms, e0, e1);
                if (r >= 3) tb.push_back(ms * 1000);
            }
            float blas_us = median(tb);
            double flop = 2.0 * s.m * s.n * (double)s.k * s.batch;
            char dims[64];
            snprintf(dims, sizeof dims, "%dx%dx%d x%d", s.m, s.n, s.k, s.batch);
            for (size_t i = 0; i < configs.size(); i++) {
                const Config& c = configs[i];
                CUfunction f = mods[i].second;
                const unsigned smem = smem_of(c);
                if (smem > (unsigned)smem_max) continue;  // more stages than shared memory holds
                CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
                CUtensorMap ma = tensor_map(A, bf16, s.k, s.m, s.batch, 64, 64);
                CUtensorMap mb = tensor_map(B, bf16, s.n, s.k, s.batch, 64, 64);
                if (c.split > (s.k + 63) / 64) continue;  // a split without k-blocks
                int tiles = ((s.m + c.bm - 1) / c.bm) * ((s.n + c.bn - 1) / c.bn) * s.batch;
                int grid = std::min(tiles * c.split, sms);
                int M = s.m, N = s.n, K = s.k, Bt = s.batch;
                void* E = nullptr;  // no fused epilogue
                CUtensorMap mc = tensor_map(C, bf16, s.n, s.m, s.batch, 64, wg_rows(c));
                void* args[] = {&ma, &mb, &C, &W, &counters, &M, &N, &K, &Bt, &E, &mc};  // mc: STORE_TMA only
                auto launch = [&]() {
                    CK(cuLaunchKernel(f, grid, 1, 1, 128 * (c.consumers + 1), 1, 1, smem, 0, args, nullptr));
                };
                CR(cudaMemset(C, 0xFF, nc * 2));
                launch();
                CR(cudaDeviceSynchronize());
                CR(cudaMemset(sums, 0, 16));
                CR(cudaMemset(bad, 0, 8));
                compare<<<1024, 256>>>(C, R, nc, bf16, sums, bad);
                double h[2];
                unsigned long long hb;
                CR(cudaMemcpy(h, sums, 16, cudaMemcpyDeviceToHost));
                CR(cudaMemcpy(&hb, bad, 8, cudaMemcpyDeviceToHost));
                double rel = hb ? INFINITY : sqrt(h[0] / h[1]);
                bool ok = rel < 1e-2;
                failures += !ok;
                std::vector<float> tt;
                for (int r = 0; r < REPS + 3; r++) {
                    cudaEventRecord(e0);
                    launch();
                    cudaEventRecord(e1);
                    CR(cudaEventSynchronize(e1));
                    float ms;
                    cudaEventElapsedTime(&ms, e0, e1);
                    if (r >= 3) tt.push_back(ms * 1000);
                }
                float us = median(tt);
                char cfg[32];
                snprintf(cfg, sizeof cfg, "%dx%d c%d s%d k%d%s", c.bm, c.bn, c.consumers, c.stages, c.split,
                         c.pingpong ? " pp" : "");
                printf("%-5s %-13s %-22s %-16s %5d %9.2e %9.1f %8.1f %8.1f %6.2f%s\n", bf16 ? "bf16" : "f16", s.name,
                       dims, cfg, res[i].first, rel, us, flop / us / 1e6, flop / blas_us / 1e6, blas_us / us,
                       ok ? "" : (hb ? "  FAIL (unwritten/NaN)" : "  FAIL"));
                fflush(stdout);
            }
        }
    }
    printf("failures: %d\n", failures);
    return failures ? 1 : 0;
}
