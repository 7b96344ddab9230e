"""Table and plot of `hwwfc tenants --measure --split N` over the splits.

Usage: python3 plot.py  (in this folder: reads split*.txt, writes
splits.md and splits.svg)

Each split*.txt is one run's output. Per split: the predicted makespan of
both tenants at once (each on its partition with its partition schedule)
and the measured one, each tenant's measured time alone and beside the
other, and both whole-GPU schedules one after the other on the whole GPU.
"""

import glob
import re

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402


def numbers(line):
    # The row's label ends at the first column of numbers.
    return [None if x == "-" else float(x) for x in re.findall(r"(?<=\s)(-|\d+\.\d+)(?=\s|$)", line)]


def parse(path):
    text = open(path).read()
    rows = {tag: numbers(next(l for l in text.splitlines() if l.startswith(tag))) for tag in ("(a)", "(b)", "(c)", "(d)")}
    a, b = map(int, re.search(r"split: A (\d+) SMs, B (\d+) SMs", text).groups())
    return {
        "a_sms": a, "b_sms": b,
        "alone": (rows["(a)"][1], rows["(a)"][3]), "whole_on_part": (rows["(b)"][1], rows["(b)"][3]),
        "pred_alone": (rows["(a)"][0], rows["(a)"][2]),
        "together": (rows["(c)"][1], rows["(c)"][3]), "pair_pred": rows["(c)"][4], "pair": rows["(c)"][5],
        "seq_pred": rows["(d)"][4], "seq": rows["(d)"][5],
    }


runs = sorted((parse(p) for p in glob.glob("split*.txt")), key=lambda r: r["a_sms"])
lines = [
    "| A's SMs | B's SMs | both at once: predicted | measured | A alone | A beside B | B alone | B beside A "
    "| B's whole-GPU schedule on its SMs | one after the other on the whole GPU | speedup |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
]
for r in runs:
    lines.append(
        f"| {r['a_sms']} | {r['b_sms']} | {r['pair_pred']:.0f} | {r['pair']:.0f} | {r['alone'][0]:.0f} "
        f"| {r['together'][0]:.0f} | {r['alone'][1]:.0f} | {r['together'][1]:.0f} | {r['whole_on_part'][1]:.0f} "
        f"| {r['seq']:.0f} | {r['seq'] / r['pair']:.3f}x |"
    )
open("splits.md", "w").write("\n".join(lines) + "\n")

fig, ax = plt.subplots(figsize=(6.4, 4.0))
x = [r["a_sms"] for r in runs]
ax.plot(x, [r["pair_pred"] for r in runs], "o--", label="both at once, predicted")
ax.plot(x, [r["pair"] for r in runs], "o-", label="both at once, measured")
ax.plot(x, [r["alone"][0] for r in runs], "s:", label="A alone on its SMs, measured")
ax.plot(x, [r["seq"] for r in runs], "^-", label="one after the other, whole GPU, measured")
ax.set_xlabel("tenant A's SMs (B has the rest, in steps of 8)")
ax.set_ylabel("us")
ax.set_title("Two tenants on one GPU: makespan per split")
ax.grid(True, alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig("splits.svg")
print("\n".join(lines))
