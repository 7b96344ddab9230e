"""How much of the top-k shortfall is the GPU's run-to-run noise.

Usage: python3 noise.py RESULTS_DIR NOISE_DIR

RESULTS_DIR is run_on_gpu.sh's (k0, k4, k8); NOISE_DIR holds a second
exhaustive pass (k0b) and two more top-8 passes (k8b, k8c) of the same
binary on a fresh machine of the same kind. Every choice (the rule of
that binary, dc44bfa: the fastest first median, or among the finalists
within 3% the lowest geometric mean of their two medians; the tuner has
since changed) is judged against each
exhaustive pass's own records: the mean over workloads of that pass's
best over its time for the chosen configuration. An exhaustive pass
judged by the other one is the ceiling any choice can reach under this
noise. Also: the best of the top-8's eight configurations by the judging
pass's records (a perfect choice among the eight).
"""

import collections
import gzip
import json
import math
import os
import sys


def lines(path):
    """The lines of `path`, or of its gzipped copy `path.gz` (a finished
    run is committed compressed)."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt")
    return open(path)


def records(path):
    t = collections.defaultdict(dict)
    try:
        for line in lines(path):
            r = json.loads(line)
            c = r.get("config")
            if r["source"] == "kernel" and r["status"] == "ok" and c:
                t[r["workload"]["name"]][c["index"]] = r["timing"]["median_us"]
    except FileNotFoundError:
        pass
    return t


def choice(run):
    first, again = records(f"{run}/records.jsonl"), records(f"{run}/confirm/records.jsonl")
    out = {}
    for w, f in first.items():
        best = min(f.values())
        finals = [i for i in f if f[i] <= best * 1.03]
        score = {i: math.sqrt(f[i] * again[w][i]) if i in again[w] else f[i] for i in finals}
        out[w] = min(score, key=score.get)
    return out


def share(chosen, judge):
    ref = records(f"{judge}/records.jsonl")
    return sum(min(ref[w].values()) / ref[w][i] for w, i in chosen.items()) / len(chosen)


def best_of(run, judge):
    ref, mine = records(f"{judge}/records.jsonl"), records(f"{run}/records.jsonl")
    return sum(min(ref[w].values()) / min(ref[w][i] for i in c) for w, c in mine.items()) / len(mine)


res, noise = sys.argv[1], sys.argv[2]
judges = {"k0": f"{res}/k0", "k0b": f"{noise}/k0b"}
runs = {"k0": f"{res}/k0", "k0b": f"{noise}/k0b", "k4": f"{res}/k4", "k8": f"{res}/k8",
        "k8b": f"{noise}/k8b", "k8c": f"{noise}/k8c"}
print("| choice | judged by k0 | judged by k0b |")
print("|---|---:|---:|")
for name, run in runs.items():
    cells = ["(itself)" if judge == run else f"{100 * share(choice(run), judge):.2f}%" for judge in judges.values()]
    print(f"| {name} | " + " | ".join(cells) + " |")
for name in ("k8", "k8b", "k8c"):
    cells = [f"{100 * best_of(runs[name], judge):.2f}%" for judge in judges.values()]
    print(f"| best of {name}'s eight | " + " | ".join(cells) + " |")
