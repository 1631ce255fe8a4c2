#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14, ASan + UBSan) into ${FUZZ_BUILD_DIR:-build-fuzz}
# and runs each for a while over a temporary copy of its committed seed corpus (the repo is not
# modified). Fails on any crash, leak, timeout, sanitizer report or broken fuzz property, and
# keeps the input that did it under <build dir>/fuzz-artifacts/ (add it to fuzz/corpus/<target>/
# and a regression test under tests/fuzz/ once fixed). Prints executions per target.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 30)] [TARGET...] (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/compiler-cache.sh
secs=${1:-30}
shift || true
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}

scripts/install-deps.sh
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build_dir" -DMOONCAKE_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j"${JOBS:-2}" --target fuzzers

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts="$build_dir/fuzz-artifacts"
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

failed=()
summary=()
start=$(date +%s)
# One target: its result line in $work/$t/summary, its exit status in $work/$t/rc.
fuzz_one() {
  local t=$1 bin="$build_dir/bin/$1" rc=0 execs rate cov
  mkdir -p "$work/$t/corpus"
  if [ ! -x "$bin" ]; then
    echo "fuzz: no binary for $t" >&2
    printf '%-22s %12s %10s %8s  %s\n' "$t" - - - "FAILED (no binary)" >"$work/$t/summary"
    echo 1 >"$work/$t/rc"
    return
  fi
  cp -r "fuzz/corpus/$t/." "$work/$t/corpus/"
  local args=(-max_total_time="$secs" -print_final_stats=1 -timeout=25 -rss_limit_mb=2560
              -artifact_prefix="$work/$t/")
  [ -f "fuzz/$t.dict" ] && args+=(-dict="fuzz/$t.dict")
  echo "fuzz: $t for ${secs}s"
  "$bin" "${args[@]}" "$work/$t/corpus" >"$work/$t/log" 2>&1 || rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$work/$t/log" | tail -1)
  rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$work/$t/log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$work/$t/log" | tail -1 | awk '{print $2}')
  printf '%-22s %12s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
    "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")" >"$work/$t/summary"
  echo "$rc" >"$work/$t/rc"
}

# Each libFuzzer process is single-threaded: run JOBS (default 2) targets at a time, each
# still for the full SECONDS on its own core.
jobs_max=${JOBS:-2}
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait

for t in "${targets[@]}"; do
  summary+=("$(cat "$work/$t/summary")")
  [ "$(cat "$work/$t/rc")" = 0 ] && continue
  failed+=("$t")
  [ -f "$work/$t/log" ] || continue
  echo "----- fuzz: $t" >&2
  grep -E 'ERROR|SUMMARY|fuzz property|runtime error|Test unit written' "$work/$t/log" \
    | head -20 >&2 || true
  tail -40 "$work/$t/log" >&2
  for a in "$work/$t"/crash-* "$work/$t"/leak-* "$work/$t"/timeout-* "$work/$t"/oom-*; do
    [ -e "$a" ] && cp "$a" "$artifacts/$t-$(basename "$a")" && echo "fuzz: kept $artifacts/$t-$(basename "$a")" >&2
  done
done

echo
printf '%-22s %12s %10s %8s  %s\n' target executions exec/s cov result
printf '%s\n' "${summary[@]}"
echo "fuzz: ${#targets[@]} targets, $(( $(date +%s) - start ))s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
