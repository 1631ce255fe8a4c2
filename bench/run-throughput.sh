#!/usr/bin/env bash
# The throughput benchmark in one command: aggregate GB/s and ops/s of Put, Get from MEMORY,
# Get from LOCAL_DISK, BatchPut and BatchGet through the client library, at 4 KiB .. 256 MiB
# values and 1, 4 and 16 client threads, on a standalone mooncaked and on master + 2 nodes
# (separate processes on loopback ports), each cell against a raw TCP loopback copy of the same
# bytes by the same threads in the same run (ratio = raw time / store time). The driver is
# bench/net/throughput_bench.cc; it sizes the daemons' DRAM from the largest Put cell (16 x 256
# MiB = 4 GiB: ~4.3 GiB standalone, ~2.4 GiB per node) and says so on stderr.
#
#   bench/run-throughput.sh             # full matrix, median of 3 rounds, 1 GiB cells (~30 min)
#   QUICK=1 bench/run-throughput.sh     # median of 3 rounds, 256 MiB cells (~10 min loaded)
#   bench/run-throughput.sh --json      # the rows as a JSON array on stdout instead of a table
#   bench/run-throughput.sh -- --topology standalone --sizes 65536 --threads 1,4
#                                       # anything after -- goes to throughput_bench
#
# Writes bench/results/throughput.{md,json,png} (OUT_DIR overrides the directory; NO_WRITE=1
# skips it), keeping the page's hand-written reading between <!-- reading:begin --> and
# <!-- reading:end -->. BUILD_DIR (default build-bench) holds the binaries; REBUILD=1 rebuilds.
set -euo pipefail
cd "$(dirname "$0")/.."
json=0
driver_args=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --json) json=1; shift ;;
        --) shift; driver_args+=("$@"); break ;;
        *) echo "usage: bench/run-throughput.sh [--json] [-- throughput_bench args]" >&2; exit 2 ;;
    esac
done
build=${BUILD_DIR:-build-bench}
out=${OUT_DIR:-bench/results}
user_args=("${driver_args[@]}")
[[ -n "${QUICK:-}" ]] && driver_args=(--quick "${driver_args[@]}")
targets=(throughput_bench mooncaked)
missing=0
for t in "${targets[@]}"; do [[ -x $build/bin/$t ]] || missing=1; done
if [[ $missing == 1 || -n "${REBUILD:-}" ]]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j2 --target "${targets[@]}" >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$(date +%s)
status=0
"$build/bin/throughput_bench" "${driver_args[@]}" > "$tmp/rows.jsonl" || status=$?
elapsed=$(( $(date +%s) - t0 ))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- rendering: the rows are one JSON object per line with fixed keys ----
# field(name): the value of "name" in the current line.
awk_lib='function field(k,   m) { if (match($0, "\"" k "\": \"?[^,\"}]*")) { m = substr($0, RSTART, RLENGTH); sub(/^"[^"]*": "?/, "", m); return m } return "" }
function human(b) { b += 0; return b >= 1048576 ? (b / 1048576) " MiB" : (b / 1024) " KiB" }
function opname(o) { return o == "GetDisk" ? "Get (LOCAL_DISK)" : o == "Get" ? "Get (MEMORY)" : o }'
awk 'BEGIN { printf "[" } NR > 1 { printf ",\n" } { printf "%s", $0 } END { print "]" }' \
    "$tmp/rows.jsonl" > "$tmp/rows.json"

awk "$awk_lib"'
    BEGIN { print "| topology | op | size | threads | values | store GB/s | raw GB/s | ratio | ops/s |";
            print "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" }
    { bad = field("failed_checks") + 0 > 0 ? " (" field("failed_checks") " checks failed: not valid)" : ""
      printf "| %s | %s | %s | %d | %d | %.3f | %.3f | %.2f%s | %.0f |\n", field("topology"),
        opname(field("op")), human(field("size")), field("threads"), field("ops"),
        field("store_gbps"), field("raw_gbps"), field("ratio"), bad, field("ops_per_s") }' \
    "$tmp/rows.jsonl" > "$tmp/table.md"

