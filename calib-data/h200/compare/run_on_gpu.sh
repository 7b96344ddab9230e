#!/usr/bin/env bash
# The comparison of calib-data/h200/compare, in one run on the GPU:
# HW-WFC's top-4 and top-8 tuning (top-8 twice) and its exhaustive search,
# all their choices measured again side by side (hwwfc judge), the Llama 3
# block measured end to end, Triton's autotuner and the vendor libraries,
# and a profiling run killed half-way and resumed.
#
# Usage: run_on_gpu.sh HWWFC_BINARY OUT_DIR [ours|triton|library|all]
# (the archive lands beside OUT_DIR as results.tar.gz). "ours" runs
# everything but Triton, "triton" only Triton's autotuner and the
# libraries, so that the two halves fit in two calls of a time-limited
# machine; both write into the same OUT_DIR. "library" times the libraries
# alone (seconds), for a call with no time left for Triton's autotuner.
set -u
B=$1
O=$2
PHASE=${3:-all}
# WORKLOADS=FILE compares on those workloads (default: the whole corpus,
# whose exhaustive pass alone takes about half an hour of GPU time).
W=${WORKLOADS:-calib-data/workloads.json}
# COEFFICIENTS=FILE ranks with that fit instead of the binary's built-in one;
# OTHER_GPU=1 lets it be a fit of another GPU (--allow-other-gpu).
C=${COEFFICIENTS:+--coefficients $COEFFICIENTS}
[ "${OTHER_GPU:-0}" = 1 ] && C="$C --allow-other-gpu"
# SPEC=NAME: the spec of the end-to-end step (default h200); REFERENCE=DIR:
# the committed records the exhaustive search is compared with (default
# calib-data/h200); MEASURE=0 leaves out the end-to-end step.
SPEC=${SPEC:-h200}
REFERENCE=${REFERENCE:-calib-data/h200}
mkdir -p "$O"
# Everything goes back as one archive, refreshed after each step so that a
# run cut short still returns what it measured.
ARCHIVE=${ARCHIVE:-$O/../results.tar.gz}
pack() { tar czf "$ARCHIVE" -C "$O" . ; }
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >> "$O/gpu.txt" 2>&1
if [ "$PHASE" = ours ] || [ "$PHASE" = all ]; then
# The exhaustive search first: it is the reference of the top-k runs, on
# the same GPU and in the same state.
"$B" tune --gpu 0 --workloads "$W" --top-k 0 --out "$O/k0" --reference "$REFERENCE" $C > "$O/k0.txt" 2>&1
echo "tune k=0 rc=$?" >> "$O/status.txt"
pack
for k in 8 4 8b; do
  "$B" tune --gpu 0 --workloads "$W" --top-k ${k%b} --out "$O/k$k" --reference "$O/k0" $C > "$O/k$k.txt" 2>&1
  echo "tune k=$k rc=$?" >> "$O/status.txt"
  pack
done
# Every run's choice, the model's first choice and the exhaustive search's
# finalists measured afresh side by side: the shares of the headline.
"$B" judge --gpu 0 --workloads "$W" --runs "$O/k0" "$O/k4" "$O/k8" "$O/k8b" --passes 5 --out "$O/judge" > "$O/judge.txt" 2>&1
echo "judge rc=$?" >> "$O/status.txt"
pack
if [ "${MEASURE:-1}" != 0 ]; then
"$B" schedule --spec "$SPEC" --model llama3-8b-block --measure --measure-out "$O/measure" $C > "$O/measure.txt" 2>&1
echo "measure rc=$?" >> "$O/status.txt"
pack
fi
fi
if [ "$PHASE" = library ]; then
python3 calib-data/h200/compare/triton_baseline.py "$W" "$O/triton.json" --library-only > "$O/triton.txt" 2>&1
echo "library rc=$?" >> "$O/status.txt"
pack
exit 0
fi
if [ "$PHASE" != ours ]; then
python3 calib-data/h200/compare/triton_baseline.py "$W" "$O/triton.json" --budget-s "${TRITON_BUDGET_S:-200}" > "$O/triton.txt" 2>&1
echo "triton rc=$?" >> "$O/status.txt"
pack
fi
[ "$PHASE" = triton ] && exit 0
# KILL=0 leaves out the kill-and-resume step.
[ "${KILL:-1}" = 0 ] && exit 0
# Kill a profiling run with SIGKILL half-way through its big workload (the
# small one has 295 records, the big one takes tens of seconds), resume it,
# and check that every (workload, configuration) is recorded exactly once.
cat > "$O/kill-workloads.json" <<'JSON'
[{"name": "odd", "kind": "matmul", "m": 77, "n": 197, "k": 96},
 {"name": "big", "kind": "matmul", "m": 8192, "n": 8192, "k": 8192},
 {"name": "row", "kind": "softmax", "rows": 3, "cols": 77}]
JSON
"$B" profile --gpu 0 --quiet --workloads "$O/kill-workloads.json" --out "$O/kill" > "$O/kill1.txt" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  sleep 0.2
  n=$(cat "$O/kill/records.jsonl" 2>/dev/null | wc -l)
  if [ "$n" -ge 340 ]; then break; fi
done
kill -9 $pid; wait $pid 2>/dev/null
echo "killed after $(wc -l < "$O/kill/records.jsonl") records; last line complete: $(tail -c1 "$O/kill/records.jsonl" | od -An -c)" >> "$O/status.txt"
"$B" profile --gpu 0 --quiet --workloads "$O/kill-workloads.json" --out "$O/kill" > "$O/kill2.txt" 2>&1
echo "resume rc=$?" >> "$O/status.txt"
python3 - "$O/kill/records.jsonl" >> "$O/status.txt" <<'PY'
import json, sys, collections
keys = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    keys[(r["source"], r["workload"]["name"], (r["config"] or {}).get("index", 0))] += 1
dups = [k for k, v in keys.items() if v > 1]
per = collections.Counter(k[1] for k in keys)
print(f"after resume: {sum(keys.values())} records, {len(keys)} distinct, {len(dups)} duplicated; per workload {dict(per)}")
PY
pack
