#!/usr/bin/env bash
# The policy suite, one command: every workload (bench/replay/workloads.h, the conversation
# trace, and any Mooncake-format trace given as an argument) x every policy x DRAM fraction
# 0.05 / 0.1 / 0.25, through the real core (mooncake-replay --suite). Writes
# bench/replay/results/suite.md, suite.tsv and suite.png (regret per workload, gnuplot).
#
#   bench/replay/run-suite.sh [TRACE...]     # BUILD_DIR (default build), JOBS (default 2),
#                                            # SCALE (synthetic size, default 0.5)
#
# Runs niced; a few minutes of CPU on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
bin=$build/bin/mooncake-replay
out=bench/replay/results
if [[ ! -x $bin ]]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    nice cmake --build "$build" -j2 --target mooncake-replay >/dev/null
fi
command -v gnuplot >/dev/null || { echo "run-suite.sh: gnuplot missing (apt-get install gnuplot-nox)" >&2; exit 1; }
traces=()
# The conversation trace (MOONCAKE_TRACE, default ../shared/traces/...) unless NO_CONVERSATION=1:
# its 288k references are most of the suite's CPU (15 store runs of ~8 s each on an idle core).
conv=${MOONCAKE_TRACE:-../shared/traces/conversation_trace.jsonl}
[[ -z ${NO_CONVERSATION:-} && -f $conv ]] && traces+=(--suite-trace "$conv")
for t in "$@"; do traces+=(--suite-trace "$t"); done
nice -n 10 "$bin" --suite ${traces[@]+"${traces[@]}"} --suite-scale "${SCALE:-0.5}" --out "$out" \
    --jobs "${JOBS:-2}" 2>"$out/suite.log"
# The plot: each policy's hit ratio minus the better reference LRU, per workload@fraction.
cols=$(head -1 "$out/suite-plot.dat" | wc -w)
gnuplot <<GP
set terminal pngcairo size 1600,700 noenhanced font ",10"
set output "$out/suite.png"
set title "MEMORY hit ratio minus max(reference-lru, reference-lru-no-promotion), per workload @ DRAM fraction"
set style data histograms
set style histogram clustered gap 2
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -60 scale 0
set ytics nomirror
set grid ytics
set key outside right top
set yrange [-0.1:*]
plot for [i=2:$cols] "$out/suite-plot.dat" using i:xtic(1) title columnhead(i)
GP
echo "run-suite.sh: wrote $out/suite.md, $out/suite.tsv, $out/suite.png"
