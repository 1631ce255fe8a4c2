#!/usr/bin/env bats
# The CLI rows of the bad-input matrix (docs/BAD_INPUT.md) not already in basic.bats and
# tune.bats: oversized values, keys and sizes, unreadable inputs, bad sizes in tune. Each
# one exits with its documented code and one stderr line, and the store keeps serving.

load helpers

setup_file() {
    start_daemon --default_kv_lease_ttl=200
    printf 'still here' | "$CTL" put bad/canary
}

teardown_file() {
    stop_daemon
}

still_serving() {
    [ "$("$CTL" get bad/canary)" = "still here" ]
    printf 'x' | "$CTL" put "bad/after-$BATS_TEST_NUMBER-$RANDOM"
}

one_line() {
    [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
}

@test "a value over max_value_size is refused (1), nothing stored" {
    "$CTL" tune set max_value_size=64KiB >/dev/null
    head -c 100000 /dev/zero >"$BATS_TEST_TMPDIR/big"
    run --separate-stderr "$CTL" put bad/big "$BATS_TEST_TMPDIR/big"
    "$CTL" tune set max_value_size=1GiB >/dev/null
    [ "$status" -eq 1 ]
    [[ "$stderr" == "mooncakectl: put 'bad/big': "* ]]
    one_line
    run -3 "$CTL" stat bad/big
    still_serving
}

@test "a file over the limits is refused before it is read" {
    # Sparse, so making it costs nothing; reading it would take seconds and, before values
    # were streamed, as much memory. The master refuses its size at PutStart.
    truncate -s 3G "$BATS_TEST_TMPDIR/huge"
    SECONDS=0
    run --separate-stderr /usr/bin/time -f '%M' -o "$BATS_TEST_TMPDIR/rss" \
        "$CTL" put bad/huge "$BATS_TEST_TMPDIR/huge"
    [ "$status" -eq 1 ]
    [[ "$stderr" == "mooncakectl: put 'bad/huge': size 3221225472 exceeds max_value_size"* ]]
    one_line
    [ "$SECONDS" -lt $((5 * ${MOONCAKE_TEST_TIME_SCALE:-1})) ]
    # KiB: nothing of the 3 GiB value was held (64 MiB; under ASan, whose shadow memory and
    # allocator take ~100 MiB of their own, 512 MiB).
    rss_limit=65536
    [ -z "${ASAN_OPTIONS:-}" ] || rss_limit=524288
    [ "$(tail -1 "$BATS_TEST_TMPDIR/rss")" -lt "$rss_limit" ]
    # Within max_value_size but beyond the daemon's DRAM: refused as no space, also at once.
    "$CTL" tune set max_value_size=1TiB >/dev/null
    truncate -s 600G "$BATS_TEST_TMPDIR/huge"
    SECONDS=0
    run --separate-stderr "$CTL" put bad/huge "$BATS_TEST_TMPDIR/huge"
    "$CTL" tune set max_value_size=1GiB >/dev/null
    [ "$status" -eq 1 ]
    [ "$SECONDS" -lt 5 ]
    one_line
    run -3 "$CTL" stat bad/huge
    # A pipe has no size: it is spooled (bounded memory) and refused once it passes the limit.
    "$CTL" tune set max_value_size=8MiB >/dev/null
    run --separate-stderr bash -c "head -c 20000000 /dev/zero | '$CTL' put bad/huge"
    "$CTL" tune set max_value_size=1GiB >/dev/null
    [ "$status" -eq 1 ]
    [[ "$stderr" == "mooncakectl: put 'bad/huge': size over 8388608 exceeds max_value_size (8MiB)" ]]
    run -3 "$CTL" stat bad/huge
    still_serving
}

@test "a key over 4096 bytes, or empty, is a usage error (2)" {
    local long
    long=$(head -c 4097 /dev/zero | tr '\0' k)
    run --separate-stderr "$CTL" put "$long" /etc/hostname
    [ "$status" -eq 2 ]
    one_line
    run -2 "$CTL" stat "$long"
    run -2 "$CTL" get ""
    run -2 "$CTL" rm ""
    still_serving
}

@test "bad sizes in tune set are usage errors (2) naming the knob, nothing changed" {
    for v in lots -1 1.5.5 12XB 0 99999TiB 1.5 .5GiB; do
        run --separate-stderr "$CTL" tune set "max_value_size=$v"
        [ "$status" -eq 2 ] || { echo "max_value_size=$v exited $status" >&2; return 1; }
        [[ "$stderr" == *"max_value_size"* ]]
        one_line
    done
    run -0 "$CTL" --json tune get
    [ "$(jq -r .max_value_size <<<"$output")" = 1073741824 ]
    still_serving
}

@test "decimal sizes and booleans in any case are accepted by tune set" {
    run -0 "$CTL" --json tune set max_value_size=1.5GiB
    [ "$(jq -c . <<<"$output")" = '{"max_value_size":1610612736}' ]
    run -0 "$CTL" --json tune set promotion_drop_source=TRUE
    [ "$(jq -c .promotion_drop_source <<<"$output")" = true ]
    run -0 "$CTL" --json tune set promotion_drop_source=False
    [ "$(jq -c .promotion_drop_source <<<"$output")" = false ]
    run --separate-stderr "$CTL" tune set promotion_drop_source=maybe
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"accepted, in any case: true|false, 1|0, yes|no, on|off"* ]]
    one_line
    "$CTL" tune set max_value_size=1GiB >/dev/null
    still_serving
}

@test "a key starting with '-' goes after '--'; without it the message says so (2)" {
    run --separate-stderr bash -c "printf 'dash' | '$CTL' put -leading"
    [ "$status" -eq 2 ]
    [[ "$stderr" == "mooncakectl: '-leading' is not an option of 'put'; a KEY or FILE starting with '-' goes after '--': mooncakectl put -- -leading (see mooncakectl --help)" ]]
    [[ "$stderr" != *"required"* ]]
    printf 'dash' | "$CTL" put -- -leading
    [ "$("$CTL" get -- -leading)" = dash ]
    run -0 "$CTL" stat -- -leading
    run -0 "$CTL" rm --force -- -leading   # get leased it
    run -3 "$CTL" stat -- -leading
    still_serving
}

@test "unreadable inputs are usage errors (2)" {
    run --separate-stderr "$CTL" put bad/x "$BATS_TEST_TMPDIR/missing"
    [ "$status" -eq 2 ]
    one_line
    run -2 "$CTL" put bad/x "$BATS_TEST_TMPDIR"
    # An output that cannot be written: the store answered, the local write failed (1).
    run --separate-stderr "$CTL" get bad/canary --out "$BATS_TEST_TMPDIR/no/such/dir/out"
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"no/such/dir/out"* ]]
    one_line
    run -2 "$CTL" --auth_token_file "$BATS_TEST_TMPDIR/missing" ls
    still_serving
}

@test "bad flags and values are usage errors (2)" {
    run -2 "$CTL" --bogus ls
    run -2 "$CTL" ls --limit -5
    run -2 "$CTL" ls --tier memory-ish
    run -2 "$CTL" hot --limit x
    run -2 "$CTL" --connect_timeout 0 ls
    run -2 "$CTL" --master 127.0.0.1:99999 ls
    run -2 "$CTL" promote
    still_serving
}

@test "unknown keys exit 3 in every command that names one" {
    for cmd in stat get rm promote offload evict; do
        run -3 "$CTL" $cmd bad/unknown
    done
    still_serving
}
