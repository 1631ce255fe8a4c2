#!/usr/bin/env bash
# The microbenchmarks in one command, each against its baseline measured side by side in the
# same run (a shared 2-core box: absolute numbers drift, ratios of interleaved rounds hold):
#   (a) GetReplicaList with promotion_on_hit on vs off (core_bench, interleaved rounds, median);
#   (b) the LOCAL_DISK store vs fio, same files, sizes and depths (bench/disk/run-disk-bench.sh);
#   (c) Put / Get through the client and a standalone daemon vs a raw TCP copy (net_bench);
#   (d) promotion trigger -> COMPLETE latency p50 / p99 (net_bench, the daemon's histogram).
# Prints a summary of the ratios and writes everything to bench/results/micro.md (the README
# links it), keeping that page's hand-written reading between <!-- reading:begin --> and
# <!-- reading:end -->.
#
#   bench/run-micro.sh            # builds build-bench if needed (BUILD_DIR overrides); ~5 min
#   QUICK=1 bench/run-micro.sh    # fewer rounds (~2 min)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-bench}
out=bench/results
mkdir -p "$out"
if [[ -n "${QUICK:-}" ]]; then
    core_args=(--ratios_only --ratio_rounds=5 --ratio_gets=100000)
    disk_args=(--mib-per-case 64 --repeat 1)
    net_args=(--rounds 3 --quick)
else
    core_args=(--ratios_only --ratio_rounds=9)
    disk_args=(--mib-per-case 128 --repeat 3)
    net_args=(--rounds 9)
fi
targets=(core_bench disk_bench net_bench mooncaked)
missing=0
for t in "${targets[@]}"; do [[ -x $build/bin/$t ]] || missing=1; done
if [[ $missing == 1 || -n "${REBUILD:-}" ]]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j2 --target "${targets[@]}" >/dev/null
fi
if [[ -n "${REUSE:-}" ]]; then
    tmp=$REUSE  # re-render the summary from an earlier KEEP_TMP=1 run's raw outputs
else
    tmp=$(mktemp -d)
    if [[ -n "${KEEP_TMP:-}" ]]; then
        echo "run-micro.sh: raw outputs kept in $tmp" >&2
    else
        trap 'rm -rf "$tmp"' EXIT
    fi
    echo "run-micro.sh: (a) core_bench promotion on/off ..." >&2
    "$build/bin/core_bench" "${core_args[@]}" > "$tmp/core.txt"
    echo "run-micro.sh: (b) disk store vs fio ..." >&2
    BUILD_DIR=$build bench/disk/run-disk-bench.sh "${disk_args[@]}" > "$tmp/disk.txt"
    echo "run-micro.sh: (c, d) loopback Put/Get vs raw TCP, promotion latency ..." >&2
    "$build/bin/net_bench" "${net_args[@]}" > "$tmp/net.txt"
fi

# ---- the summary: one row per figure ----
{
    echo "| figure | measured against (same run) | ratio / value |"
    echo "| --- | --- | --- |"
    # core_bench rows: name (34 chars) threads off on on/off worst
    awk '/^(MEMORY-resident|LOCAL_DISK-only)/ {
            name = substr($0, 1, 34); sub(/ +$/, "", name);
            split(substr($0, 35), f, " ");
            printf "| (a) GetReplicaList, %s, %d thread%s | promotion_on_hit off | on/off %.3f (worst round %.3f) |\n", name, f[1], (f[1] > 1 ? "s" : ""), f[4], f[5] }' "$tmp/core.txt"
    # disk_bench rows: op bs qd ours fio ours/fio [sync ours/sync]
    awk '$1 == "read" || $1 == "write" {
            key = $1 " " $2; r = $6 + 0;
            if (!(key in lo) || r < lo[key]) lo[key] = r;
            if (!(key in hi) || r > hi[key]) hi[key] = r;
            if ($1 == "write" && NF >= 8) { s = $8 + 0; if (!(key in slo) || s < slo[key]) slo[key] = s; if (!(key in shi) || s > shi[key]) shi[key] = s } }
         END { n = split("read 64KiB,read 1MiB,write 64KiB,write 1MiB", ks, ",");
            for (i = 1; i <= n; ++i) { k = ks[i]; if (!(k in lo)) continue;
              line = sprintf("| (b) DiskStore %s, qd 1/8/32 | fio, same file system | %.2f–%.2f of fio", k, lo[k], hi[k]);
              if (k in slo) line = line sprintf("; %.2f–%.2f of fio --fdatasync=1", slo[k], shi[k]);
              print line " |" } }' "$tmp/disk.txt"
    # net_bench copy table: | size | raw put | raw get | Put | Get | BPut | BGet | Put/raw | Get/raw | BPut/raw | BGet/raw |
    awk -F'|' '/^\| [0-9]+ KiB \| [0-9.]+ \|/ && NF >= 12 {
            gsub(/ /, "", $2);
            printf "| (c) Get over loopback, %s | raw TCP copy, same bytes | %s (Get %s us vs raw %s us); BatchGet %s |\n", $2, $10, $6, $4, $12;
            printf "| (c) Put over loopback, %s | raw TCP copy, same bytes | %s (Put %s us vs raw %s us); BatchPut %s |\n", $2, $9, $5, $3, $11 }' "$tmp/net.txt" | sed 's/  */ /g'
    awk -F'|' '/^\| [0-9]+ KiB \| (idle|loaded) \|/ {
            gsub(/ /, "", $2); gsub(/ /, "", $3);
            printf "| (d) promotion trigger→COMPLETE, %s, %s | — | p50 %s ms, p99 %s ms (%s promotions) |\n", $2, $3, $5, $6, $4 }' "$tmp/net.txt" | sed 's/  */ /g'
} > "$tmp/summary.md"

# The hand-written reading of the last run, kept across runs (update it after reading the new
# figures).
reading=$tmp/reading.md
: > "$reading"
if [[ -f $out/micro.md ]]; then
    sed -n '/^<!-- reading:begin -->$/,/^<!-- reading:end -->$/p' "$out/micro.md" > "$reading"
fi
{
    echo "# Microbenchmarks (bench/run-micro.sh)"
    echo
    echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) CPUs (load average $(cut -d' ' -f1-3 /proc/loadavg)); ${QUICK:+quick mode; }every ratio is against a baseline measured in the same run."
    echo
    cat "$tmp/summary.md"
    echo
    if [[ -s $reading ]]; then
        cat "$reading"
        echo
    fi
    echo "## (a) core_bench: GetReplicaList, promotion_on_hit on vs off"
    echo
    echo '```'
    echo "\$ $build/bin/core_bench ${core_args[*]}"
    sed '/^$/d' "$tmp/core.txt"
    echo '```'
    echo
    echo "## (b) DiskStore vs fio"
    echo
    echo '```'
    echo "\$ BUILD_DIR=$build bench/disk/run-disk-bench.sh ${disk_args[*]}"
    cat "$tmp/disk.txt"
    echo '```'
    echo
    echo "## (c, d) loopback: the client vs a raw TCP copy; promotion latency"
    echo
    echo "\`$build/bin/net_bench ${net_args[*]}\`"
    echo
    cat "$tmp/net.txt"
} > "$out/micro.md"
cat "$tmp/summary.md"
echo "run-micro.sh: details in $out/micro.md" >&2
