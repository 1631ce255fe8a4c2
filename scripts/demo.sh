#!/usr/bin/env bash
# The main job: install, build, and show keys moving between tiers.
# With the daemon built, runs the standalone daemon and an operator's demo (scripts/daemon-demo.sh);
# until then, replays Mooncake's published trace through the core.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
if [ -x build/bin/mooncaked ] && [ -x build/bin/mooncakectl ] && [ -f scripts/daemon-demo.sh ]; then
  exec scripts/daemon-demo.sh
fi
trace=../shared/traces/conversation_trace.jsonl
[ -f "$trace" ] || { echo "demo: no trace at $trace"; exit 1; }
echo "== Replaying $trace through the core at 10% DRAM (every policy) =="
build/bin/mooncake-replay "$trace" --mem-fraction 0.1 --policy all
