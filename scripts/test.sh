#!/usr/bin/env bash
# The one test command (README quick start and .ci/run): install, build, run every test, then
# the thread-safety build (scripts/thread-safety.sh: core, daemon, thrift, net, fuse and the
# Python module under clang -Werror=thread-safety, after scripts/check-locks.sh),
# the sanitizer stages (scripts/sanitize.sh: every test under ASan+UBSan, the core and disk
# store tests under TSan). Every stage runs; any failure makes the exit status non-zero.
# Last, every libFuzzer target for FUZZ_SECONDS (default 30) each (scripts/fuzz.sh).
# SANITIZE_STAGES="" skips the sanitizer stages and FUZZ_SECONDS=0 the fuzzing, for a quick
# local run (CI sets neither).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh

failed=()
# One line per failed test and per sanitizer report, printed again at the very end: a CI log
# shows its tail, and a long report of one stage must not hide what failed in another.
summary=()
note_failures() {  # stage build-dir
  local list="$2/Testing/Temporary/LastTestsFailed.log" report
  [ -s "$list" ] && summary+=("$1: failed: $(cut -d: -f2 "$list" | tr '\n' ' ')")
  # And why: each failed assertion (GoogleTest) or test (bats' "not ok") with a few lines
  # after it (the full output is further up, where a truncated log may have lost it).
  local line
  if [ -s "$list" ] && [ -f "$2/Testing/Temporary/LastTest.log" ]; then
    while IFS= read -r line; do summary+=("$1:   $line"); done < <(
      grep -A4 -E ': Failure$|Failure in test|daemon exited|^not ok ' "$2/Testing/Temporary/LastTest.log" |
        grep -v '^--$' | head -n 40)
  fi
  for report in "$2"/sanitizer-reports/report.*; do
    [ -e "$report" ] || continue
    summary+=("$1: $(grep -m1 '^SUMMARY' "$report" || head -n1 "$report") [$report]")
  done
  return 0
}

stage_start=$(date +%s)
rm -f "${BUILD_DIR:-build}/Testing/Temporary/LastTestsFailed.log"  # ctest keeps a stale one
if ! ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"${JOBS:-2}" --timeout 600; then
  failed+=(normal)
  note_failures normal "${BUILD_DIR:-build}"
fi
echo "test.sh: normal tests $(($(date +%s) - stage_start)) s"
stage_start=$(date +%s)
scripts/thread-safety.sh || failed+=(thread-safety)  # clang -Werror=thread-safety build
echo "test.sh: thread-safety stage $(($(date +%s) - stage_start)) s"
for stage in ${SANITIZE_STAGES-asan tsan}; do
  stage_start=$(date +%s)
  if ! scripts/sanitize.sh "$stage"; then
    failed+=("$stage")
    note_failures "$stage" "${SAN_BUILD_DIR:-build-$stage}"
  fi
  echo "test.sh: $stage stage $(($(date +%s) - stage_start)) s"
done
if [ "${FUZZ_SECONDS:-30}" != 0 ]; then
  stage_start=$(date +%s)
  scripts/fuzz.sh "${FUZZ_SECONDS:-30}" || failed+=(fuzz)
  echo "test.sh: fuzz stage $(($(date +%s) - stage_start)) s"
fi
if [ ${#failed[@]} -gt 0 ]; then
  for line in "${summary[@]}"; do echo "test.sh: $line" >&2; done
  echo "test.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "test.sh: all stages passed"
