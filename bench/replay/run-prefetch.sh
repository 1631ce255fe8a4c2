#!/usr/bin/env bash
# Prefetch on exist, end to end (issue 37; Mooncake RFC #4271): the timed replay through a real
# standalone mooncaked, each request checking its blocks with BatchExists GAP ms before its
# BatchGet, prefetch on against off, at every gap of GAPS. One fresh daemon per cell (the
# on/off cells of a gap run back to back, so both see the same box). Writes
# bench/results/prefetch.md (the table between its markers) and bench/replay/results/prefetch.json.
#
#   BUILD_DIR=build bench/replay/run-prefetch.sh
#
# Environment: TRACE (default ../shared/traces/conversation_trace.jsonl), LIMIT (requests, 1000),
# SPEED (10), MEM_FRACTION (0.1), OBJECT_SIZE (16384), WORKERS (8), GAPS ("0 1 5 20"),
# BUILD_DIR (build-bench), DAEMON_ARGS (extra mooncaked flags), NO_PAGE=1 (print only).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build-bench}
trace=${TRACE:-../shared/traces/conversation_trace.jsonl}
limit=${LIMIT:-1000}
speed=${SPEED:-10}
fraction=${MEM_FRACTION:-0.1}
object_size=${OBJECT_SIZE:-16384}
workers=${WORKERS:-8}
gaps=${GAPS:-0 1 5 20}
replay=$build/bin/mooncake-replay
common=("$trace" --limit "$limit" --mem-fraction "$fraction" --object-size "$object_size")
dram=$("$replay" "${common[@]}" --print-dram-size)
distinct_bytes=$("$replay" "$trace" --limit "$limit" --mem-fraction 1 --object-size "$object_size" --print-dram-size)
disk_mib=$(( distinct_bytes * 5 / 4 / 1048576 + 64 ))  # every block fits: no disk eviction
dir=$(mktemp -d "${TMPDIR:-/tmp}/mooncake-prefetch-XXXXXX")
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
daemon=
cleanup() { [[ -n $daemon ]] && { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null || true; }; rm -rf "$dir"; }
trap cleanup EXIT

# One cell: a fresh daemon (the knob prefetch_on_exist off, so only the call's flag prefetches),
# the timed replay, the daemon stopped.
cell() {
    local gap=$1 mode=$2 rpc data metrics
    shift 2
    rpc=$(port); data=$(port); metrics=$(port)
    rm -rf "$dir/disk"
    "$build/bin/mooncaked" --role=standalone --listen="127.0.0.1:$rpc" --data_port="$data" \
        --metrics_port="$metrics" --dram_size="$dram" --disk_dir="$dir/disk" \
        --disk_size="${disk_mib}MiB" --enable_offload --offload_on_evict --promotion_on_hit \
        --prefetch_on_exist=false --log_level=warn ${DAEMON_ARGS:-} > "$dir/mooncaked.log" 2>&1 &
    daemon=$!
    for _ in $(seq 100); do
        "$build/bin/mooncakectl" --master "127.0.0.1:$rpc" nodes >/dev/null 2>&1 && break
        kill -0 "$daemon" 2>/dev/null || { cat "$dir/mooncaked.log" >&2; exit 1; }
        sleep 0.1
    done
    "$replay" "${common[@]}" --timed --master "127.0.0.1:$rpc" --speed "$speed" \
        --workers "$workers" --prefetch-gap-ms "$gap" --prefetch "$mode" --json "$@"
    kill "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=
}

: > "$dir/cells.json"
for gap in $gaps; do
    for mode in on off; do
        echo "run-prefetch.sh: gap $gap ms, prefetch $mode" >&2
        cell "$gap" "$mode" "$@" >> "$dir/cells.json"
    done
done
cmd="BUILD_DIR=$build LIMIT=$limit SPEED=$speed MEM_FRACTION=$fraction OBJECT_SIZE=$object_size WORKERS=$workers GAPS=\"$gaps\"${DAEMON_ARGS:+ DAEMON_ARGS=\"$DAEMON_ARGS\"} bench/replay/run-prefetch.sh $*"
jq -rs --arg cmd "$cmd" '
  def f3: . * 1000 | round / 1000;
  def f1: . * 10 | round / 10;
  "`\($cmd)` (\(.[0].requests) requests, \(.[0].references) block reads per cell, DRAM = \(.[0].mem_fraction) of the distinct blocks):\n",
  "| gap ms | prefetch | would-be LOCAL_DISK reads | found MEMORY | share | MEMORY / LOCAL_DISK / miss (all reads) | modeled TTFT mean / p50 / p99 ms | BatchExists p50 / p99 ms | promotion trigger→COMPLETE p50 / p99 ms | dispatch lag p99 ms |",
  "| ---: | --- | ---: | ---: | ---: | --- | --- | --- | --- | ---: |",
  (.[] | "| \(.prefetch_gap_ms) | \(if .prefetch then "on" else "off" end) | \(.would_be_disk) | \(.would_be_disk_found_memory) | **\(.would_be_disk_memory_ratio | f3)** | \(.mem_hit_ratio | f3) / \(.disk_hit_ratio | f3) / \(.miss_ratio | f3) | \(.ttft_ms_mean | f1) / \(.ttft_ms_p50 | f1) / \(.ttft_ms_p99 | f1) | \(.exists_ms.p50 | f3) / \(.exists_ms.p99 | f3) | \(.promotion_ms.p50 | f1) / \(.promotion_ms.p99 | f1) | \(.lag_ms.p99 | f1) |")
' "$dir/cells.json" > "$dir/prefetch.md"
cat "$dir/prefetch.md"
if [[ -z "${NO_PAGE:-}" ]]; then
    mkdir -p bench/replay/results
    jq -s . "$dir/cells.json" > bench/replay/results/prefetch.json
    /usr/bin/python3 - bench/results/prefetch.md "$dir/prefetch.md" <<'PY'
import sys
page, md = sys.argv[1:3]
text = open(page).read()
begin, end = "<!-- prefetch:begin -->", "<!-- prefetch:end -->"
body = open(md).read().rstrip() + "\n"
text = text[:text.index(begin) + len(begin)] + "\n" + body + text[text.index(end):]
open(page, "w").write(text)
PY
fi
