#!/usr/bin/env bash
# The partitions of this folder, measured in one run on a GPU: every
# configuration of the fourteen workloads of workloads.json profiled inside
# green contexts of 16, 32 and 64 SMs and under budgets of 100 and 64 KiB
# of shared memory per block on the whole GPU, the two tenants of
# `hwwfc tenants` run side by side, then everything judged by
# `hwwfc partitions` with the binary's built-in coefficients.
#
# Usage: run_on_gpu.sh HWWFC_BINARY OUT_DIR [STEP...]
# Steps, in the order given (default: all of them, in this order):
#   tenants sms16 sms32 sms64 smem100 smem64 judge
# Each profile resumes what OUT_DIR/<step> already holds, so a run cut
# short is continued by the same command. SPEC=NAME or FILE names the spec
# (default: the built-in spec named in the device's name); everything goes
# back as one archive, ARCHIVE (default OUT_DIR/../partitions.tar.gz),
# refreshed after each step so that a run cut short still returns what it
# measured.
set -u
B=$1
O=$2
shift 2
STEPS=${*:-tenants sms16 sms32 sms64 smem100 smem64 judge}
here="$(cd "$(dirname "$0")" && pwd)"
W="$here/workloads.json"
S=${SPEC:+--spec $SPEC}
mkdir -p "$O"
ARCHIVE=${ARCHIVE:-$O/../partitions.tar.gz}
pack() { tar czf "$ARCHIVE" -C "$O" . ; }
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >> "$O/gpu.txt" 2>&1
status=0
for step in $STEPS; do
    echo "== $step $(date -u +%FT%TZ)" >> "$O/status.txt"
    case $step in
        tenants) "$B" tenants $S --measure --gpu 0 > "$O/tenants.txt" 2>&1 ;;
        sms*) "$B" profile --gpu 0 $S --quiet --sms "${step#sms}" --workloads "$W" --out "$O/$step" > "$O/$step.txt" 2>&1 ;;
        smem*) "$B" profile --gpu 0 $S --quiet --smem-kb "${step#smem}" --workloads "$W" --out "$O/$step" > "$O/$step.txt" 2>&1 ;;
        judge) "$B" partitions $S --data "$O" --plot "$O/partitions.svg" > "$O/partitions.md" 2>&1 ;;
        *) echo "unknown step \`$step\` (steps: tenants sms16 sms32 sms64 smem100 smem64 judge)" >&2; exit 2 ;;
    esac
    rc=$?
    echo "== $step rc=$rc $(date -u +%FT%TZ)" >> "$O/status.txt"
    [ $rc = 0 ] || status=1
    pack
done
exit $status
