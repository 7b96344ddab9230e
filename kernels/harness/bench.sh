#!/usr/bin/env bash
# Builds the harness on a machine with nvcc 13 and a Hopper GPU, then checks
# and times every configuration of kernels/matmul_tma.cu against cuBLAS.
# Usage (from the repository root): bash kernels/harness/bench.sh [EXTRA_NVRTC_OPTIONS...]
# The table goes to $OUT/matmul_tma_bench${TAG:+-$TAG}.txt (OUT defaults to /tmp).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-/tmp}"
table="$out/matmul_tma_bench${TAG:+-$TAG}.txt"
nvcc -O2 -std=c++17 -gencode arch=compute_90a,code=sm_90a "$here/matmul_tma_bench.cu" \
    -lnvrtc -lcuda -lcublas -o "$out/matmul_tma_bench"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$table"
"$out/matmul_tma_bench" "$here/.." "$@" 2>&1 | tee -a "$table"
