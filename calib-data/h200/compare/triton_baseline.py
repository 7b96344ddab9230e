"""Triton's autotuner and the vendor libraries on the workloads of
calib-data/workloads.json, for the comparison with HW-WFC's tuning.

For every matmul workload: a Triton tiled matmul (fp16 inputs, fp32
accumulation) autotuned over 48 configurations comparable to ours
(BLOCK_M in 32..256, BLOCK_N in 64..256, BLOCK_K in 32, 64, two
warp/stage settings), and cuBLAS through torch.matmul. For every softmax
workload: a Triton online row softmax autotuned over 20 configurations
(column block 512..4096, 1 to 16 warps), and torch.softmax. Times are
medians of triton.testing.do_bench (which clears the L2 between runs);
the autotuning time is the wall time of the first call (compilation and
benchmarking of every configuration). Outputs are checked against torch.

Usage: python3 triton_baseline.py WORKLOADS.json OUT.json [--budget-s S] [--library-only]

--library-only times the libraries alone (seconds in all), leaving Triton's
fields null: the comparison's vendor column where no time is left for the
autotuner.
"""

import json
import sys
import time

import torch
import triton
import triton.language as tl

MM_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=s)
    for bm in (32, 64, 128, 256)
    for bn in (64, 128, 256)
    for bk in (32, 64)
    for (w, s) in ((4, 3), (8, 4))
]


@triton.autotune(configs=MM_CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sab, sam, sak, sbb, sbk, sbn, scb, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    z = tl.program_id(1).to(tl.int64)
    a_ptr += z * sab
    b_ptr += z * sbb
    c_ptr += z * scb
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    rows = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows
    pid_n = (pid % group) // rows
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + offs_k
        x = tl.load(a, mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tl.load(b, mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
        a += BLOCK_K * sak
        b += BLOCK_K * sbk
    c = c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn
    tl.store(c, acc.to(tl.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


SM_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (512, 1024, 2048, 4096) for w in (1, 2, 4, 8, 16)]


@triton.autotune(configs=SM_CONFIGS, key=["cols"])
@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * cols
    y_row = y_ptr + row.to(tl.int64) * cols
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_row + offs, mask=offs < cols, other=-float("inf"))
        nm = tl.maximum(m, v)
        s = s * tl.exp(m - nm) + tl.exp(v - nm)
        s = tl.where(nm == -float("inf"), 0.0, s)
        m = nm
    gm = tl.max(m, 0)
    gs = tl.sum(s * tl.exp(m - gm), 0)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_row + offs, mask=offs < cols, other=-float("inf"))
        tl.store(y_row + offs, tl.exp(v - gm) / gs, mask=offs < cols)


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


LIBRARY_ONLY = "--library-only" in sys.argv
NOT_RUN = {"triton_ms": None, "autotune_s": None, "best": None}


def run_matmul(w):
    m, n, k, batch = w["m"], w["n"], w["k"], w.get("batch", 1)
    torch.manual_seed(0)
    a = torch.rand((batch, m, k), device="cuda", dtype=torch.float16) * 2 - 1
    b = torch.rand((batch, k, n), device="cuda", dtype=torch.float16) * 2 - 1
    c = torch.empty((batch, m, n), device="cuda", dtype=torch.float16)

    def triton_call():
        grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]), batch)
        matmul_kernel[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride())

    if LIBRARY_ONLY:
        return {**NOT_RUN, "library_ms": bench(lambda: torch.matmul(a, b)), "library": "cuBLAS (torch.matmul)"}
    t0 = time.time()
    triton_call()
    torch.cuda.synchronize()
    autotune_s = time.time() - t0
    ref = torch.matmul(a, b)
    err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
    triton_ms = bench(triton_call)
    cublas_ms = bench(lambda: torch.matmul(a, b))
    return {"triton_ms": triton_ms, "autotune_s": autotune_s, "best": str(matmul_kernel.best_config),
            "rel_err": err, "library_ms": cublas_ms, "library": "cuBLAS (torch.matmul)",
            "configs": len(MM_CONFIGS)}


def run_softmax(w):
    rows, cols = w["rows"], w["cols"]
    torch.manual_seed(0)
    x = torch.rand((rows, cols), device="cuda", dtype=torch.float32) * 8 - 4
    y = torch.empty_like(x)
    call = lambda: softmax_kernel[(rows,)](x, y, cols)
    if LIBRARY_ONLY:
        return {**NOT_RUN, "library_ms": bench(lambda: torch.softmax(x, dim=1)), "library": "torch.softmax"}
    t0 = time.time()
    call()
    torch.cuda.synchronize()
    autotune_s = time.time() - t0
    err = (y - torch.softmax(x.double(), dim=1).float()).abs().max().item()
    triton_ms = bench(call)
    torch_ms = bench(lambda: torch.softmax(x, dim=1))
    return {"triton_ms": triton_ms, "autotune_s": autotune_s, "best": str(softmax_kernel.best_config),
            "max_abs_diff": err, "library_ms": torch_ms, "library": "torch.softmax", "configs": len(SM_CONFIGS)}


def main():
    workloads = json.load(open(sys.argv[1]))
    out_path = sys.argv[2]
    budget = float(sys.argv[sys.argv.index("--budget-s") + 1]) if "--budget-s" in sys.argv else 1e9
    start = time.time()
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
               "library_only": LIBRARY_ONLY, "workloads": {}, "skipped": []}
    for w in workloads:
        if w["kind"] not in ("matmul", "softmax"):
            continue
        if time.time() - start > budget:
            results["skipped"].append(w["name"])
            continue
        r = run_matmul(w) if w["kind"] == "matmul" else run_softmax(w)
        r["kind"] = w["kind"]
        results["workloads"][w["name"]] = r
        ours = "" if LIBRARY_ONLY else f"triton {r['triton_ms'] * 1e3:10.2f} us  autotune {r['autotune_s']:6.2f} s  "
        print(f"{w['name']:32s} {ours}{r['library']} {r['library_ms'] * 1e3:10.2f} us", flush=True)
        json.dump(results, open(out_path, "w"), indent=1)
    json.dump(results, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
