#!/usr/bin/env bash
# Submits a profiling run dealt into N shards (one GPU each) and the merge
# that waits for all of them:
#
#   deploy/slurm/submit.sh N [extra sbatch options for the array...]
#
# The environment of profile.sbatch and merge.sbatch (HWWFC, WORKLOADS,
# OUT, SPEC) is passed on. Prints the two job ids.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
n=${1:?usage: submit.sh N [sbatch options...]}
shift
case "$n" in '' | *[!0-9]* | 0) echo "submit.sh: N must be a positive number, got '$n'" >&2; exit 2 ;; esac
array=$(sbatch --parsable --export=ALL --array="0-$((n - 1))" --gres=gpu:1 "$@" "$here/profile.sbatch")
merge=$(sbatch --parsable --export=ALL --dependency="afterok:${array%%;*}" "$here/merge.sbatch")
echo "array $array, merge $merge"
