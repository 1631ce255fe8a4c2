#!/usr/bin/env bats
# The first read of a corrupted record says CORRUPTION (docs/BAD_INPUT.md), also when the read
# that found the damage was another one: with promotion_on_hit (the default) a Get of a
# LOCAL_DISK-only object starts a promotion, whose read of the record races the client's. The
# loser used to find the record already dropped and answer NotFound (3 of 4 first reads in a
# probe); the disk store now remembers why it dropped it.

load helpers

setup_file() {
    start_daemon
}

# The test restarts the daemon in its own subshell: its pid comes back through the file.
teardown_file() {
    MC_PID=$(cat "$MC_DIR/daemon.pid")
    stop_daemon
}

value_of() {
    python3 -c "import sys; m='VALUE:' + sys.argv[1]; print((m + '.' * 4000)[:4000], end='')" "$1"
}

@test "every first read of a corrupted record is CORRUPTION (1), with promotion on hit racing it" {
    local keys=() i
    for i in $(seq -w 1 12); do keys+=("firstread/$i"); done
    for k in "${keys[@]}"; do value_of "$k" | "$CTL" put "$k"; done
    "$CTL" offload "${keys[@]}" >/dev/null
    for k in "${keys[@]}"; do wait_until "has_disk_copy $k" 20; done
    # Written last, so the journal's newest commit is theirs: recovery checks the bytes of
    # the newest commit itself (and drops a damaged one before anyone reads it).
    for k in tail/1 tail/2; do value_of "$k" | "$CTL" put "$k"; done
    "$CTL" offload tail/1 >/dev/null
    wait_until "has_disk_copy tail/1" 20
    "$CTL" offload tail/2 >/dev/null
    wait_until "has_disk_copy tail/2" 20
    # Restarted on the same disk: DRAM is gone, every value is read from disk (and promoted).
    local port=${MOONCAKE_MASTER##*:}
    stop_daemon
    wait "$MC_PID" 2>/dev/null || true
    for k in "${keys[@]}"; do flip_byte_of "VALUE:$k"; done
    "$DAEMON" --role standalone --listen "127.0.0.1:$port" --metrics_port 0 \
        --dram_size 64MiB --disk_dir "$MC_DIR/disk" --disk_size 256MiB \
        --promotion_on_hit=true --promotion_admission_threshold=1 \
        >>"$MC_DIR/daemon.log" 2>&1 3>&- &
    export MC_PID=$!
    echo "$MC_PID" >"$MC_DIR/daemon.pid"
    # Up to 60 s on a loaded machine; if it never comes, say why (its log).
    wait_until "'$CTL' nodes | grep -q '127.0.0.1:$port'" 60 || { tail -20 "$MC_DIR/daemon.log"; false; }

    local not_corrupt=0
    for k in "${keys[@]}"; do
        run --separate-stderr "$CTL" get "$k"
        [ -z "$output" ]   # never wrong bytes
        if [ "$status" -ne 1 ] || [[ "$stderr" != *"corrupt"* ]]; then
            echo "first get of $k: exit $status: $stderr"
            not_corrupt=$((not_corrupt + 1))
        fi
    done
    if [ "$not_corrupt" -ne 0 ]; then grep -n "firstread" "$MC_DIR/daemon.log" | tail -40; fi
    [ "$not_corrupt" -eq 0 ]
    # Then gone (the master removed each key), and nothing else is hurt.
    run "$CTL" get "${keys[0]}"
    [ "$status" -eq 3 ]
}
