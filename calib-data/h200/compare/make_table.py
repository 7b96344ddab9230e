"""Builds COMPARE.md and compare.svg from the results of run_on_gpu.sh.

Usage: python3 make_table.py RESULTS_DIR OUT_DIR [TRITON_DIR [SECOND_TRITON_DIR]]

Shares are judged on a common bench (`hwwfc judge`, the results' `judge/`):
every run's choice, the model's first choice and the exhaustive search's
finalists measured afresh, side by side in five passes; a configuration's
time is the median over the passes, and our best is the fastest of the
exhaustive search's choice and finalists. For our own choices the share is
that best over the choice's judged time (above 100%: faster than all the
exhaustive search's finalists); for Triton and the vendor library, our
best over their time (above 100%: faster than our best). Beside them, the
shares by the exhaustive search's own records (its best over the choice's
time there), and by the committed records of another day (calib-data/h200/
run1 and run2).

TRITON_DIR holds the triton.json of Triton's autotuner and the libraries
(default: RESULTS_DIR); SECOND_TRITON_DIR that of a second call of
triton_baseline.py on the shapes the first call's time budget skipped; its
rows are marked.
"""

import json
import math
import re
import subprocess
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

res, out = sys.argv[1], sys.argv[2]
triton_dir = sys.argv[3] if len(sys.argv) > 3 else res
extra = json.load(open(f"{sys.argv[4]}/triton.json")) if len(sys.argv) > 4 else {"workloads": {}}
here = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
k = {n: json.load(open(f"{res}/k{n}/tune.json")) for n in ("0", "4", "8", "8b")}
judge = {w["workload"]: w for w in json.load(open(f"{res}/judge/judge.json"))["workloads"]}


def committed_times():
    """Geometric mean of the medians of run1 and run2, by (workload, label)."""
    runs = []
    for run in ("run1", "run2"):
        t = {}
        for line in open(f"{here}/../{run}/records.jsonl"):
            r = json.loads(line)
            c = r.get("config")
            if r["source"] != "kernel" or r["status"] != "ok" or not c or not r.get("timing"):
                continue
            if r["workload"]["kind"] == "matmul":
                label = f"{c['tile_m']}x{c['tile_n']}x{c['tile_k']} w{c['warps_m']}x{c['warps_n']} s{c['stages']}"
            else:
                label = f"c{c['tile_n']} t{32 * c['warps_m'] * c['warps_n']}"
            t[(r["workload"]["name"], label)] = r["timing"]["median_us"]
        runs.append(t)
    return {key: math.sqrt(v * runs[1][key]) for key, v in runs[0].items() if key in runs[1]}


committed = committed_times()


def committed_share(name, label):
    own = [v for (w, _), v in committed.items() if w == name]
    t = committed.get((name, label))
    return min(own) / t if own and t else None

tr = json.load(open(f"{triton_dir}/triton.json"))
rows = []
for w in k["8"]["workloads"]:
    name = w["workload"]
    by = {n: next(x for x in k[n]["workloads"] if x["workload"] == name) for n in k}
    j = judge[name]
    best = j["reference_us"]
    judged = {n: j["choices"][n]["share"] for n in j["choices"]}
    t = tr["workloads"].get(name)
    second = t is None and name in extra["workloads"]
    t = t or extra["workloads"].get(name)
    rows.append({
        "name": name, "shape": w["shape"], "best_us": best,
        "pred_share": judged["model"], "pred_us": w["predict_us"],
        "k4_share": judged["k4"], "k4_s": by["4"]["profile_s"],
        "k8_share": judged["k8"], "k8_s": by["8"]["profile_s"],
        "k8b_share": judged["k8b"], "k8b_s": by["8b"]["profile_s"],
        "k0_share": judged["k0"], "k0_s": by["0"]["profile_s"],
        "pred_same_run": w["predicted_share"], "k4_same_run": by["4"]["share"],
        "k8_same_run": by["8"]["share"], "k8b_same_run": by["8b"]["share"],
        "pred_committed": committed_share(name, w["predicted"]),
        "k4_committed": committed_share(name, by["4"]["chosen"]),
        "k8_committed": committed_share(name, by["8"]["chosen"]),
        "k8b_committed": committed_share(name, by["8b"]["chosen"]),
        "k0_committed": committed_share(name, by["0"]["chosen"]),
        "triton_us": t["triton_ms"] * 1e3 if t else None, "triton_s": t["autotune_s"] if t else None,
        "lib_us": t["library_ms"] * 1e3 if t else None, "lib": t["library"] if t else None,
        "triton_second_call": second,
    })


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def num(x, f="{:.2f}"):
    return "-" if x is None else f.format(x)


def mark(r):
    return " (2nd call)" if r["triton_second_call"] else ""


