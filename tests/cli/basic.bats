#!/usr/bin/env bats
# mooncakectl against a real standalone mooncaked: put/get/rm/stat/ls and the inspection
# commands in both output formats, odd keys, stdin and files, a 64 MiB value, exit codes.

load helpers

setup_file() {
    # Short read leases so rm and evict right after a get are not refused by default.
    start_daemon --default_kv_lease_ttl=200
}

teardown_file() {
    stop_daemon
}

@test "put from a file and from stdin, get to stdout and to a file" {
    printf 'from a file\n' >"$BATS_TEST_TMPDIR/v"
    run "$CTL" put basic/file "$BATS_TEST_TMPDIR/v"
    [ "$status" -eq 0 ]
    [ "$output" = "stored basic/file (12 B)" ]

    run bash -c "printf 'from stdin' | '$CTL' put basic/stdin"
    [ "$status" -eq 0 ]
    run bash -c "printf 'dash' | '$CTL' put basic/dash -"
    [ "$status" -eq 0 ]

    run "$CTL" get basic/file
    [ "$status" -eq 0 ]
    [ "$output" = "from a file" ]
    run "$CTL" get basic/stdin
    [ "$output" = "from stdin" ]
    run "$CTL" get basic/dash
    [ "$output" = "dash" ]

    run "$CTL" get basic/file --out "$BATS_TEST_TMPDIR/out"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    cmp "$BATS_TEST_TMPDIR/v" "$BATS_TEST_TMPDIR/out"
}

@test "get --out writes through symlinks and into FIFOs, never replacing them" {
    printf 'through' | "$CTL" put basic/through
    : >"$BATS_TEST_TMPDIR/target"
    ln -s "$BATS_TEST_TMPDIR/target" "$BATS_TEST_TMPDIR/link"
    "$CTL" get basic/through --out "$BATS_TEST_TMPDIR/link"
    [ -L "$BATS_TEST_TMPDIR/link" ]
    [ "$(cat "$BATS_TEST_TMPDIR/target")" = through ]

    mkfifo "$BATS_TEST_TMPDIR/fifo"
    cat "$BATS_TEST_TMPDIR/fifo" >"$BATS_TEST_TMPDIR/from-fifo" &
    "$CTL" get basic/through --out "$BATS_TEST_TMPDIR/fifo"
    wait
    [ -p "$BATS_TEST_TMPDIR/fifo" ]
    [ "$(cat "$BATS_TEST_TMPDIR/from-fifo")" = through ]

    # A regular file is replaced whole, keeping its mode.
    printf 'a much longer old content' >"$BATS_TEST_TMPDIR/old"
    chmod 640 "$BATS_TEST_TMPDIR/old"
    "$CTL" get basic/through --out "$BATS_TEST_TMPDIR/old"
    [ "$(cat "$BATS_TEST_TMPDIR/old")" = through ]
    [ "$(stat -c %a "$BATS_TEST_TMPDIR/old")" = 640 ]
    # A failed get leaves the file alone.
    run -3 "$CTL" get basic/missing --out "$BATS_TEST_TMPDIR/old"
    [ "$(cat "$BATS_TEST_TMPDIR/old")" = through ]
}

@test "put and get --json" {
    run bash -c "printf 'json value' | '$CTL' --json put basic/json"
    [ "$status" -eq 0 ]
    [ "$(jq -r .key <<<"$output")" = basic/json ]
    [ "$(jq -r .size <<<"$output")" = 10 ]
    run "$CTL" --json get basic/json
    [ "$status" -eq 0 ]
    [ "$(jq -r .value <<<"$output")" = "json value" ]
    [ "$(jq -r .size <<<"$output")" = 10 ]
    run "$CTL" --json get basic/json --out "$BATS_TEST_TMPDIR/j"
    [ "$(jq -r .out <<<"$output")" = "$BATS_TEST_TMPDIR/j" ]
    [ "$(cat "$BATS_TEST_TMPDIR/j")" = "json value" ]
}

