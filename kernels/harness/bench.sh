#!/usr/bin/env bash
# Builds the harness on a machine with nvcc 13 and an H200, then checks and
# times every configuration of kernels/matmul_tma.cu against cuBLAS.
# Usage (from the repository root): bash kernels/harness/bench.sh [EXTRA_NVRTC_OPTIONS...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-/tmp}"
nvcc -O2 -std=c++17 -gencode arch=compute_90a,code=sm_90a "$here/matmul_tma_bench.cu" \
    -lnvrtc -lcuda -lcublas -o "$out/matmul_tma_bench"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
"$out/matmul_tma_bench" "$here/.." "$@" 2>&1 | tee "$out/matmul_tma_bench.txt"