lines = [
    "| workload | shape | our best (us) | model only: share / choose | top-4: share / profile | top-8: share / profile "
    "| top-8 again: share / profile | exhaustive: share / profile | Triton autotune: kernel (share) / autotune "
    "| cuBLAS or torch: kernel (share) |",
    "|---|---|---|---|---|---|---|---|---|---|",
]
for r in rows:
    tshare = r["best_us"] / r["triton_us"] if r["triton_us"] else None
    lshare = r["best_us"] / r["lib_us"] if r["lib_us"] else None
    lines.append(
        f"| {r['name']} | {r['shape']} | {r['best_us']:.2f} | {pct(r['pred_share'])} / {r['pred_us']:.0f} us "
        f"| {pct(r['k4_share'])} / {r['k4_s']:.2f} s | {pct(r['k8_share'])} / {r['k8_s']:.2f} s "
        f"| {pct(r['k8b_share'])} / {r['k8b_s']:.2f} s | {pct(r['k0_share'])} / {r['k0_s']:.2f} s "
        f"| {num(r['triton_us'])} us ({pct(tshare)}) / {num(r['triton_s'], '{:.1f}')} s{mark(r)} "
        f"| {num(r['lib_us'])} us ({pct(lshare)}){mark(r)} |"
    )
n = len(rows)
mean = lambda key: sum(r[key] for r in rows if r[key] is not None) / max(1, sum(1 for r in rows if r[key] is not None))
tr_rows = [r for r in rows if r["triton_us"]]
summary = {
    "workloads": n,
    "model_only_share": mean("pred_share"),
    "model_only_choose_us_median": sorted(r["pred_us"] for r in rows)[n // 2],
    "top4_share": mean("k4_share"), "top4_profile_s": sum(r["k4_s"] for r in rows), "top4_compile_s": k["4"]["compile_s"],
    "top8_share": mean("k8_share"), "top8_profile_s": sum(r["k8_s"] for r in rows), "top8_compile_s": k["8"]["compile_s"],
    "top8_again_share": mean("k8b_share"), "top8_again_profile_s": sum(r["k8b_s"] for r in rows),
    "exhaustive_share": mean("k0_share"),
    "exhaustive_profile_s": sum(r["k0_s"] for r in rows), "exhaustive_compile_s": k["0"]["compile_s"],
    "same_run_reference": {key: mean(f"{key}_same_run") for key in ("pred", "k4", "k8", "k8b")},
    "triton_workloads": len(tr_rows),
    "triton_autotune_s_median": sorted(r["triton_s"] for r in tr_rows)[len(tr_rows) // 2] if tr_rows else None,
    "triton_share_of_our_best": sum(r["best_us"] / r["triton_us"] for r in tr_rows) / max(1, len(tr_rows)),
    "library_share_of_our_best": sum(r["best_us"] / r["lib_us"] for r in tr_rows) / max(1, len(tr_rows)),
    "triton_skipped": [w for w in tr["skipped"] if w not in extra["workloads"]],
    "triton_second_call": sorted(r["name"] for r in rows if r["triton_second_call"]),
    "committed_reference": {key: mean(f"{key}_committed") for key in ("pred", "k4", "k8", "k8b", "k0")},
}
# The held-out figures of the model the binary was built with: the report
# at its commit (the current one when git cannot show it).
commit = json.load(open(f"{res}/k8/meta.json"))["runs"][0]["commit"]
try:
    report = subprocess.run(["git", "-C", here, "show", f"{commit}:calib-data/h200/REPORT.md"],
                            capture_output=True, text=True, check=True).stdout
except (OSError, subprocess.CalledProcessError):
    report = open(f"{here}/../REPORT.md").read()
held_out = re.search(r"\| \*\*mean\*\* .*?\*\*([0-9.]+)% / ([0-9.]+)% / ([0-9.]+)%\*\*", report)
held_out = " / ".join(f"{x}%" for x in held_out.groups()) if held_out else "see the report"
c = summary["committed_reference"]
sr = summary["same_run_reference"]
second_call = (f"; {len(summary['triton_second_call'])} of them were measured in a second call of "
               f"`triton_baseline.py` ({extra.get('device')}, marked \"2nd call\"), whose shares are against this "
               "run's best" if summary["triton_second_call"] else "")
head = f"""# HW-WFC against Triton's autotuner and the vendor libraries on the H200

Our tuning: one run of `run_on_gpu.sh` (raw results in `{res.rstrip('/').rsplit('/', 1)[-1]}/`). Triton's autotuner and
the libraries: `triton_baseline.py` ({tr['device']}, torch {tr['torch']}, Triton {tr['triton']}; raw results in
`{triton_dir.rstrip('/').rsplit('/', 1)[-1]}/`). {__doc__.split(chr(10) + chr(10))[2].strip()}
Top-k tuning measures the model's k best side by side (checked, then timed in turns, repeat
by repeat), then measures again those within {100 * k["8"].get('confirm_tolerance', 0):.0f}% of the fastest, side by side, and
keeps the fastest of that second pass (the profiling times include both passes); the exhaustive
search is the same with every configuration. Top-8 ran twice ("top-8 again").

Means over {n} workloads, judged: the model's first choice with no measurement reaches
{pct(summary['model_only_share'])} of our exhaustive best, chosen in {summary['model_only_choose_us_median']:.0f} us (median,
ranking all configurations on the CPU); top-4 tuning {pct(summary['top4_share'])} in
{summary['top4_profile_s']:.1f} s of profiling (+{summary['top4_compile_s']:.1f} s compiling); top-8
{pct(summary['top8_share'])} in {summary['top8_profile_s']:.1f} s (+{summary['top8_compile_s']:.1f} s), and
{pct(summary['top8_again_share'])} in {summary['top8_again_profile_s']:.1f} s the second time; the exhaustive search's own
choice {pct(summary['exhaustive_share'])} in {summary['exhaustive_profile_s']:.1f} s
(+{summary['exhaustive_compile_s']:.1f} s). Triton's autotuner took
{num(summary['triton_autotune_s_median'], '{:.1f}')} s per shape (median over {summary['triton_workloads']} shapes; the
run's time budget skipped {len(tr['skipped'])}: {', '.join(tr['skipped']) or 'none'}{second_call}), and its kernels run at
{pct(summary['triton_share_of_our_best'])} of our best's speed on average (our matmul is an `mma.sync` kernel,
Triton's and cuBLAS's use Hopper's `wgmma`); the libraries at {pct(summary['library_share_of_our_best'])}.

Judged instead by the exhaustive search's own records, the same choices reach {pct(sr['pred'])} (model
only), {pct(sr['k4'])} (top-4), {pct(sr['k8'])} and {pct(sr['k8b'])} (top-8); by the committed records of
another day, {pct(c['pred'])}, {pct(c['k4'])}, {pct(c['k8'])} and {pct(c['k8b'])}, and this run's
exhaustive choice {pct(c['k0'])}. A configuration on the H200 measures several percent apart from one
moment to the next and with what runs beside it (most likely its clocks under the power limit), so a search's own
best is partly luck; the common bench measures every candidate under the same conditions.

The coefficients that rank the configurations were fitted on these same workloads (the built-in H200 fit of the
binary's commit, {commit[:7]}), so the "model only" and top-k columns are in-sample; the held-out figure of the same
model is in `../REPORT.md` at that commit (best in top 1 / 4 / 8: {held_out}).

![time to choose against the share of the best](compare.svg)

"""
open(f"{out}/COMPARE.md", "w").write(head + "\n".join(lines) + "\n")
json.dump({"summary": summary, "workloads": rows}, open(f"{out}/compare.json", "w"), indent=1)

fig, ax = plt.subplots(figsize=(7, 4.5))
pts = [
    ("model only", summary["model_only_choose_us_median"] * 1e-6 * n, summary["model_only_share"]),
    ("top-4", summary["top4_profile_s"] + summary["top4_compile_s"], summary["top4_share"]),
    ("top-8", summary["top8_profile_s"] + summary["top8_compile_s"], summary["top8_share"]),
    ("top-8 again", summary["top8_again_profile_s"] + summary["top8_compile_s"], summary["top8_again_share"]),
    ("exhaustive", summary["exhaustive_profile_s"] + summary["exhaustive_compile_s"], summary["exhaustive_share"]),
]
for label, x, y in pts:
    ax.scatter([x], [y * 100], s=40)
    # The two top-8 runs land close together: one label above, one below.
    offset = (6, -12) if label == "top-8 again" else (6, 4)
    ax.annotate(label, (x, y * 100), textcoords="offset points", xytext=offset)
if tr_rows:
    t_total = sum(r["triton_s"] for r in tr_rows) * n / len(tr_rows)
    ax.axvline(t_total, color="gray", ls="--")
    ax.annotate("Triton autotune (all shapes, extrapolated)", (t_total, 92), rotation=90, color="gray", fontsize=8)
ax.set_xscale("log")
ax.set_xlabel(f"time to choose the configurations of {n} workloads (s, log)")
ax.set_ylabel("share of our exhaustive best (%)")
ax.set_ylim(90, 101)
ax.set_title("Choosing kernel configurations on the H200")
fig.tight_layout()
fig.savefig(f"{out}/compare.svg")
print(json.dumps(summary, indent=1))