@test "binary values round trip byte for byte" {
    head -c 100000 /dev/urandom >"$BATS_TEST_TMPDIR/bin"
    "$CTL" put basic/binary "$BATS_TEST_TMPDIR/bin"
    "$CTL" get basic/binary >"$BATS_TEST_TMPDIR/bin.out"
    cmp "$BATS_TEST_TMPDIR/bin" "$BATS_TEST_TMPDIR/bin.out"
    run "$CTL" --json get basic/binary
    jq -r .value_base64 <<<"$output" | base64 -d >"$BATS_TEST_TMPDIR/bin.b64"
    cmp "$BATS_TEST_TMPDIR/bin" "$BATS_TEST_TMPDIR/bin.b64"
}

@test "a 64 MiB value, from a file and from stdin" {
    head -c 67108864 /dev/urandom >"$BATS_TEST_TMPDIR/big"
    run "$CTL" put basic/big64 "$BATS_TEST_TMPDIR/big"
    [ "$status" -eq 0 ]
    [ "$output" = "stored basic/big64 (64 MiB)" ]
    "$CTL" get basic/big64 --out "$BATS_TEST_TMPDIR/big.out"
    cmp "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/big.out"
    "$CTL" get basic/big64 | cmp "$BATS_TEST_TMPDIR/big" -
    run "$CTL" --json stat basic/big64
    [ "$(jq -r .size <<<"$output")" = 67108864 ]
    # Gone from DRAM to make room, the next one comes through stdin.
    sleep 0.3
    "$CTL" rm basic/big64
    "$CTL" put basic/big64-stdin <"$BATS_TEST_TMPDIR/big"
    "$CTL" get basic/big64-stdin | cmp "$BATS_TEST_TMPDIR/big" -
    sleep 0.3
    "$CTL" rm basic/big64-stdin
}

@test "a piped value past the in-memory bound is spooled and stored whole" {
    # 9 MiB through a pipe: more than put holds in memory (4 MiB), so it spools; and a get
    # into a pipe, into /dev/null and into a file that already holds more.
    head -c 9437185 /dev/urandom >"$BATS_TEST_TMPDIR/piped"
    cat "$BATS_TEST_TMPDIR/piped" | "$CTL" put basic/piped
    "$CTL" get basic/piped | cmp "$BATS_TEST_TMPDIR/piped" -
    "$CTL" get basic/piped --out /dev/null
    head -c 20000000 /dev/zero >"$BATS_TEST_TMPDIR/longer"
    "$CTL" get basic/piped --out "$BATS_TEST_TMPDIR/longer"
    cmp "$BATS_TEST_TMPDIR/piped" "$BATS_TEST_TMPDIR/longer"
    "$CTL" get basic/piped >"$BATS_TEST_TMPDIR/redirected"
    cmp "$BATS_TEST_TMPDIR/piped" "$BATS_TEST_TMPDIR/redirected"
    sleep 0.3
    "$CTL" rm basic/piped
}

@test "keys with spaces, slashes and non-ASCII bytes" {
    local spaced="a key/with spaces/and/slashes"
    local utf8=$'caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac'
    local latin1=$'latin1-\xe9t\xe9'   # not valid UTF-8
    local ctrl=$'tab\there'
    for k in "$spaced" "$utf8" "$latin1" "$ctrl"; do
        printf 'value of %s' "$k" | "$CTL" put "$k"
        [ "$("$CTL" get "$k")" = "value of $k" ]
    done

    run "$CTL" --json stat "$spaced"
    [ "$(jq -r .key <<<"$output")" = "$spaced" ]
    [ "$(jq -r 'has("key_base64")' <<<"$output")" = false ]

    run "$CTL" --json stat "$utf8"
    [ "$(jq -r .key <<<"$output")" = "$utf8" ]
    [ "$(jq -r 'has("key_base64")' <<<"$output")" = false ]

    # Not UTF-8: key_base64 holds the exact bytes, key the surrogate-escaped form.
    run "$CTL" --json stat "$latin1"
    [ "$status" -eq 0 ]
    [ "$(jq -r .key_base64 <<<"$output" | base64 -d)" = "$latin1" ]
    grep -q '"key": "latin1-\\udce9t\\udce9"' <<<"$output"

    # In tables, undisplayable bytes are \xNN.
    run "$CTL" stat "$latin1"
    [[ "${lines[0]}" == *'latin1-\xE9t\xE9' ]]
    run "$CTL" stat "$ctrl"
    [[ "${lines[0]}" == *'tab\x09here' ]]

    run "$CTL" --json ls --prefix "latin1-"
    [ "$(jq -r '.[0].key_base64' <<<"$output" | base64 -d)" = "$latin1" ]

    # A key starting with '-' after '--'.
    echo dash | "$CTL" put -- -dashed
    [ "$("$CTL" get -- -dashed)" = dash ]
}

