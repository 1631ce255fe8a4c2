#!/usr/bin/env bash
# The replay matrix in one command: every policy x DRAM fraction {0.05, 0.1, 0.25} on every
# trace in ../shared/traces/ (or TRACES="a.jsonl b.jsonl"), through mooncake-replay --json.
# Writes bench/replay/results/matrix.{tsv,md}, plots bench/replay/results/hit_ratio.{png,svg}
# (gnuplot: MEMORY hit ratio against DRAM fraction, one line per policy, one panel per trace)
# and replaces the table of bench/results/replay-matrix.md (the page the README links) between
# <!-- matrix:begin --> and <!-- matrix:end -->, so the page and the plot always come from the
# same run.
#
#   bench/replay/run-matrix.sh            # builds build-bench if needed (BUILD_DIR overrides)
#   FRACTIONS="0.05 0.1" JOBS=1 REAL_DISK=0 bench/replay/run-matrix.sh
#   REPLOT=1 bench/replay/run-matrix.sh   # only redo table, plot and page from matrix.tsv
#
# REAL_DISK=1 (default) adds a "promotion --real-disk" row: the same replay with LOCAL_DISK
# through the real DiskStore (OBJECT_SIZE_REAL_DISK bytes per block, default 16384, so the
# whole trace's disk traffic stays small); its hit ratios must equal the promotion row's.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD_DIR:-build-bench}
fractions=${FRACTIONS:-"0.05 0.1 0.25"}
jobs=${JOBS:-2}
real_disk=${REAL_DISK:-1}
rd_size=${OBJECT_SIZE_REAL_DISK:-16384}
out=bench/replay/results
bin=$build/bin/mooncake-replay
if [[ -z "${TRACES:-}" ]]; then
    TRACES=$(ls "$root"/../shared/traces/*.jsonl 2>/dev/null || true)
fi
[[ -n "$TRACES" ]] || { echo "run-matrix.sh: no traces (set TRACES)" >&2; exit 1; }
if [[ ! -x $bin ]] || [[ -n "${REBUILD:-}" ]]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j2 --target mooncake-replay >/dev/null
fi
command -v gnuplot >/dev/null || { echo "run-matrix.sh: gnuplot missing (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One job per (trace, fraction[, real disk]); each writes a JSON file.
jobs_file=$tmp/jobs
n=0
for trace in $TRACES; do
    for f in $fractions; do
        n=$((n + 1))
        echo "$bin $trace --mem-fraction $f --policy all --json > $tmp/$n.json" >> "$jobs_file"
        echo "$(basename "$trace" .jsonl) $tmp/$n.json" >> "$tmp/index"
        if [[ $real_disk == 1 ]]; then
            n=$((n + 1))
            echo "$bin $trace --mem-fraction $f --policy promotion --real-disk --object-size $rd_size --json > $tmp/$n.json" >> "$jobs_file"
            echo "$(basename "$trace" .jsonl) $tmp/$n.json realdisk" >> "$tmp/index"
        fi
    done
done
tsv=$out/matrix.tsv
if [[ -z "${REPLOT:-}" ]]; then
start=$(date +%s)
echo "run-matrix.sh: $n replays, $jobs at a time" >&2
xargs -P "$jobs" -I{} -d '\n' sh -c '{} || { echo "failed: {}" >&2; exit 255; }' < "$jobs_file"
echo "run-matrix.sh: replays took $(( $(date +%s) - start )) s" >&2

# matrix.tsv: trace policy fraction mem_hit disk_hit miss promotions dram_fill disk_written_MiB disk_read_MiB
printf 'trace\tpolicy\tmem_fraction\tmem_hit_ratio\tdisk_hit_ratio\tmiss_ratio\tpromotions_per_ref\tmean_dram_fill\tdisk_written_mib\tdisk_read_mib\n' > "$tsv"
while read -r trace file tag; do
    jq -r --arg t "$trace" --arg tag "${tag:-}" '
      (if type == "array" then .[] else . end) |
      [$t, (if $tag == "realdisk" then .policy + " --real-disk" else .policy end),
       .mem_fraction, .mem_hit_ratio, .disk_hit_ratio, .miss_ratio, .promotions,
       (.mean_dram_fill // ""),
       (if .disk then (.disk.bytes_written / 1048576 | floor) else "" end),
       (if .disk then (.disk.bytes_read / 1048576 | floor) else "" end)] | @tsv' "$file"
done < "$tmp/index" >> "$tsv"
fi  # REPLOT=1: table, plot and page from the existing matrix.tsv, no replays

# matrix.md: per trace, policy rows x fraction columns (MEMORY hit ratio).
python3 - "$tsv" "$out/matrix.md" "$fractions" <<'PY'
import csv, sys
tsv, md, fractions = sys.argv[1], sys.argv[2], [float(f) for f in sys.argv[3].split()]
rows = list(csv.DictReader(open(tsv), delimiter='\t'))
out = []
for trace in dict.fromkeys(r['trace'] for r in rows):
    rs = [r for r in rows if r['trace'] == trace]
    out.append(f"`{trace}` — MEMORY hit ratio (LOCAL_DISK hit ratio in parentheses):\n")
    out.append("| policy | " + " | ".join(f"F = {f:g}" for f in fractions) + " |")
    out.append("| --- |" + " ---: |" * len(fractions))
    for policy in dict.fromkeys(r['policy'] for r in rs):
        cells = []
        for f in fractions:
            m = [r for r in rs if r['policy'] == policy and abs(float(r['mem_fraction']) - f) < 1e-9]
            cells.append(f"{float(m[0]['mem_hit_ratio']):.4f} ({float(m[0]['disk_hit_ratio']):.4f})" if m else "")
        out.append(f"| {policy} | " + " | ".join(cells) + " |")
    disk = [r for r in rs if r['disk_written_mib']]
    if disk:
        out.append("")
        out.append("Real LOCAL_DISK (`--real-disk`): " + "; ".join(
            f"F = {float(r['mem_fraction']):g}: {r['disk_written_mib']} MiB written, {r['disk_read_mib']} MiB read"
            for r in disk) + ".")
    out.append("")
open(md, 'w').write("\n".join(out))
PY

# The plot: one panel per trace.
ntraces=$(echo $TRACES | wc -w)
plot_cmds=""
for trace in $TRACES; do
    name=$(basename "$trace" .jsonl)
    awk -F'\t' -v t="$name" 'NR > 1 && $1 == t' "$tsv" > "$tmp/$name.tsv"
    policies=$(cut -f2 "$tmp/$name.tsv" | awk '!seen[$0]++')
    plot="set title '$name' noenhanced; plot "
    i=0
    while IFS= read -r p; do
        i=$((i + 1))
        awk -F'\t' -v p="$p" '$2 == p { print $3, $4 }' "$tmp/$name.tsv" | sort -g > "$tmp/$name.$i.dat"
        [[ $i -gt 1 ]] && plot+=", "
        plot+="'$tmp/$name.$i.dat' using 1:2 with linespoints lw 1.5 dt $(( (i - 1) % 4 + 1 )) ps 1.2 title '$p'"
    done <<< "$policies"
    plot_cmds+="$plot"$'\n'
done
for term in png svg; do
    if [[ $term == png ]]; then
        setterm="set terminal pngcairo size $((860 * ntraces)),480 font 'sans,10'"
    else
        setterm="set terminal svg size $((860 * ntraces)),480 dynamic font 'sans,10'"
    fi
    gnuplot <<GP
$setterm
set output '$out/hit_ratio.$term'
set multiplot layout 1,$ntraces
set xlabel 'DRAM size (fraction of distinct blocks)'
set ylabel 'MEMORY hit ratio'
set key outside right center noenhanced
set grid
set logscale x
set xrange [0.04:0.3]
set xtics ($(echo $fractions | sed 's/ /, /g'))
set yrange [0:*]
$plot_cmds
unset multiplot
GP
done

# The results page: the table between the markers.
page=bench/results/replay-matrix.md
python3 - "$page" "$out/matrix.md" <<'PY'
import sys
page, md = sys.argv[1], sys.argv[2]
text = open(page).read()
begin, end = "<!-- matrix:begin -->", "<!-- matrix:end -->"
if begin not in text or end not in text:
    sys.exit("run-matrix.sh: " + page + " has no matrix markers; table left in " + md)
body = open(md).read().rstrip() + "\n"
text = text[:text.index(begin) + len(begin)] + "\n" + body + text[text.index(end):]
open(page, "w").write(text)
PY
echo "run-matrix.sh: wrote $tsv, $out/matrix.md, $out/hit_ratio.png, $out/hit_ratio.svg and the table of $page" >&2
cat "$out/matrix.md"
