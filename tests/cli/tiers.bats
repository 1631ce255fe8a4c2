#!/usr/bin/env bats
# Tier moves by hand against a real standalone mooncaked whose DRAM is overflowed: promote
# (with --wait, refusals, --force), offload, evict, hot, and the --prefix forms' progress bar
# (on a terminal) and summary line (otherwise).

load helpers

setup_file() {
    start_daemon --default_kv_lease_ttl=100
    head -c 1048576 /dev/urandom >"$BATS_FILE_TMPDIR/1m"
    # 80 MiB into 64 MiB of DRAM: the coldest keys end up on LOCAL_DISK only.
    local i
    for i in $(seq -w 1 80); do
        "$CTL" put "tier/$i" "$BATS_FILE_TMPDIR/1m" >/dev/null
    done
    wait_until '[ "$("$CTL" --json hot --limit 1000 | jq length)" -ge 5 ]'
    sleep 0.2  # the put leases lapse
}

teardown_file() {
    stop_daemon
}

# A key that is on LOCAL_DISK only (never one in $1, a space-separated exclusion list).
disk_only_key() {
    "$CTL" --json hot --limit 1000 | jq -r '.[].key' | grep -v -x -F -e "${1:-none}" | head -n 1
}

@test "overflowing DRAM leaves cold keys on LOCAL_DISK only" {
    key=$(disk_only_key)
    [ -n "$key" ]
    run "$CTL" --json stat "$key"
    [ "$(jq -c .tiers <<<"$output")" = '["LOCAL_DISK"]' ]
    run "$CTL" --json ls --tier LOCAL_DISK --prefix tier/
    [ "$(jq length <<<"$output")" -ge 5 ]
    run "$CTL" --json nodes
    [ "$(jq '.[0].local_disk_used' <<<"$output")" -gt 0 ]
    [ "$(jq '.[0].memory_used' <<<"$output")" -gt 50000000 ]
}

@test "hot ranks LOCAL_DISK-only keys by sketch estimate" {
    # Reads count in the sketch; a threshold nobody reaches keeps them from promoting.
    "$CTL" tune set promotion_admission_threshold=255 >/dev/null
    key=$(disk_only_key)
    for i in 1 2 3 4; do "$CTL" get "$key" >/dev/null; done
    run "$CTL" --json hot --limit 3
    "$CTL" tune set promotion_on_hit=true >/dev/null
    [ "$(jq -r '.[0].key' <<<"$output")" = "$key" ]
    echo "$output" >&2
    [ "$(jq -r '.[0].estimate' <<<"$output")" -ge 4 ]
    [ "$(jq -r '.[0].size' <<<"$output")" = 1048576 ]
    run "$CTL" hot --limit 3
    [[ "${lines[0]}" =~ ^KEY\ +SIZE\ +ESTIMATE\ +LAST\ PROMOTION\ DECISION$ ]]
    [[ "${lines[1]}" =~ ^$key\ +1\ MiB\ +[0-9]+\ +admission_gated,\ .+\ ago$ ]]
    [ "${#lines[@]}" -eq 4 ]
}

@test "promote --wait brings a LOCAL_DISK key back to MEMORY" {
    key=$(disk_only_key)
    run "$CTL" promote --wait --timeout 10 "$key"
    [ "$status" -eq 0 ]
    [[ "${lines[1]}" =~ ^$key\ +promoted\ to\ MEMORY$ ]]
    [ "$(first_tier "$key")" = MEMORY ]
    # Already there: done, exit 0.
    run "$CTL" promote "$key"
    [ "$status" -eq 0 ]
    [[ "$output" == *"already in MEMORY"* ]]

    key2=$(disk_only_key)
    run "$CTL" --json promote --wait "$key2"
    [ "$status" -eq 0 ]
    [ "$(jq -r '.[0].outcome' <<<"$output")" = promoted ]
    [ "$(jq -r '.[0].ok' <<<"$output")" = true ]
    [ "$(first_tier "$key2")" = MEMORY ]
}

@test "promote without --wait reports it queued" {
    key=$(disk_only_key)
    run "$CTL" promote "$key"
    [ "$status" -eq 0 ]
    [[ "$output" == *"$key"*"queued for promotion"* || "$output" == *"$key"*"already"* ]]
    wait_until '[ "$(first_tier "$key")" = MEMORY ]'
}

@test "promote under DRAM pressure is refused (1); --force promotes" {
    "$CTL" tune set promotion_strict_watermark=true eviction_high_watermark_ratio=0.5 >/dev/null
    key=$(disk_only_key)
    run --separate-stderr "$CTL" promote "$key"
    "$CTL" tune set promotion_strict_watermark=false eviction_high_watermark_ratio=0.95 >/dev/null
    [ "$status" -eq 1 ]
    [[ "$output" == *"$key"*"refused: "*"DRAM"* ]]
    [[ "$stderr" == "mooncakectl: promote '$key': "* ]]
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
    [ "$(first_tier "$key")" = LOCAL_DISK ]

    "$CTL" tune set promotion_strict_watermark=true eviction_high_watermark_ratio=0.5 >/dev/null
    run "$CTL" promote --force --wait "$key"
    "$CTL" tune set promotion_strict_watermark=false eviction_high_watermark_ratio=0.95 >/dev/null
    [ "$status" -eq 0 ]
    [ "$(first_tier "$key")" = MEMORY ]
}