@test "stat in both formats" {
    echo -n 12345 | "$CTL" put basic/stat
    run "$CTL" stat basic/stat
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^key:\ +basic/stat$ ]]
    [[ "${lines[1]}" =~ ^size:\ +5\ B\ \(5\ bytes\)$ ]]
    [[ "${lines[2]}" =~ ^tiers:\ +MEMORY ]]
    [[ "$output" == *"replicas:"* ]]
    [[ "$output" == *"MEMORY      COMPLETE"* || "$output" == *"MEMORY  COMPLETE"* ]]

    run "$CTL" --json stat basic/stat
    [ "$status" -eq 0 ]
    [ "$(jq -r .key <<<"$output")" = basic/stat ]
    [ "$(jq -r .size <<<"$output")" = 5 ]
    [ "$(jq -r '.tiers[0]' <<<"$output")" = MEMORY ]
    [ "$(jq -r '.replicas[0].tier' <<<"$output")" = MEMORY ]
    [ "$(jq -r '.replicas[0].status' <<<"$output")" = COMPLETE ]
    [ "$(jq -r '.replicas[0].node' <<<"$output")" = "$MOONCAKE_MASTER" ]
}

@test "stat and ls never count as an access" {
    echo -n x | "$CTL" put basic/untouched
    before=$("$CTL" --json stat basic/untouched | jq .sketch_estimate)
    for i in 1 2 3 4 5; do
        "$CTL" stat basic/untouched >/dev/null
        "$CTL" ls --prefix basic/untouched >/dev/null
        "$CTL" --json ls >/dev/null
    done
    after=$("$CTL" --json stat basic/untouched | jq .sketch_estimate)
    [ "$before" = "$after" ]
    # get is a real read: it counts.
    "$CTL" get basic/untouched >/dev/null
    counted=$("$CTL" --json stat basic/untouched | jq .sketch_estimate)
    [ "$counted" -gt "$after" ]
}

@test "ls: table, JSON, --prefix, --tier, --limit" {
    for i in 1 2 3 4 5; do echo -n "$i" | "$CTL" put "list/k$i"; done
    run "$CTL" ls --prefix list/
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^KEY\ +SIZE\ +TIERS$ ]]
    [ "${#lines[@]}" -eq 6 ]
    [[ "${lines[1]}" =~ ^list/k1\ +1\ B\ +MEMORY ]]

    run "$CTL" --json ls --prefix list/
    [ "$(jq length <<<"$output")" -eq 5 ]
    [ "$(jq -r '.[0].key' <<<"$output")" = list/k1 ]
    [ "$(jq -r '.[0].size' <<<"$output")" = 1 ]
    [ "$(jq -r '.[0].tiers[0]' <<<"$output")" = MEMORY ]

    run "$CTL" --json ls --prefix list/ --limit 2
    [ "$(jq length <<<"$output")" -eq 2 ]
    [ "$(jq -r '.[1].key' <<<"$output")" = list/k2 ]

    run "$CTL" --json ls --prefix list/ --tier MEMORY
    [ "$(jq length <<<"$output")" -eq 5 ]
    run "$CTL" --json ls --prefix list/ --tier LOCAL_DISK
    [ "$output" = "[]" ]
    run "$CTL" --json ls --prefix no-such-prefix/
    [ "$output" = "[]" ]
}

@test "rm one key, several keys, --prefix with a summary line" {
    for i in 1 2 3; do echo -n "$i" | "$CTL" put "rm/k$i"; done
    for i in 1 2 3 4 5 6 7 8 9 10; do echo -n "$i" | "$CTL" put "rmp/k$i"; done
    sleep 0.3  # let the put leases lapse

    run "$CTL" rm rm/k1
    [ "$status" -eq 0 ]
    [[ "$output" == *"rm/k1"*"removed"* ]]
    run "$CTL" stat rm/k1
    [ "$status" -eq 3 ]

    run "$CTL" --json rm rm/k2 rm/k3
    [ "$status" -eq 0 ]
    [ "$(jq -r '[.[].outcome] | join(",")' <<<"$output")" = "removed,removed" ]

    # Not a terminal: one summary line, no progress bar.
    run "$CTL" rm --prefix rmp/
    [ "$status" -eq 0 ]
    [ "$output" = "rm --prefix 'rmp/': 10 keys: 10 removed" ]
    run "$CTL" --json ls --prefix rmp/
    [ "$output" = "[]" ]
}

