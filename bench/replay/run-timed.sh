#!/usr/bin/env bash
# Timed replay in one command: starts a standalone mooncaked whose DRAM is MEM_FRACTION of the
# replayed prefix's distinct blocks (x OBJECT_SIZE), with a LOCAL_DISK in a temp dir, and
# replays the trace by its timestamps (divided by SPEED) through it with the client library
# (`mooncake-replay --timed`). For comparison it then runs the virtual-clock replay (instant
# promotion, the same core) on the same prefix and block size.
#
#   bench/replay/run-timed.sh                      # 2000 requests (~670 s of trace) at speed 5
#   LIMIT=4000 SPEED=20 MEM_FRACTION=0.05 bench/replay/run-timed.sh [extra mooncake-replay flags]
#
# Environment: TRACE (default ../shared/traces/conversation_trace.jsonl), LIMIT (requests, 2000),
# SPEED (5), MEM_FRACTION (0.1), OBJECT_SIZE (16384), WORKERS (8), BUILD_DIR (build-bench),
# DAEMON_ARGS (extra mooncaked flags, e.g. "--promotion_admission_threshold=1"),
# NO_PAGE=1 (a side run: print the table, but rewrite neither bench/replay/results/timed.* nor
# the table of bench/results/replay-timed.md, the page the README links, between
# <!-- timed:begin --> and <!-- timed:end -->).
# Writes bench/replay/results/timed.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build-bench}
trace=${TRACE:-../shared/traces/conversation_trace.jsonl}
limit=${LIMIT:-2000}
speed=${SPEED:-5}
fraction=${MEM_FRACTION:-0.1}
object_size=${OBJECT_SIZE:-16384}
workers=${WORKERS:-8}
if [[ ! -x $build/bin/mooncake-replay || ! -x $build/bin/mooncaked ]]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j2 --target mooncake-replay mooncaked >/dev/null
fi
replay=$build/bin/mooncake-replay
common=("$trace" --limit "$limit" --mem-fraction "$fraction" --object-size "$object_size")
dram=$("$replay" "${common[@]}" --print-dram-size)
distinct_bytes=$("$replay" "$trace" --limit "$limit" --mem-fraction 1 --object-size "$object_size" --print-dram-size)
# LOCAL_DISK: every distinct block fits (no disk eviction), plus the store's journal and header.
disk_mib=$(( distinct_bytes * 5 / 4 / 1048576 + 64 ))
dir=$(mktemp -d "${TMPDIR:-/tmp}/mooncake-timed-XXXXXX")
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rpc=$(port); data=$(port); metrics=$(port)
"$build/bin/mooncaked" --role=standalone --listen="127.0.0.1:$rpc" --data_port="$data" \
    --metrics_port="$metrics" --dram_size="$dram" --disk_dir="$dir/disk" \
    --disk_size="${disk_mib}MiB" --enable_offload --offload_on_evict --promotion_on_hit \
    --log_level=warn ${DAEMON_ARGS:-} > "$dir/mooncaked.log" 2>&1 &
daemon=$!
cleanup() { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
for _ in $(seq 100); do
    "$build/bin/mooncakectl" --master "127.0.0.1:$rpc" nodes >/dev/null 2>&1 && break
    kill -0 "$daemon" 2>/dev/null || { cat "$dir/mooncaked.log" >&2; exit 1; }
    sleep 0.1
done
echo "run-timed.sh: mooncaked on 127.0.0.1:$rpc, DRAM $dram B ($fraction of the first $limit requests' distinct blocks x $object_size B), LOCAL_DISK ${disk_mib} MiB" >&2
out=bench/replay/results
[[ -n "${NO_PAGE:-}" ]] && out=$dir
mkdir -p "$out"
"$replay" "${common[@]}" --timed --master "127.0.0.1:$rpc" --speed "$speed" --workers "$workers" --json "$@" > "$dir/timed.json"
"$replay" "${common[@]}" --policy promotion --json > "$dir/virtual.json"
jq -r --slurpfile v "$dir/virtual.json" --arg cmd "bench/replay/run-timed.sh (LIMIT=$limit SPEED=$speed MEM_FRACTION=$fraction OBJECT_SIZE=$object_size WORKERS=$workers)" '
  def f4: . * 10000 | round / 10000;
  def ms: "\(.p50 * 100 | round / 100) / \(.p99 * 100 | round / 100)";
  "`\($cmd)`: \(.requests) requests, \(.references) block reads, \(.trace_seconds | round) s of trace in \(.wall_seconds | round) s.\n",
  "| replay | MEMORY hit | LOCAL_DISK hit | miss | Get MEMORY p50 / p99 ms | Get LOCAL_DISK p50 / p99 ms | Put p50 / p99 ms | promotion trigger→COMPLETE p50 / p99 ms (n) | dispatch lag p50 / p99 ms |",
  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  "| timed, through mooncaked | \(.mem_hit_ratio | f4) | \(.disk_hit_ratio | f4) | \(.miss_ratio | f4) | \(.get_memory_ms | ms) | \(.get_disk_ms | ms) | \(.put_ms | ms) | \(.promotion_ms | ms) (\(.promotion_ms.count)) | \(.lag_ms | ms) |",
  "| virtual clock, instant promotion | \($v[0].mem_hit_ratio | f4) | \($v[0].disk_hit_ratio | f4) | \($v[0].miss_ratio | f4) | | | | 0 | |",
  "",
  "Timed / virtual MEMORY hit ratio: \(.mem_hit_ratio / $v[0].mem_hit_ratio * 1000 | round / 1000); put refused \(.put_failures), read errors \(.errors), wrong bytes \(.content_mismatches)."
' "$dir/timed.json" > "$out/timed.md"
[[ "$out" == "$dir" ]] || cp "$dir/timed.json" "$out/timed.json"
cat "$out/timed.md"
if [[ -z "${NO_PAGE:-}" ]]; then
    python3 - bench/results/replay-timed.md "$out/timed.md" <<'PY'
import sys
page, md = sys.argv[1:3]
text = open(page).read()
begin, end = "<!-- timed:begin -->", "<!-- timed:end -->"
if begin in text and end in text:
    body = open(md).read().rstrip() + "\n"
    text = text[:text.index(begin) + len(begin)] + "\n" + body + text[text.index(end):]
    open(page, "w").write(text)
PY
fi
