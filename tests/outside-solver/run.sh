#!/usr/bin/env bash
# Dump every built-in model on a few specs with `hwwfc schedule --dump-problem`
# and check each dump's optimum with an outside MILP solver (check_dump.py).
#
# Usage: run.sh HWWFC OUTDIR [check_dump.py options...]
#   HWWFC   the hwwfc binary
#   OUTDIR  folder for the dumps (MODEL.SPEC.json), the logs and results.md
# Environment:
#   PYTHON  Python 3 with pulp importable (default: python3)
#   SPECS   specs to dump on (default: "stress_gpu toy_gpu h200")
#   MODELS  models to dump (default: every built-in model)
#   SEQ     if set, passed as --seq to every schedule
# Exit status: check_dump.py's (0: every dump passes), or 2 on a usage error.
set -u -o pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 HWWFC OUTDIR [check_dump.py options...]" >&2
    exit 2
fi
hwwfc=$1
out=$2
shift 2
python=${PYTHON:-python3}
specs=${SPECS:-stress_gpu toy_gpu h200}
models=${MODELS:-attention gpt2-block llama3-8b-block llama3-8b-attention llama3-8b-dag \
    llama3-8b-graph gpt2-graph vit-b16-graph mixtral-moe-graph}
here=$(cd "$(dirname "$0")" && pwd)

mkdir -p "$out"
dumps=()
skipped=()
for spec in $specs; do
    for model in $models; do
        f=$out/$model.$spec.json
        log=$out/$model.$spec.log
        if "$hwwfc" schedule --spec "$spec" --model "$model" ${SEQ:+--seq "$SEQ"} \
            --dump-problem "$f" >"$log" 2>&1; then
            dumps+=("$f")
        else
            skipped+=("$model on $spec")
            echo "skipped: $model on $spec (the tool refused it; see $log)" >&2
            rm -f "$f"
        fi
    done
done

if [ ${#dumps[@]} -eq 0 ]; then
    echo "no dump was written" >&2
    exit 2
fi
"$python" "$here/check_dump.py" --markdown "$out/results.md" "$@" "${dumps[@]}"
rc=$?
if [ ${#skipped[@]} -gt 0 ]; then
    echo "skipped (refused by the tool): ${skipped[*]}"
fi
exit $rc