@test "rm of a leased key is refused (1) unless --force" {
    echo -n v | "$CTL" put lease/k
    "$CTL" tune set default_kv_lease_ttl=60000 >/dev/null
    "$CTL" get lease/k >/dev/null   # a read lease for 60 s
    run --separate-stderr "$CTL" rm lease/k
    "$CTL" tune set default_kv_lease_ttl=200 >/dev/null
    [ "$status" -eq 1 ]
    [[ "$output" == *"refused:"* ]]
    [[ "$stderr" == mooncakectl:* ]]
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
    run "$CTL" rm --force lease/k
    [ "$status" -eq 0 ]
}

@test "missing keys exit 3 with one stderr line" {
    run --separate-stderr "$CTL" stat no/such/key
    [ "$status" -eq 3 ]
    [ -z "$output" ]
    [[ "$stderr" == "mooncakectl: stat 'no/such/key': "*"does not exist"* ]]
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
    run -3 "$CTL" get no/such/key
    run -3 "$CTL" --json stat no/such/key
    run -3 "$CTL" rm no/such/key
    run -3 "$CTL" promote no/such/key
    run -3 "$CTL" evict no/such/key
    run -3 "$CTL" offload no/such/key
    # Several keys: only missing ones failed -> 3; each key's outcome printed.
    echo -n v | "$CTL" put exists/k
    run -3 "$CTL" promote exists/k no/such/key
    [[ "$output" == *"exists/k"*"already in MEMORY"* ]]
    [[ "$output" == *"no/such/key"*"not found"* ]]
}

@test "store refusals exit 1" {
    echo -n first | "$CTL" put refuse/k
    run --separate-stderr "$CTL" put refuse/k <<<"second"
    [ "$status" -eq 1 ]
    [[ "$stderr" == "mooncakectl: put 'refuse/k': "* ]]
    [ "$("$CTL" get refuse/k)" = first ]
    # Several keys, one refused (leased, where leases block eviction), one fine: 1, and both
    # outcomes printed.
    echo -n a | "$CTL" put refuse/a
    echo -n b | "$CTL" put refuse/b
    sleep 0.3
    "$CTL" tune set default_kv_lease_ttl=60000 lease_blocks_eviction=true >/dev/null
    "$CTL" get refuse/a >/dev/null
    run --separate-stderr "$CTL" evict refuse/a refuse/b
    "$CTL" tune set default_kv_lease_ttl=200 lease_blocks_eviction=false >/dev/null
    [ "$status" -eq 1 ]
    [[ "$output" == *"refuse/a"*"refused: "*"leased"* ]]
    [[ "$output" == *"refuse/b"*"queued"* ]]
    [ "$stderr" = "mooncakectl: evict: 1 of 2 keys failed" ]
}

@test "usage errors exit 2" {
    run -2 "$CTL" frobnicate
    run -2 "$CTL"
    run -2 "$CTL" ls --tier SSD
    run -2 "$CTL" ls --limit many
    run -2 "$CTL" ls --bogus
    run -2 "$CTL" stat
    run -2 "$CTL" stat a b
    run -2 "$CTL" put "" /dev/null
    run -2 "$CTL" put empty/value /dev/null   # a value is at least 1 byte
    run -2 "$CTL" put k "$BATS_TEST_TMPDIR/does-not-exist"
    run -2 "$CTL" put k "$BATS_TEST_TMPDIR"   # a directory
    run -2 "$CTL" rm
    run -2 "$CTL" rm k --prefix p
    run -2 "$CTL" promote --timeout 3 k
    run -2 "$CTL" tune set not-an-assignment
    run -2 "$CTL" tune get no_such_knob
    run -2 "$CTL" --master not-an-address nodes
    run --separate-stderr "$CTL" frobnicate
    [ "$stderr" = "mooncakectl: unknown command 'frobnicate' (see mooncakectl --help)" ]
    run -0 "$CTL" --help
    [[ "$output" == *"Exit codes"* ]]
}

