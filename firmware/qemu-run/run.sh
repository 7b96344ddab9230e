#!/bin/sh
# Cargo runner of the firmware (firmware/.cargo/config.toml): runs the ELF
# in QEMU and prints its decoded defmt log. The runner is built from the
# repository root, where the firmware's target settings do not apply.
set -eu
elf=$(realpath "$1")
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
exec cargo run --quiet --manifest-path firmware/qemu-run/Cargo.toml --target-dir firmware/qemu-run/target -- "$@" "$elf"
