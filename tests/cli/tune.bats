#!/usr/bin/env bats
# mooncakectl tune against a real standalone mooncaked: get in both formats, set round trips,
# and the refusals (unknown knob, start-only knob, out of range), all or nothing.

load helpers

setup_file() {
    mkdir -p "$BATS_FILE_TMPDIR/etc"
    printf '# mooncaked test config\npromotion_queue_limit = 40000\n' \
        >"$BATS_FILE_TMPDIR/etc/mooncaked.conf"
    MC_WITH_METRICS=1 start_daemon --config "$BATS_FILE_TMPDIR/etc/mooncaked.conf"
}

teardown_file() {
    stop_daemon
}

knob() {
    "$CTL" --json tune get "$1" | jq -c ".$1"
}

@test "tune get: a table of value, default, range, tunable" {
    run "$CTL" tune get
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^NAME\ +VALUE\ +DEFAULT\ +RANGE\ +TUNABLE$ ]]
    grep -E -q '^promotion_admission_threshold +2 +2 +0\.\.255 +yes$' <<<"$output"
    grep -E -q '^dram_size +64MiB +256MiB +0\.\.16TiB +no \(start-up\)$' <<<"$output"
    grep -E -q '^promotion_queue_limit +40000 +50000 ' <<<"$output"   # from --config
    grep -E -q '^role +standalone +standalone +standalone\|master\|node +no' <<<"$output"
    run "$CTL" tune get promotion_on_hit
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 2 ]
    [[ "${lines[1]}" =~ ^promotion_on_hit\ +true\ +true\ +true\|false\ +yes$ ]]
}

@test "tune get --json: a flat object of typed values" {
    run "$CTL" --json tune get
    [ "$status" -eq 0 ]
    [ "$(jq -r type <<<"$output")" = object ]
    [ "$(jq -r '[.[] | type] | map(select(. == "object" or . == "array")) | length' <<<"$output")" = 0 ]
    [ "$(jq -c .promotion_on_hit <<<"$output")" = true ]
    [ "$(jq -c .promotion_admission_threshold <<<"$output")" = 2 ]
    [ "$(jq -c .eviction_high_watermark_ratio <<<"$output")" = 0.95 ]
    [ "$(jq -c .dram_size <<<"$output")" = 67108864 ]
    [ "$(jq -c .role <<<"$output")" = '"standalone"' ]
    [ "$(jq -c .listen <<<"$output")" = "\"$MOONCAKE_MASTER\"" ]
    run "$CTL" --json tune get promotion_admission_threshold
    [ "$(jq -c . <<<"$output")" = '{"promotion_admission_threshold":2}' ]
}

@test "tune set round trips, one and several knobs" {
    run "$CTL" tune set promotion_admission_threshold=5
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^NAME\ +OLD\ +NEW$ ]]
    [[ "${lines[1]}" =~ ^promotion_admission_threshold\ +2\ +5$ ]]
    [ "$(knob promotion_admission_threshold)" = 5 ]

    run "$CTL" --json tune set promotion_on_hit=false eviction_ratio=0.1 promotion_queue_limit=1234
    [ "$status" -eq 0 ]
    [ "$(jq -c . <<<"$output")" = '{"promotion_on_hit":false,"eviction_ratio":0.1,"promotion_queue_limit":1234}' ]
    [ "$(knob promotion_on_hit)" = false ]
    [ "$(knob eviction_ratio)" = 0.1 ]
    [ "$(knob promotion_queue_limit)" = 1234 ]

    run "$CTL" tune set promotion_on_hit=true promotion_admission_threshold=2 eviction_ratio=0.05
    [ "$status" -eq 0 ]
    [ "$(knob promotion_on_hit)" = true ]
    [ "$(knob promotion_admission_threshold)" = 2 ]
}

@test "tune set refuses out-of-range values naming the range (2), changing nothing" {
    run --separate-stderr "$CTL" tune set promotion_admission_threshold=7 promotion_queue_limit=5 \
        eviction_high_watermark_ratio=1.5
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [[ "$stderr" == "mooncakectl: tune set: "*"eviction_high_watermark_ratio"*"0.0..1.0"* ]]
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
    # All or nothing: the valid assignments were not applied either.
    [ "$(knob promotion_admission_threshold)" = 2 ]
    [ "$(knob promotion_queue_limit)" = 1234 ]

    run --separate-stderr "$CTL" tune set promotion_admission_threshold=256
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"0..255"* ]]
    run --separate-stderr "$CTL" tune set promotion_on_hit=maybe
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"true|false"* ]]
}

@test "tune set refuses unknown and start-only knobs (2)" {
    run --separate-stderr "$CTL" tune set no_such_knob=1
    [ "$status" -eq 2 ]
    [[ "$stderr" == "mooncakectl: tune set: "*"no_such_knob"* ]]
    run --separate-stderr "$CTL" tune set dram_size=1GiB
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"dram_size"*"start-up"* ]]
    [ "$(knob dram_size)" = 67108864 ]
    run --separate-stderr "$CTL" tune set role=master
    [ "$status" -eq 2 ]
}

@test "a knob combination the daemon's cross-knob rules forbid is refused by the daemon (1)" {
    # eviction_ratio must stay below the watermark; each value alone is in range.
    run --separate-stderr "$CTL" tune set eviction_high_watermark_ratio=0.1 eviction_ratio=0.5
    [ "$status" -eq 1 ]
    [ "$(knob eviction_ratio)" != 0.5 ]
}

@test "tune set needs NAME=VALUE (2)" {
    run -2 "$CTL" tune set promotion_on_hit
    run -2 "$CTL" tune set =5
    run -2 "$CTL" tune set
    run -2 "$CTL" tune get no_such_knob
}

@test "tune set --persist also writes the daemon's config file" {
    run "$CTL" tune set --persist promotion_queue_limit=4321 promotion_drop_source=true
    [ "$status" -eq 0 ]
    [ "$(knob promotion_queue_limit)" = 4321 ]
    [ "$(knob promotion_drop_source)" = true ]
    conf="$BATS_FILE_TMPDIR/etc/mooncaked.conf"
    grep -E -q '^ *promotion_queue_limit *= *4321 *$' "$conf"
    grep -E -q '^ *promotion_drop_source *= *true *$' "$conf"
    grep -q '^# mooncaked test config' "$conf"   # the rest of the file is kept
    # Without --persist the file is left alone.
    "$CTL" tune set promotion_queue_limit=1000 >/dev/null
    grep -E -q '^ *promotion_queue_limit *= *4321 *$' "$conf"
    # A refused assignment persists nothing either.
    run -2 "$CTL" tune set --persist promotion_queue_limit=77 promotion_admission_threshold=999
    ! grep -q 77 "$conf"
}

@test "metrics prints the same exposition as /metrics" {
    command -v curl >/dev/null || skip "curl is not installed"
    run "$CTL" metrics
    [ "$status" -eq 0 ]
    ctl_names=$(grep -E '^# (HELP|TYPE) ' <<<"$output")
    http=$(curl -sf "http://127.0.0.1:$MC_METRICS_PORT/metrics")
    http_names=$(grep -E '^# (HELP|TYPE) ' <<<"$http")
    [ -n "$ctl_names" ]
    [ "$ctl_names" = "$http_names" ]
    # Sample lines: the same series in the same order (values move between the two reads).
    [ "$(grep -v '^#' <<<"$output" | sed 's/ [^ ]*$//')" = "$(grep -v '^#' <<<"$http" | sed 's/ [^ ]*$//')" ]
}
