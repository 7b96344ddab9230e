"""Builds COMPARE.md and compare.svg from the results of run_on_gpu.sh.

Usage: python3 make_table.py RESULTS_DIR OUT_DIR [TRITON_DIR]

Shares are judged on a common bench (`hwwfc judge`, the results' `judge/`):
every run's choice, the model's first choice and the exhaustive search's
finalists measured afresh, side by side in five passes; a configuration's
time is the median over the passes, and our best is the fastest of the
exhaustive search's choice and finalists. For our own choices the share is
that best over the choice's judged time (above 100%: faster than all the
exhaustive search's finalists); for Triton and the vendor library, our
best over their time (above 100%: faster than our best). Beside them, the
shares by the exhaustive search's own records (its best over the choice's
time there).

TRITON_DIR holds the triton.json of Triton's autotuner and the libraries
(default: RESULTS_DIR); a workload its time budget skipped has no Triton
or library column. The exhaustive run (k0) and top-8 (k8) are needed;
top-4 (k4) and top-8 again (k8b) are left out of the tables where a run
was cut short before them.
"""

import json
import math
import os
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

res, out = sys.argv[1], sys.argv[2]
triton_dir = sys.argv[3] if len(sys.argv) > 3 else res
runs = [n for n in ("0", "4", "8", "8b") if os.path.exists(f"{res}/k{n}/tune.json")]
if "0" not in runs or "8" not in runs:
    sys.exit(f"{res}: needs the exhaustive run k0/ and top-8's k8/ (found: {', '.join('k' + n for n in runs) or 'none'})")
k = {n: json.load(open(f"{res}/k{n}/tune.json")) for n in runs}
# Runs this result has, in the tables' order, with their labels.
LABELS = {"4": "top-4 tuning", "8": "top-8 tuning", "8b": "top-8 tuning again"}
tuned = [n for n in ("4", "8", "8b") if n in k]
judge = {w["workload"]: w for w in json.load(open(f"{res}/judge/judge.json"))["workloads"]}
try:
    tr = json.load(open(f"{triton_dir}/triton.json"))
except OSError:
    tr = {"workloads": {}, "skipped": [], "device": None}
meta = json.load(open(f"{res}/k8/meta.json"))["runs"][0]
device = meta["device"]["name"]
commit = meta.get("commit", "unknown")

rows = []
for w in k["8"]["workloads"]:
    name = w["workload"]
    if name not in judge:
        continue
    by = {n: next(x for x in k[n]["workloads"] if x["workload"] == name) for n in k}
    j = judge[name]
    best = j["reference_us"]
    share = {n: j["choices"][n]["share"] for n in j["choices"]}
    t = tr["workloads"].get(name)
    row = {
        "name": name, "shape": w["shape"], "kind": "softmax" if w["shape"].count("x") == 1 else "matmul",
        "best_us": best,
        "model": share["model"], "model_us": w["predict_us"], "model_own": w["predicted_share"],
        "k8_us": j["choices"]["k8"]["judged_us"],
        "triton_us": t["triton_ms"] * 1e3 if t and t["triton_ms"] is not None else None,
        "triton_s": t["autotune_s"] if t else None,
        "lib_us": t["library_ms"] * 1e3 if t else None, "lib": t["library"] if t else None,
    }
    for n in ("0", "4", "8", "8b"):
        row[f"k{n}"] = share.get(f"k{n}") if n in k else None
        row[f"k{n}_s"] = by[n]["profile_s"] if n in k else None
        row[f"k{n}_own"] = by[n]["share"] if n in k else None
    rows.append(row)


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def num(x, f="{:.2f}"):
    return "-" if x is None else f.format(x)


def mean(key, subset=None):
    v = [r[key] for r in (subset or rows) if r[key] is not None]
    return sum(v) / len(v) if v else None


def geomean(v):
    v = [x for x in v if x]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


