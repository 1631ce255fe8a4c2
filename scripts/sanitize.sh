#!/usr/bin/env bash
# One sanitizer stage: builds what its tests need with MOONCAKE_SANITIZE into build-<stage>/
# and runs them; exits non-zero on any test failure or any sanitizer report.
#   scripts/sanitize.sh asan   # ASan + UBSan (leaks too): every test of the normal stage
#   scripts/sanitize.sh tsan   # TSan: core and disk store unit tests (the concurrent core)
# Extra arguments go to ctest (e.g. -R ConcurrencyTest). JOBS and SAN_BUILD_DIR override.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/compiler-cache.sh
stage=${1:-}
[ $# -gt 0 ] && shift

case "$stage" in
  asan)
    sanitize=address,undefined
    # Everything ctest runs; benches are left out (they are not tests). A test executable
    # missing here shows up as a failing <target>_NOT_BUILT test, so the list cannot rot.
    targets=(core_unit_tests disk_unit_tests replay_tests integration_tests mooncaked
             cli_unit_tests mooncakectl man_knob_list tierfs_unit_tests tierfs_mount_tests
             mooncake-tierfs fuzz_regression_tests name_codec_replay config_replay
             disk_record_replay disk_recovery_replay data_header_replay master_rpc_replay)
    # The fault suite (tests/fault) is left out: it kills and restarts daemons on timers
    # tuned for normal speed; its bookkeeping checks run in the normal stage.
    # -O1 (the level ASan's docs suggest): the instrumented build is most of this stage, and
    # -O1 compiles a third faster than -O2 (the store's promotion calls, 5.8 s vs 8.2 s,
    # tests/integration/cluster_test.cc 13.2 s vs 18.7 s), at a slightly slower test run.
    cmake_extra=(-DMOONCAKE_BUILD_FAULT_DAEMON=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
    select=()
    ;;
  tsan)
    sanitize=thread
    # The daemon, CLI and FUSE tests run uninstrumented Thrift/libevent/libfuse code whose
    # locking TSan cannot see; the store's concurrency lives in core/ and core/disk/.
    targets=(core_unit_tests disk_unit_tests)
    cmake_extra=()
    select=(-L '^(core|disk)$')
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [ctest args...]" >&2
    exit 2
    ;;
esac

build_dir=${SAN_BUILD_DIR:-build-$stage}
jobs=${JOBS:-2}
# Reports go to files as well as failing the process: a daemon or FUSE process that a test
# starts and stops has no exit status anyone checks, so the files are what catches it.
# (UBSan linked with ASan ignores log_path and writes to stderr: the integration harness
# fails a test whose daemon log holds a report, tests/integration/harness.cc.)
reports=$PWD/$build_dir/sanitizer-reports
suppressions=$PWD/scripts/sanitizers

# Sanitized processes run slower; tests scale their waits by this (tests/test_time_scale.h).
export MOONCAKE_TEST_TIME_SCALE=${MOONCAKE_TEST_TIME_SCALE:-4}
common="halt_on_error=1:abort_on_error=0:print_stacktrace=1:log_path=$reports/report"
# No detect_stack_use_after_return: it made the whole-trace replay test 7x slower (>300 s).
export ASAN_OPTIONS="$common:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
export LSAN_OPTIONS="suppressions=$suppressions/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="$common"
export TSAN_OPTIONS="$common:second_deadlock_stack=1:suppressions=$suppressions/tsan.supp:print_suppressions=0"

start=$(date +%s)
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOONCAKE_SANITIZE="$sanitize" \
  "${cmake_extra[@]}" >/dev/null
rm -rf "$reports" "$build_dir/Testing/Temporary/LastTestsFailed.log"  # ctest keeps a stale one
mkdir -p "$reports"
cmake --build "$build_dir" -j"$jobs" --target "${targets[@]}"
built=$(date +%s)

rc=0
ctest --test-dir "$build_dir" --output-on-failure -j"$jobs" --timeout 900 "${select[@]}" "$@" || rc=$?

shopt -s nullglob
found=("$reports"/report.*)
if [ ${#found[@]} -gt 0 ]; then
  echo "sanitize $stage: ${#found[@]} sanitizer report(s):" >&2
  for f in "${found[@]}"; do
    echo "----- $f" >&2
    cat "$f" >&2
  done
  rc=1
fi
echo "sanitize $stage: build $((built - start)) s, tests $(($(date +%s) - built)) s, exit $rc"
exit $rc