# Batch vs single, and the goals (Get and Put >= 0.8 of raw at >= 64 KiB; BatchGet >= Get).
awk "$awk_lib"'
    { k = field("topology") SUBSEP field("size") SUBSEP field("threads");
      g[k, field("op")] = field("store_gbps") + 0; r[k, field("op")] = field("ratio") + 0; keys[k] = 1 }
    END {
      print "| topology | size | threads | BatchGet / Get | BatchPut / Put |";
      print "| --- | ---: | ---: | ---: | ---: |";
      n = 0
      for (k in keys) order[++n] = k
      # sort by topology, size, threads (insertion sort on a composite key)
      for (i = 2; i <= n; ++i) { v = order[i]; j = i - 1
        while (j > 0 && cmp(order[j], v) > 0) { order[j + 1] = order[j]; --j } order[j + 1] = v }
      bg_ok = bg_all = bp_ok = bp_all = 0
      for (i = 1; i <= n; ++i) { k = order[i]; split(k, f, SUBSEP)
        bg = ((k, "Get") in g && g[k, "Get"] > 0) ? g[k, "BatchGet"] / g[k, "Get"] : -1
        bp = ((k, "Put") in g && g[k, "Put"] > 0) ? g[k, "BatchPut"] / g[k, "Put"] : -1
        if (bg >= 0) { ++bg_all; if (bg >= 1) ++bg_ok }
        if (bp >= 0) { ++bp_all; if (bp >= 1) ++bp_ok }
        printf "| %s | %s | %d | %s | %s |\n", f[1], human(f[2]), f[3],
          bg < 0 ? "—" : sprintf("%.2f", bg), bp < 0 ? "—" : sprintf("%.2f", bp)
        if (f[2] >= 65536) for (o in want) if ((k, o) in r) {
          ++all[o]; if (r[k, o] >= 0.8) ++ok[o]
          if (!(o in lo) || r[k, o] < lo[o]) lo[o] = r[k, o]; if (!(o in hi) || r[k, o] > hi[o]) hi[o] = r[k, o] } }
      print ""
      printf "Goals: BatchGet >= Get in %d of %d cells; BatchPut >= Put in %d of %d cells", bg_ok, bg_all, bp_ok, bp_all
      for (o in all) printf "; %s >= 0.8 of raw at >= 64 KiB in %d of %d cells (ratios %.2f-%.2f)", opname(o), ok[o], all[o], lo[o], hi[o]
      print "." }
    function cmp(a, b,   x, y) { split(a, x, SUBSEP); split(b, y, SUBSEP)
      if (x[1] != y[1]) return x[1] > y[1] ? -1 : 1   # standalone first
      if (x[2] + 0 != y[2] + 0) return x[2] - y[2]
      return x[3] - y[3] }
    BEGIN { want["Get"] = 1; want["Put"] = 1 }' \
    "$tmp/rows.jsonl" > "$tmp/batch.md"

# The plot: ratio against the raw copy by value size, a panel per topology and thread count.
plot_png="$tmp/throughput.png"
topos=$(awk "$awk_lib"'{ print field("topology") }' "$tmp/rows.jsonl" | awk '!seen[$0]++')
threads=$(awk "$awk_lib"'{ print field("threads") }' "$tmp/rows.jsonl" | sort -n | uniq)
ops="Put BatchPut Get BatchGet GetDisk"
if [[ -s $tmp/rows.jsonl ]] && command -v gnuplot >/dev/null; then
    ntopo=$(echo "$topos" | wc -l); nthr=$(echo "$threads" | wc -l)
    {
        echo "set terminal pngcairo size $((420 * nthr)),$((340 * ntopo)) font ',9'"
        echo "set output '$plot_png'"
        echo "set multiplot layout $ntopo,$nthr title 'store / raw TCP copy (same bytes, same threads, same run)'"
        echo "set logscale x 2; set xlabel 'value size (KiB)'; set ylabel 'ratio (1 = raw)'"
        echo "set yrange [0:*]; set key top left font ',8'; set grid"
        for topo in $topos; do
            for th in $threads; do
                plots=()
                for op in $ops; do
                    f="$tmp/$topo-$th-$op.dat"
                    awk -v t="$topo" -v n="$th" -v o="$op" "$awk_lib"'
                        field("topology") == t && field("threads") == n && field("op") == o {
                            print field("size") / 1024, field("ratio") }' "$tmp/rows.jsonl" > "$f"
                    [[ -s $f ]] && plots+=("'$f' using 1:2 with linespoints title '$op'")
                done
                echo "set title '$topo, $th thread(s)'"
                (IFS=,; echo "plot ${plots[*]}, 0.8 with lines dt 2 lc 'gray' title 'goal 0.8'")
            done
        done
        echo "unset multiplot"
    } > "$tmp/plot.gp"
    gnuplot "$tmp/plot.gp" 2>"$tmp/gnuplot.err" || cat "$tmp/gnuplot.err" >&2
fi

if [[ $json == 1 ]]; then
    cat "$tmp/rows.json"
else
    cat "$tmp/table.md"
    echo
    cat "$tmp/batch.md"
fi

if [[ -z "${NO_WRITE:-}" ]]; then
    mkdir -p "$out"
    page="$out/throughput.md"
    reading=""
    if [[ -f $page ]]; then
        reading=$(awk '/<!-- reading:begin -->/,/<!-- reading:end -->/' "$page")
    fi
    [[ -n $reading ]] || reading=$'<!-- reading:begin -->\n(no reading yet)\n<!-- reading:end -->'
    cmd="bench/run-throughput.sh"
    [[ -n "${QUICK:-}" ]] && cmd="QUICK=1 $cmd"
    [[ ${#user_args[@]} -gt 0 ]] && cmd="$cmd -- ${user_args[*]}"
    {
        echo "# Throughput: every op against a raw TCP copy of the same bytes (bench/run-throughput.sh)"
        echo
        echo "Run $started on $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM;"
        echo "load average $load_before before, $load_after after; $elapsed s."
        echo
        echo '```'
        echo "\$ $cmd"
        echo '```'
        echo
        echo "$reading"
        echo
        echo "## Batch calls against single calls (store GB/s of the batch op / of the single op)"
        echo
        cat "$tmp/batch.md"
        echo
        echo "## Every cell"
        echo
        echo "GB/s are 10^9 bytes per second of values moved by all threads together; ratio = raw"
        echo "time / store time for the same bytes and threads (median of the rounds' ratios)."
        echo
        cat "$tmp/table.md"
        echo
        echo "![ratio against the raw copy by value size](throughput.png)"
        echo
        echo "Rows as JSON: [throughput.json](throughput.json)."
    } > "$page"
    cp "$tmp/rows.json" "$out/throughput.json"
    [[ -f $plot_png ]] && cp "$plot_png" "$out/throughput.png"
fi
exit $status
