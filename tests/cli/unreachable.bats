#!/usr/bin/env bats
# mooncakectl with nothing listening: every command exits 4 at once with one stderr line;
# usage errors are still 2 (they are found before any connection).

load helpers

setup_file() {
    local port
    for i in $(seq 1 20); do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        port_is_free "$port" && break
    done
    export MOONCAKE_MASTER="127.0.0.1:$port"
}

@test "every command exits 4 when the daemon cannot be reached" {
    # A connect timeout of 10 s: a command that waited for it instead of failing at once would
    # take 17 x 10 s; the bound scales with sanitizer builds' slowness (MOONCAKE_TEST_TIME_SCALE).
    ctl() { "$CTL" --connect_timeout 10 "$@"; }
    local start=$SECONDS
    run -4 ctl nodes
    run -4 ctl --json nodes
    run -4 ctl ls
    run -4 ctl stat k
    run -4 ctl get k
    run -4 ctl rm k
    run -4 ctl rm --prefix p
    run -4 ctl promote k
    run -4 ctl promote --wait --prefix p
    run -4 ctl offload k
    run -4 ctl evict k
    run -4 ctl tune get
    run -4 ctl tune set promotion_admission_threshold=3
    run -4 ctl metrics
    run -4 ctl tasks
    run -4 ctl hot
    run -4 bash -c "echo v | '$CTL' --connect_timeout 10 put k"
    # Refused connections fail at once: all of the above in well under one connect timeout each.
    [ $((SECONDS - start)) -lt $((10 * ${MOONCAKE_TEST_TIME_SCALE:-1})) ]
}

@test "the error is one line on stderr naming the address" {
    run --separate-stderr "$CTL" stat k
    [ "$status" -eq 4 ]
    [ -z "$output" ]
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
    [[ "$stderr" == "mooncakectl: cannot reach the daemon: "*"$MOONCAKE_MASTER"* ]]
}

@test "--master overrides MOONCAKE_MASTER" {
    run -4 env MOONCAKE_MASTER=127.0.0.1:1 "$CTL" --master "$MOONCAKE_MASTER" nodes
    run --separate-stderr env MOONCAKE_MASTER=127.0.0.1:1 "$CTL" nodes
    [ "$status" -eq 4 ]
    [[ "$stderr" == *"127.0.0.1:1"* ]]
}

@test "a host that does not answer times out within --connect_timeout" {
    # 192.0.2.0/24 is TEST-NET-1: packets go nowhere (or are refused at once, also fine).
    local start=$SECONDS
    run -4 "$CTL" --connect_timeout 1 --master 192.0.2.1:50051 nodes
    [ $((SECONDS - start)) -le 4 ]
}

@test "usage errors are 2 even with no daemon" {
    run -2 "$CTL" nodes --bogus
    run -2 "$CTL" stat
    run -2 "$CTL" put "" -
    run -2 "$CTL" --master 127.0.0.1 nodes
}
