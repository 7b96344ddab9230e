#!/usr/bin/env python3
"""Times a model's layers in PyTorch eager, back to back, as `hwwfc schedule
--measure` times the schedule: every layer on its own random inputs of its
own shape (matmuls fp16 through cuBLAS, the softmax fp32, the elementwise
layers fp16), the L2 flushed before each repeat, the median of the repeats.

Usage: hwwfc schedule --spec h200 --model NAME --json > schedule.json
       python3 eager.py schedule.json [--repeats 50] [--out eager.json]

The layers and shapes are read from the schedule's JSON, so any model the
command schedules (built in or a model file) is timed the same way. An
elementwise layer is the operators eager PyTorch runs for it: `a + b`;
`silu(a) * b` (two kernels); `gelu(a, tanh)`; RMSNorm (`rms_norm` where
this PyTorch has it).
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F


def layer_fn(layer, gen):
    op, kind = layer["op"], layer["kind"]
    dev = "cuda"
    if kind == "matmul":
        m, n, k, batch = op["m"], op["n"], op["k"], op.get("batch", 1)
        a = torch.empty(batch, m, k, device=dev, dtype=torch.float16).uniform_(-1, 1, generator=gen)
        b = torch.empty(batch, k, n, device=dev, dtype=torch.float16).uniform_(-1, 1, generator=gen)
        if batch == 1:
            a, b = a[0], b[0]
            return lambda: torch.matmul(a, b)
        return lambda: torch.bmm(a, b)
    if kind == "softmax":
        x = torch.empty(op["rows"], op["cols"], device=dev, dtype=torch.float32).uniform_(-4, 4, generator=gen)
        return lambda: torch.softmax(x, dim=-1)
    kind = op["elementwise"]
    rows, cols = op["rows"], op["cols"]
    x = torch.empty(rows, cols, device=dev, dtype=torch.float16).uniform_(-3, 3, generator=gen)
    e = torch.empty(rows, cols, device=dev, dtype=torch.float16).uniform_(-3, 3, generator=gen)
    w = torch.empty(cols, device=dev, dtype=torch.float16).uniform_(-1, 1, generator=gen)
    if kind == "add":
        return lambda: x + e
    if kind == "silu_mul":
        return lambda: F.silu(x) * e
    if kind == "gelu":
        return lambda: F.gelu(x, approximate="tanh")
    if kind == "norm":
        if hasattr(F, "rms_norm"):
            return lambda: F.rms_norm(x, (cols,), w, 1e-5)
        return lambda: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).half() * w
    raise SystemExit(f"layer {layer['name']}: unknown operator {op}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("schedule", help="the JSON of `hwwfc schedule --json`")
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--out", help="write the result as JSON here")
    args = p.parse_args()
    with open(args.schedule) as f:
        sched = json.load(f)
    gen = torch.Generator(device="cuda").manual_seed(20260321)
    fns = [(layer["name"], layer_fn(layer, gen)) for layer in sched["layers"]]
    flush = torch.empty(256 * 1024 * 1024 // 4, device="cuda", dtype=torch.float32)

    def chain():
        for _, fn in fns:
            fn()

    for _ in range(3):
        chain()
    torch.cuda.synchronize()
    def median_us(fn, repeats):
        times = []
        for _ in range(repeats):
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0)
        return statistics.median(times)

    chain_us = median_us(chain, args.repeats)
    per_layer = {name: median_us(fn, max(5, args.repeats // 5)) for name, fn in fns}
    result = {
        "model": sched["model"],
        "seq": sched.get("seq"),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "repeats": args.repeats,
        "chain_median_us": chain_us,
        "layers_us": per_layer,
    }
    for name, t in per_layer.items():
        print(f"{name:<16} {t:10.2f} us")
    print(f"eager chain: {result['chain_median_us']:.2f} us (median of {args.repeats}) on {result['device']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
