#!/usr/bin/env bats
# What an operator must be able to see (issue 22), against a real standalone mooncaked with a
# small DRAM and a disk: corrupted records are reported (log, metric, a clear Get error,
# `nodes`, `check`, `scrub`), disk figures agree between node and master, a stalled daemon is
# unreachable within the deadline, and start-up failures say what failed.

load helpers

setup_file() {
    start_daemon --promotion_on_hit=false
}

# Each test runs in its own subshell: a restart's pid comes back through the file.
setup() {
    MC_PID=$(cat "$MC_DIR/daemon.pid")
}

teardown_file() {
    MC_PID=$(cat "$MC_DIR/daemon.pid")
    if [ -n "${MC_PID:-}" ]; then kill -CONT "$MC_PID" 2>/dev/null || true; fi
    stop_daemon
}

# Milliseconds since the epoch.
now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

# Restarts the daemon on the same port and disk (its records are recovered), and waits until
# the master lists each KEY given: the node registers its recovered records after it is
# listed in `nodes`, so a Get right after could find no such key yet (under CI's load it did).
restart_daemon() {
    local port=${MOONCAKE_MASTER##*:}
    stop_daemon
    wait "$MC_PID" 2>/dev/null || true
    echo "--- restart" >>"$MC_DIR/daemon.log"
    "$DAEMON" --role standalone --listen "127.0.0.1:$port" --metrics_port 0 \
        --dram_size 64MiB --disk_dir "$MC_DIR/disk" --disk_size 256MiB \
        --promotion_on_hit=false >>"$MC_DIR/daemon.log" 2>&1 3>&- &
    export MC_PID=$!
    echo "$MC_PID" >"$MC_DIR/daemon.pid"
    wait_until "'$CTL' nodes | grep -q '127.0.0.1:$port'" 30
    local key
    for key in "$@"; do wait_until "'$CTL' stat '$key'" 30; done
}

# 4000 bytes starting with "VALUE:" and the key $1: a marker the journal (which holds the
# key itself) does not contain.
value_of() {
    python3 -c "import sys; m='VALUE:' + sys.argv[1]; print((m + '.' * 4000)[:4000], end='')" "$1"
}

@test "disk use is one figure: node, master, nodes, metrics and check agree" {
    for i in $(seq 1 30); do value_of "figure/$i" | "$CTL" put "figure/$i"; done
    # Values of 4000 bytes take one 4 KiB block each on disk.
    "$CTL" offload $(for i in $(seq 1 30); do echo "figure/$i"; done) >/dev/null
    wait_until "has_disk_copy figure/30" 20
    wait_until "[ \"\$('$CTL' --json nodes | jq '.[0].node_disk_used')\" = \"\$('$CTL' --json nodes | jq '.[0].local_disk_used')\" ]" 10
    run "$CTL" --json nodes
    [ "$(jq '.[0].local_disk_objects' <<<"$output")" -eq 30 ]
    [ "$(jq '.[0].local_disk_used' <<<"$output")" -eq $((30 * 4096)) ]
    [ "$(jq '.[0].node_disk_used' <<<"$output")" -eq $((30 * 4096)) ]
    [ "$(jq '.[0].node_disk_objects' <<<"$output")" -eq 30 ]
    run "$CTL" metrics
    grep -q "^mooncake_disk_used_bytes $((30 * 4096))$" <<<"$output"
    grep -q "^mooncake_node_disk_used_bytes{.*} $((30 * 4096))$" <<<"$output"
    # The node's own gauge counts whole blocks too (used = allocated when nothing is in flight).
    grep -q "^mooncake_local_disk_used_bytes $((30 * 4096))$" <<<"$output"
    run "$CTL" nodes
    [[ "${lines[1]}" == *"120 KiB / "*" ok" ]]
    run -0 "$CTL" check
    [ "${lines[0]}" = consistent ]
}

@test "corruption counters exist from start-up, at zero" {
    run "$CTL" metrics
    for kind in checksum journal superblock record; do
        grep -q "^mooncake_disk_corruption_total{kind=\"$kind\"} 0$" <<<"$output"
    done
    grep -q '^mooncake_recovery_dropped_total 0$' <<<"$output"
}

@test "a corrupted record: log line, counter, a clear Get error (1), then gone (3); others intact" {
    value_of "corrupt/get" | "$CTL" put corrupt/get
    value_of "corrupt/scrub" | "$CTL" put corrupt/scrub
    value_of "corrupt/good" | "$CTL" put corrupt/good
    "$CTL" offload corrupt/get corrupt/scrub corrupt/good >/dev/null
    wait_until "has_disk_copy corrupt/get && has_disk_copy corrupt/scrub && has_disk_copy corrupt/good" 20
    # DRAM is gone: every value is read from disk now.
    restart_daemon corrupt/get corrupt/scrub corrupt/good
    flip_byte_of "VALUE:corrupt/get"
    flip_byte_of "VALUE:corrupt/scrub"

    run --separate-stderr "$CTL" get corrupt/get
    [ "$status" -eq 1 ]
    [ -z "$output" ]   # never wrong bytes
    [[ "$stderr" == "mooncakectl: get 'corrupt/get': "*"corrupt"* ]]
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
    grep -q "warn.*'corrupt/get' generation [0-9]* (4000 bytes at offset [0-9]*) fails its checksum" \
        "$MC_DIR/daemon.log"
    run "$CTL" metrics
    grep -q '^mooncake_disk_corruption_total{kind="checksum"} 1$' <<<"$output"
    # The master removes it as any dropped copy: now it does not exist.
    wait_until "! '$CTL' stat corrupt/get" 10
    run -3 "$CTL" get corrupt/get
    [ "$("$CTL" get corrupt/good)" = "$(value_of corrupt/good)" ]

    # nodes and check flag the node.
    wait_until "'$CTL' nodes | grep -q 'CORRUPT (1)'" 10
    [ "$("$CTL" --json nodes | jq '.[0].disk_corruptions')" -eq 1 ]
    run --separate-stderr "$CTL" check
    [ "$status" -eq 1 ]
    [[ "$output" == *"met 1 disk corruption events since it started"* ]]
}

@test "scrub reads every record and names the corrupt ones (1); a clean scrub exits 0" {
    run --separate-stderr "$CTL" scrub
    [ "$status" -eq 1 ]
    [[ "$output" == *"corrupt: 'corrupt/scrub' generation"* ]]
    [[ "$stderr" == "mooncakectl: scrub: 1 corrupt records, 0 nodes not scrubbed" ]]
    run "$CTL" --json metrics
    [ "$(jq '[.[] | select(.name == "mooncake_disk_corruption_total" and .labels.kind == "checksum")][0].value' <<<"$output")" -eq 2 ]
    wait_until "! '$CTL' stat corrupt/scrub" 10
    run -0 "$CTL" --json scrub
    [ "$(jq '.[0].corrupt | length' <<<"$output")" -eq 0 ]
    [ "$(jq '.[0].checked' <<<"$output")" -ge 31 ]
    run --separate-stderr "$CTL" scrub --node 12345
    [ "$status" -eq 3 ]
    [[ "$stderr" == *"no live node 12345"* ]]
    [ "$("$CTL" get corrupt/good)" = "$(value_of corrupt/good)" ]
}

@test "a damaged superblock copy is logged, counted and repaired" {
    stop_daemon
    wait "$MC_PID" 2>/dev/null || true
    printf 'garbage!' | dd of="$MC_DIR/disk/mooncake-disk.img" bs=1 seek=4100 conv=notrunc 2>/dev/null
    : >"$MC_DIR/daemon.log"
    restart_daemon corrupt/good
    grep -q "warn.*superblock copy 1 at offset 4096 is damaged; repairing it" "$MC_DIR/daemon.log"
    run "$CTL" metrics
    grep -q '^mooncake_disk_corruption_total{kind="superblock"} 1$' <<<"$output"
    [ "$("$CTL" get corrupt/good)" = "$(value_of corrupt/good)" ]
    # Repaired: the next start finds nothing.
    : >"$MC_DIR/daemon.log"
    restart_daemon corrupt/good
    ! grep -q "superblock" "$MC_DIR/daemon.log"
}

@test "a stalled daemon (SIGSTOP) is unreachable (4) within the deadline, and keeps its keys" {
    local stopped_at
    stopped_at=$(now_ms)
    kill -STOP "$MC_PID"
    local cmd start took
    for cmd in "ls" "get figure/1" "stat figure/1" "nodes"; do
        start=$(now_ms)
        run --separate-stderr "$CTL" --connect_timeout 1 $cmd
        took=$(($(now_ms) - start))
        [ "$status" -eq 4 ] || { echo "$cmd exited $status: $stderr" >&2; kill -CONT "$MC_PID"; return 1; }
        [ "$took" -lt 3000 ] || { echo "$cmd took $took ms" >&2; kill -CONT "$MC_PID"; return 1; }
        [[ "$stderr" == "mooncakectl: cannot reach the daemon: "*"did not answer"* ]]
    done
    start=$(now_ms)
    run -4 bash -c "echo v | '$CTL' --connect_timeout 1 put stalled/k"
    [ $(($(now_ms) - start)) -lt 3000 ]
    # The default deadline holds too (connect timeout 2 s).
    start=$(now_ms)
    run -4 "$CTL" ls
    [ $(($(now_ms) - start)) -lt 5000 ]
    # Stopped past the node lease (client_live_ttl_sec, 10 s): waking, the master must not
    # expire its own node for the silence of its own stop, and with it every key.
    local left=$((11000 - ($(now_ms) - stopped_at)))
    [ "$left" -le 0 ] || sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
    kill -CONT "$MC_PID"
    wait_until "'$CTL' nodes" 10
    [ "$("$CTL" get corrupt/good)" = "$(value_of corrupt/good)" ]
    run "$CTL" metrics
    grep -q '^mooncake_nodes_expired_total 0$' <<<"$output"
    # Its node's first heartbeat may beat the master's first tick after the stop; if not, the
    # kept lease is counted and logged.
    if grep -q '^mooncake_node_expiries_forgiven_total 1$' <<<"$output"; then
        grep -q "warn.*the master did not run for .* ms (stopped or paused); 1 node lease(s)" \
            "$MC_DIR/daemon.log"
    else
        grep -q '^mooncake_node_expiries_forgiven_total 0$' <<<"$output"
    fi
}

@test "a start-up failure says what failed, without a signal nobody sent" {
    local port=${MOONCAKE_MASTER##*:}
    # --listen taken (by the running daemon, which also holds the data port after it).
    run --separate-stderr "$DAEMON" --role standalone --listen "127.0.0.1:$port" \
        --metrics_port 0 --dram_size 16MiB
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"cannot listen on --listen 127.0.0.1:$port: "*"in use"* ]]
    [[ "$stderr" != *"data channel"* ]]
    [[ "$stderr" != *"signal"* ]]
    # The disk in use by the running daemon.
    local other
    for i in $(seq 1 20); do
        other=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        port_is_free "$other" && port_is_free $((other + 1)) && break
    done
    run --separate-stderr "$DAEMON" --role standalone --listen "127.0.0.1:$other" \
        --metrics_port 0 --dram_size 16MiB --disk_dir "$MC_DIR/disk" --disk_size 256MiB
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"is in use by another disk store (pid $MC_PID)"* ]]
    [[ "$stderr" != *"signal"* ]]
}

@test "mooncaked names a misspelt flag in the order given, with the right spelling" {
    run --separate-stderr "$DAEMON" --dram-size 64MiB
    [ "$status" -eq 2 ]
    [ "$stderr" = "mooncaked: unexpected arguments: --dram-size 64MiB; did you mean --dram_size? (see --help)" ]
}
