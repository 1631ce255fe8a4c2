#!/usr/bin/env bash
# Runs the disk store benchmark against fio. Builds nothing: build first
# (cmake -S . -B build && cmake --build build -j2), or point BUILD_DIR at another build.
#   bench/disk/run-disk-bench.sh [disk_bench options, e.g. --dir /mnt/ssd/bench]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${BUILD_DIR:-build}/bin/disk_bench"
if [[ ! -x "$bin" ]]; then
    echo "run-disk-bench.sh: $bin not found; build the project first" >&2
    exit 1
fi
command -v fio >/dev/null || { echo "run-disk-bench.sh: fio is not installed" >&2; exit 1; }
exec "$bin" "$@"