n = len(rows)
mm = [r for r in rows if r["kind"] == "matmul"]
sm = [r for r in rows if r["kind"] == "softmax"]
profile = {f"k{n}": sum(r[f"k{n}_s"] for r in rows) for n in runs}
# Our kernels against the vendor library: the library's time over ours
# (above 100%: ours is faster), geometric means; ours is top-8's choice as
# judged, and our exhaustive best.
vs_lib = {
    kind: {
        "top8": geomean([r["lib_us"] / r["k8_us"] for r in sub if r["lib_us"]]),
        "best": geomean([r["lib_us"] / r["best_us"] for r in sub if r["lib_us"]]),
        "n": sum(1 for r in sub if r["lib_us"]),
    }
    for kind, sub in (("all", rows), ("matmul", mm), ("softmax", sm))
}
tr_rows = [r for r in rows if r["triton_us"]]
summary = {
    "device": device, "commit": commit, "workloads": n, "matmuls": len(mm), "softmaxes": len(sm),
    "model_only_share": mean("model"), "model_only_share_matmul": mean("model", mm),
    "model_only_share_softmax": mean("model", sm),
    "model_only_choose_us_median": sorted(r["model_us"] for r in rows)[n // 2] if n else None,
    "top4_share": mean("k4"), "top8_share": mean("k8"), "top8_again_share": mean("k8b"), "exhaustive_share": mean("k0"),
    "profile_s": profile, "compile_s": {f"k{n}": k[n]["compile_s"] for n in runs},
    "top8_profile_share_of_exhaustive": profile["k8"] / profile["k0"] if profile["k0"] else None,
    "own_records": {key: mean(f"{key}_own") for key in ("model", "k4", "k8", "k8b")},
    "runs": [f"k{n}" for n in runs],
    "library_speed_over_ours": vs_lib,
    "triton_workloads": len(tr_rows),
    "triton_autotune_s_median": sorted(r["triton_s"] for r in tr_rows)[len(tr_rows) // 2] if tr_rows else None,
    "triton_speed_over_our_best": geomean([r["best_us"] / r["triton_us"] for r in tr_rows]),
    "triton_skipped": tr.get("skipped", []),
}

columns = [LABELS[n].replace(" tuning", "") for n in tuned]
lines = [
    "| workload | shape | our best (us) | model only: share / choose | "
    + "".join(f"{c}: share / profile | " for c in columns)
    + "exhaustive: share / profile | Triton autotune: kernel (share) / autotune | cuBLAS or torch: kernel (share) |",
    "|---|---|---|---|" + "---|" * len(columns) + "---|---|---|",
]
for r in rows:
    tshare = r["best_us"] / r["triton_us"] if r["triton_us"] else None
    lshare = r["best_us"] / r["lib_us"] if r["lib_us"] else None
    lines.append(
        f"| {r['name']} | {r['shape']} | {r['best_us']:.2f} | {pct(r['model'])} / {num(r['model_us'], '{:.0f}')} us | "
        + "".join(f"{pct(r[f'k{n}'])} / {r[f'k{n}_s']:.2f} s | " for n in tuned)
        + f"{pct(r['k0'])} / {r['k0_s']:.2f} s "
        f"| {num(r['triton_us'])} us ({pct(tshare)}) / {num(r['triton_s'], '{:.1f}')} s "
        f"| {num(r['lib_us'])} us ({pct(lshare)}) |"
    )

s = summary
o = s["own_records"]
v = s["library_speed_over_ours"]
skipped = ", ".join(s["triton_skipped"]) or "none"
def run_row(n, label):
    key = f"k{n}"
    return (
        f"| {label} | {pct(mean(key))} | {pct(mean(key, mm))} | {pct(mean(key, sm))} "
        f"| {profile[key]:.1f} s (+{s['compile_s'][key]:.1f} s) |"
    )


summary_rows = "\n".join(run_row(n, LABELS[n]) for n in tuned)
own = ", ".join(f"{pct(o[f'k{n}'])} ({LABELS[n].replace(' tuning', '')})" for n in tuned)
elsewhere = ""
if os.path.realpath(triton_dir) != os.path.realpath(res) and tr["workloads"]:
    where = os.path.basename(os.path.normpath(triton_dir))
    elsewhere = f" Their times come from another call (`{where}/triton.json`, on an {tr.get('device')})."
again = 'Top-8 ran twice ("top-8 again").' if "8b" in k else "Top-8 ran once."
left_out = [LABELS[n] for n in ("4", "8b") if n not in k]
if left_out:
    again += f" Not run this time: {' and '.join(left_out)}."

if tr.get("library_only"):
    triton_line = "Triton's autotuner was not run this time (`--library-only`: the libraries alone)."
else:
    triton_line = (
        f"Triton's autotuner took {num(s['triton_autotune_s_median'], '{:.1f}')} s per shape (median over "
        f"{s['triton_workloads']}; skipped by its time budget: {skipped}), and its kernels run at "
        f"{pct(s['triton_speed_over_our_best'])} of our best's speed (geometric mean: our best's time over Triton's)."
    )

head = f"""# HW-WFC against Triton's autotuner and the vendor libraries ({device})

Our tuning: one run of `run_on_gpu.sh` (raw results beside this file). Triton's autotuner and the
libraries: `triton_baseline.py` (torch {tr.get('torch')}, Triton {tr.get('triton')}).{elsewhere} {__doc__.split(chr(10) + chr(10))[2].strip()}
Top-k tuning measures the model's k best side by side, then measures again those within
{100 * k["8"].get('confirm_tolerance', 0):.0f}% of the fastest and keeps the fastest of that second pass (the
profiling times include both passes); the exhaustive search is the same with every configuration.
{again} The binary was built from commit {commit[:7]}.

Means over {n} workloads ({len(mm)} matmuls, {len(sm)} softmaxes), judged on the common bench:

| who chooses | share of our exhaustive best | matmuls | softmaxes | profiling (+ compiling) |
|---|---:|---:|---:|---:|
| the cost model alone, no measurement | {pct(s['model_only_share'])} | {pct(s['model_only_share_matmul'])} | {pct(s['model_only_share_softmax'])} | none ({num(s['model_only_choose_us_median'], '{:.0f}')} us to choose, median) |
{summary_rows}
| the exhaustive search's own choice | {pct(s['exhaustive_share'])} | {pct(mean('k0', mm))} | {pct(mean('k0', sm))} | {profile['k0']:.1f} s (+{s['compile_s']['k0']:.1f} s) |

Top-8 profiles {pct(s['top8_profile_share_of_exhaustive'])} of the exhaustive search's time. Judged instead by the
exhaustive search's own records, the same choices reach {pct(o['model'])} (model only), {own}.

Against the vendor library (cuBLAS through `torch.matmul`, and `torch.softmax`), on the {v['all']['n']} workloads
the baseline's time budget reached: the library's time over ours, geometric mean (above 100%: ours is faster),
top-8's judged choice {pct(v['all']['top8'])} (matmuls {pct(v['matmul']['top8'])}, softmaxes
{pct(v['softmax']['top8'])}); our exhaustive best {pct(v['all']['best'])} (matmuls {pct(v['matmul']['best'])},
softmaxes {pct(v['softmax']['best'])}). {triton_line}

![time to choose against the share of the best](compare.svg)

"""
open(f"{out}/COMPARE.md", "w").write(head + "\n".join(lines) + "\n")
json.dump({"summary": summary, "rows": rows}, open(f"{out}/compare.json", "w"), indent=1)

fig, ax = plt.subplots(figsize=(6.4, 4.0))
pts = [("model only", 1e-4 * max(1, n), s["model_only_share"])]
pts += [(LABELS[n].replace(" tuning", ""), profile[f"k{n}"] + s["compile_s"][f"k{n}"], mean(f"k{n}")) for n in tuned]
pts.append(("exhaustive", profile["k0"] + s["compile_s"]["k0"], s["exhaustive_share"]))
for label, x, y in pts:
    ax.scatter([x], [100 * y])
    ax.annotate(label, (x, 100 * y), textcoords="offset points", xytext=(4, 4))
ax.set_xscale("log")
ax.set_xlabel(f"time to choose for all {n} workloads (s, profiling + compiling)")
ax.set_ylabel("share of our exhaustive best (%)")
ax.set_title(f"Choosing kernels on the {device}: time against quality")
ax.grid(True, alpha=0.3)
fig.tight_layout()
fig.savefig(f"{out}/compare.svg")
print(json.dumps(summary, indent=1))
