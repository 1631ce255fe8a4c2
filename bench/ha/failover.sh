#!/usr/bin/env bash
# Failover time of master high availability (docs/HA.md): kill -9 of the leader to the first
# successful Get through --master etcd://, over 10 runs, two masters, lease TTL 2 s, real etcd
# on loopback. Prints each run and p50 / p99.
#   bench/ha/failover.sh [BUILD_DIR]     (needs ha_tests built: cmake --build BUILD --target ha_tests)
set -euo pipefail
build=${1:-build}
exec "$build/bin/ha_tests" --gtest_also_run_disabled_tests \
  --gtest_filter='Ha.DISABLED_FailoverTimeBench'
