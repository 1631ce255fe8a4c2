#!/usr/bin/env bash
# The operator's first five minutes: a standalone mooncaked with a small DRAM, puts that
# overflow it to LOCAL_DISK, reads that make some keys hot, and the keys' tiers changing
# (offload, then promotion) in mooncakectl and in the /tier FUSE view, with the metrics that
# count it. Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MOONCAKE_BIN:-build/bin}
work=$(mktemp -d /tmp/mooncake-demo.XXXX)
daemon_pid=""
mnt=""
cleanup() {
  if [ -n "$mnt" ]; then fusermount3 -u -z "$mnt" 2>/dev/null || true; fi
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  if [ -n "$mnt" ] && [ "$mnt" != /tier ]; then rmdir "$mnt" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {  # a free TCP port whose successor (the data channel) is free too
  local p
  for p in $(seq 50051 2 50151); do
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && ! (exec 3<>/dev/tcp/127.0.0.1/$((p + 1))) 2>/dev/null; then
      echo "$p"; return
    fi
  done
  echo "no free port" >&2; exit 1
}
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

port=$(free_port)
export MOONCAKE_MASTER=127.0.0.1:$port
step "Start a standalone daemon: 8 MiB of DRAM over a 256 MiB LOCAL_DISK"
echo "$ mooncaked --role standalone --listen $MOONCAKE_MASTER --dram_size 8MiB --disk_dir $work/disk --disk_size 256MiB --metrics_port 0"
"$bin/mooncaked" --role standalone --listen "$MOONCAKE_MASTER" --dram_size 8MiB \
  --disk_dir "$work/disk" --disk_size 256MiB --metrics_port 0 --log_level warn &
daemon_pid=$!
for _ in $(seq 100); do "$bin/mooncakectl" nodes >/dev/null 2>&1 && break; sleep 0.1; done
run "$bin/mooncakectl" nodes

if [ "$(id -u)" -eq 0 ] && [ -e /dev/fuse ] && [ -x "$bin/mooncake-tierfs" ]; then
  if mkdir -p /tier 2>/dev/null && [ -z "$(ls -A /tier 2>/dev/null)" ] && ! mountpoint -q /tier; then
    mnt=/tier
  else
    mnt=$(mktemp -d /tmp/tier.XXXX)
  fi
  step "Mount the FUSE view at $mnt"
  run "$bin/mooncake-tierfs" "$mnt"
  for _ in $(seq 50); do [ -d "$mnt/keys" ] && break; sleep 0.1; done
fi

step "Put 12 values of 1 MiB: more than DRAM holds, so the coldest go to LOCAL_DISK"
head -c $((1 << 20)) /dev/urandom >"$work/value"
for i in $(seq -w 1 12); do "$bin/mooncakectl" put "kv/block-$i" "$work/value"; done
echo "(12 puts done)"
sleep 0.5
run "$bin/mooncakectl" ls
if [ -n "$mnt" ]; then run ls "$mnt/MEMORY" "$mnt/LOCAL_DISK"; fi

hot=$("$bin/mooncakectl" ls --tier LOCAL_DISK --json | grep -o '"key": *"[^"]*"' | head -3 | sed 's/.*: *"\(.*\)"/\1/')
step "Read three LOCAL_DISK keys twice each: the second read admits them for promotion"
for k in $hot; do
  for _ in 1 2; do run "$bin/mooncakectl" get "$k" --out /dev/null; done
done
# The holder copies them back in the background: milliseconds, waited for up to 10 s on a
# loaded machine so what follows is what happened.
in_memory() { "$bin/mooncakectl" --json stat "$1" | grep -q '"tiers": *\[ *"MEMORY"'; }
for _ in $(seq 200); do
  all=1
  for k in $hot; do in_memory "$k" || all=0; done
  [ "$all" = 1 ] && break
  sleep 0.05
done
if [ "$all" = 1 ]; then
  step "All three are back in MEMORY; stat shows each key's last promotion decision"
else
  step "Not all three are back in MEMORY yet; stat says why (each key's last promotion decision)"
fi
for k in $hot; do run "$bin/mooncakectl" stat "$k"; done
if [ -n "$mnt" ]; then
  run ls "$mnt/MEMORY"
  first=$(echo "$hot" | head -1)
  run getfattr -n user.mooncake.tiers "$mnt/keys/${first//\//%2F}"
  run getfattr -n user.mooncake.promotion "$mnt/keys/${first//\//%2F}"
fi

step "What the store counted: every promotion attempt ends in one named outcome"
"$bin/mooncakectl" metrics | grep -E '^mooncake_(promotion_(attempts|queued|deduplicated|completed)_total|promotion_failed_total|offload_completed_total|gets_total|dram_used_bytes|dram_capacity_bytes)' || true

step "Tune a knob at runtime (no restart)"
run "$bin/mooncakectl" tune set promotion_admission_threshold=3
run "$bin/mooncakectl" tune get promotion_admission_threshold

step "Check the books: DRAM used = live allocations, no pin without a task, funnels balanced"
run "$bin/mooncakectl" check
echo
echo "Demo done; the daemon and the mount are stopped on exit."