@test "tune set --persist on a daemon started without --config is refused, changing nothing" {
    run --separate-stderr "$CTL" tune set --persist promotion_queue_limit=777
    [ "$status" -eq 1 ]
    [[ "$stderr" == "mooncakectl: tune set: "*"--config"* ]]
    [ "$("$CTL" --json tune get promotion_queue_limit | jq .promotion_queue_limit)" = 50000 ]
}

@test "nodes: the live node with capacity per tier" {
    run "$CTL" nodes
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^ID\ +NODE\ +DATA\ +MEMORY\ +KEYS\ +LOCAL_DISK\ +KEYS\ +HEARTBEAT\ +DISK\ +STATE$ ]]
    [[ "${lines[1]}" == *"$MOONCAKE_MASTER"*"/ 64 MiB"*"ago"* ]]
    [[ "${lines[1]}" =~ \ (ok|-|drift)\ +ok$ ]]  # DISK, then STATE
    run "$CTL" --json nodes
    [ "$(jq -r '.[0].memory_state' <<<"$output")" = ok ]
    [ "$(jq length <<<"$output")" -eq 1 ]
    [ "$(jq -r '.[0].name' <<<"$output")" = "$MOONCAKE_MASTER" ]
    [ "$(jq -r '.[0].memory_capacity' <<<"$output")" = 67108864 ]
    [ "$(jq -r '.[0].local_disk_capacity' <<<"$output")" -gt 0 ]
    [ "$(jq -r '.[0].ms_since_heartbeat' <<<"$output")" -lt 10000 ]
}

@test "metrics: the Prometheus text, and JSON samples" {
    run "$CTL" metrics
    [ "$status" -eq 0 ]
    [[ "$output" == *"# TYPE "* ]]
    grep -q '^mooncake_promotion_failed_total{reason="admission_gated"} ' <<<"$output"
    grep -q '^mooncake_promotion_queued_total ' <<<"$output"
    run "$CTL" --json metrics
    [ "$status" -eq 0 ]
    # The RFC's five reasons and the four refusals it has no name for, from start-up.
    [ "$(jq '[.[] | select(.name == "mooncake_promotion_failed_total")] | length' <<<"$output")" -eq 9 ]
    [ "$(jq -r '[.[] | select(.name == "mooncake_promotion_in_flight")][0].value | type' <<<"$output")" = number ]
}

@test "tasks and hot answer in both formats" {
    run "$CTL" tasks
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^KIND\ +KEY\ +SIZE\ +NODE\ +AGE\ +STATE$ ]]
    run "$CTL" --json tasks
    [ "$status" -eq 0 ]
    [ "$(jq -r type <<<"$output")" = array ]
    run "$CTL" hot --limit 5
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^KEY\ +SIZE\ +ESTIMATE\ +LAST\ PROMOTION\ DECISION$ ]]
    run "$CTL" --json hot
    [ "$(jq -r type <<<"$output")" = array ]
}

@test "bash completion offers commands, options, knobs and keys" {
    echo -n v | "$CTL" put "complete/one"
    echo -n v | "$CTL" put "complete/two"
    complete_words() {
        source "$BATS_TEST_DIRNAME/../../etc/bash_completion.d/mooncakectl"
        COMP_WORDS=("$CTL" "$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _mooncakectl
        printf '%s\n' "${COMPREPLY[@]}"
    }
    [ "$(complete_words pro)" = promote ]
    [ "$(complete_words tune set promotion_adm)" = "promotion_admission_threshold=" ]
    [ "$(complete_words ls --tier L)" = LOCAL_DISK ]
    [ "$(complete_words stat complete/ | sort | tr '\n' ' ')" = "complete/one complete/two " ]
    [[ "$(complete_words promote --)" == *--wait* ]]
}

@test "global options: MOONCAKE_MASTER, --master after the command" {
    run env -u MOONCAKE_MASTER "$CTL" --master "$MOONCAKE_MASTER" nodes
    [ "$status" -eq 0 ]
    run env -u MOONCAKE_MASTER "$CTL" nodes --json --master "$MOONCAKE_MASTER"
    [ "$status" -eq 0 ]
    [ "$(jq length <<<"$output")" -eq 1 ]
}
