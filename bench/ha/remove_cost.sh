#!/usr/bin/env bash
# What durable removals cost: Ha.DISABLED_RemoveAndPutCostBench (one client's mean Put and
# Remove latency, four clients' put+remove pairs per second) run against two mooncaked
# binaries, alternating, ROUNDS times each (default 3), and the after/before ratios.
#   bench/ha/remove_cost.sh BEFORE_MOONCAKED AFTER_MOONCAKED
# The binaries are swapped in at ${BUILD_DIR:-build}/bin/mooncaked (the after one is left there).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
before=$1 after=$2 rounds=${ROUNDS:-3}
[ -x "$before" ] && [ -x "$after" ] || { echo "usage: $0 BEFORE_MOONCAKED AFTER_MOONCAKED" >&2; exit 2; }
saved=$(mktemp) && cp "$after" "$saved"
trap 'cp "$saved" "$build/bin/mooncaked"; rm -f "$saved"' EXIT
run() {
    cp "$1" "$build/bin/mooncaked"
    "$build/bin/ha_tests" --gtest_also_run_disabled_tests \
        --gtest_filter='Ha.DISABLED_RemoveAndPutCostBench' 2>/dev/null | grep '^cost:'
}
for i in $(seq 1 "$rounds"); do
    echo "before $(run "$before")"
    echo "after  $(run "$saved")"
done | tee /dev/stderr |
    sed -E 's/^(before|after) +cost: put ([0-9]+) us, remove ([0-9]+) us.*: ([0-9]+) put\+remove.*/\1 \2 \3 \4/' |
    awk '{ put[$1] += $2; rm[$1] += $3; pairs[$1] += $4; n[$1]++ }
    END { printf "means over %d rounds: put %.0f -> %.0f us (x%.2f), remove %.0f -> %.0f us (x%.2f), 4 clients %.0f -> %.0f pairs/s (x%.2f)\n",
          n["after"], put["before"]/n["before"], put["after"]/n["after"], put["after"]/put["before"],
          rm["before"]/n["before"], rm["after"]/n["after"], rm["after"]/rm["before"],
          pairs["before"]/n["before"], pairs["after"]/n["after"], pairs["after"]/pairs["before"] }'