@test "promote --wait that runs out of time exits 1" {
    head -c 33554432 /dev/urandom >"$BATS_TEST_TMPDIR/32m"
    "$CTL" put slow/32m "$BATS_TEST_TMPDIR/32m" >/dev/null
    sleep 0.2
    "$CTL" evict --wait slow/32m >/dev/null
    [ "$(first_tier slow/32m)" = LOCAL_DISK ]
    run --separate-stderr "$CTL" promote --wait --timeout 0.001 slow/32m
    [ "$status" -eq 1 ]
    [[ "$output" == *"still lacks a COMPLETE MEMORY copy"* ]]
    [[ "$stderr" == mooncakectl:* ]]
    # It still completes in the store; --wait only gave up waiting.
    wait_until '[ "$(first_tier slow/32m)" = MEMORY ]'
    "$CTL" get slow/32m | cmp "$BATS_TEST_TMPDIR/32m" -
}

@test "offload --wait writes a LOCAL_DISK copy and keeps MEMORY" {
    echo -n fresh | "$CTL" put move/fresh
    [ "$("$CTL" --json stat move/fresh | jq -c .tiers)" = '["MEMORY"]' ]
    run "$CTL" offload --wait move/fresh
    [ "$status" -eq 0 ]
    [[ "$output" == *"move/fresh"*"written to LOCAL_DISK"* ]]
    [ "$("$CTL" --json stat move/fresh | jq -c .tiers)" = '["MEMORY","LOCAL_DISK"]' ]
    run "$CTL" --json offload move/fresh
    [ "$status" -eq 0 ]
    [ "$(jq -r '.[0].outcome' <<<"$output")" = already ]
}

@test "evict drops MEMORY (offloading first when needed)" {
    echo -n a | "$CTL" put move/a
    sleep 0.2
    run "$CTL" evict --wait move/a
    [ "$status" -eq 0 ]
    [[ "$output" == *"move/a"*"MEMORY copy dropped"* ]]
    [ "$("$CTL" --json stat move/a | jq -c .tiers)" = '["LOCAL_DISK"]' ]
    [ "$("$CTL" get move/a)" = a ]   # still readable, from disk
    sleep 0.2
    run "$CTL" evict move/a
    if [ "$(first_tier move/a)" = LOCAL_DISK ]; then
        [ "$status" -eq 0 ]
        [[ "$output" == *"not in MEMORY"* ]]
    fi
    run "$CTL" --json evict move/fresh
    [ "$status" -eq 0 ]
    [ "$(jq -r '.[0].outcome' <<<"$output")" = evicted ]
}

@test "--prefix forms print a summary line when stdout is not a terminal" {
    run "$CTL" offload --prefix tier/
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" =~ ^offload\ --prefix\ \'tier/\':\ 80\ keys:\  ]]
    run "$CTL" promote --prefix tier/0
    [[ "${lines[0]}" =~ ^promote\ --prefix\ \'tier/0\':\ 9\ keys:\  ]]
    run "$CTL" --json evict --prefix tier/1
    [ "$(jq length <<<"$output")" -eq 10 ]
    [ "$(jq -r '.[0].key' <<<"$output")" = tier/10 ]
    run "$CTL" promote --prefix no-such-prefix/
    [ "$status" -eq 0 ]
    [ "$output" = "promote --prefix 'no-such-prefix/': 0 keys" ]
}

@test "--prefix forms draw a progress bar on a terminal" {
    command -v script >/dev/null || skip "script(1) is not installed"
    run script -qec "'$CTL' promote --wait --prefix tier/" /dev/null
    [ "$status" -eq 0 ]
    [[ "$output" == *"promote ["*"#"*"] 80/80 keys"* ]]
    [[ "$output" == *"promote --prefix 'tier/': 80 keys:"* ]]
    run script -qec "'$CTL' rm --prefix tier/7" /dev/null
    [ "$status" -eq 0 ]
    [[ "$output" == *"rm ["*"] 10/10 keys"* ]]
    [[ "$output" == *"rm --prefix 'tier/7': 10 keys: 10 removed"* ]]
    [ "$("$CTL" --json ls --prefix tier/7 | jq length)" -eq 0 ]
}

@test "tasks lists in-flight work with its age" {
    # Catching a task in flight depends on timing; check the shape whenever there is one.
    "$CTL" evict --prefix tier/ >/dev/null || true
    "$CTL" promote --prefix tier/ >/dev/null || true
    run "$CTL" --json tasks
    [ "$status" -eq 0 ]
    if [ "$(jq length <<<"$output")" -gt 0 ]; then
        [ "$(jq -r '.[0] | has("kind") and has("key") and has("age_ms") and has("state")' <<<"$output")" = true ]
    fi
    run "$CTL" tasks
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" =~ ^KIND\ +KEY ]]
}

@test "check: the books balance after all the moves, in text and JSON" {
    # Tasks may still be finishing; the check counts them, it does not wait for them.
    wait_until '[ "$("$CTL" --json check | jq ".promotion_tasks + .offload_tasks")" = 0 ]'
    run "$CTL" check
    [ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
    [ "${lines[0]}" = "consistent" ]
    run "$CTL" --json check
    [ "$status" -eq 0 ]
    [ "$(jq -c '[.ok, .violations, .pins, (.dram_used == .dram_allocated)]' <<<"$output")" = '[true,[],0,true]' ]
    [ "$(jq '.objects' <<<"$output")" -gt 0 ]
}
