#!/usr/bin/env bats
# The RFC's promise with default knobs (only offload and promotion_on_hit named): a
# LOCAL_DISK-only key read promotion_admission_threshold times comes back to MEMORY within a
# second, the keys nobody reads stay where they are, every attempt's outcome is counted under
# its own name, and `stat` tells why a key is or is not in MEMORY.

load helpers

setup_file() {
    MC_WITH_METRICS=1 start_daemon --dram_size 8MiB --enable_offload --offload_on_evict \
        --promotion_on_hit
    head -c 524288 /dev/urandom >"$BATS_FILE_TMPDIR/512k"
    # 100 values of 512 KiB (50 MiB) into 8 MiB of DRAM: most end on LOCAL_DISK only.
    local i
    for i in $(seq -w 1 100); do
        "$CTL" put "rfc/$i" "$BATS_FILE_TMPDIR/512k" >/dev/null
    done
    wait_until '[ "$("$CTL" --json ls --tier LOCAL_DISK --prefix rfc/ --limit 1000 | jq length)" -ge 80 ]'
}

teardown_file() {
    stop_daemon
}

# The keys holding only a LOCAL_DISK replica, one per line.
disk_only_keys() {
    "$CTL" --json ls --prefix rfc/ --limit 1000 | jq -r '.[] | select(.tiers == ["LOCAL_DISK"]) | .key'
}

metric() {  # metric NAME{labels} [SNAPSHOT] -> value (0 when absent)
    awk -v m="$1" '$1 == m || $1 == "mooncake_" m { print $2; found = 1 } END { if (!found) print 0 }' \
        <<<"${2:-$("$CTL" metrics)}"
}

# Seconds the test allows for an asynchronous step; sanitizer runs are slower (scripts/sanitize.sh).
scaled() { echo $(( $1 * ${MOONCAKE_TEST_TIME_SCALE:-1} )); }

@test "10 hot LOCAL_DISK-only keys read threshold+1 times are in MEMORY within a second; the rest stay" {
    mapfile -t cold < <(disk_only_keys)
    [ "${#cold[@]}" -ge 80 ]
    hot=("${cold[@]:0:10}")
    rest=("${cold[@]:10}")
    threshold=$("$CTL" --json tune get promotion_admission_threshold | jq .promotion_admission_threshold)
    for round in $(seq 0 "$threshold"); do
        for key in "${hot[@]}"; do "$CTL" get "$key" >/dev/null; done
    done
    deadline=$(( $(date +%s%N) + $(scaled 1) * 1000000000 ))
    for key in "${hot[@]}"; do
        until "$CTL" --json stat "$key" | jq -e '.tiers[0] == "MEMORY"' >/dev/null; do
            if [ "$(date +%s%N)" -gt "$deadline" ]; then
                "$CTL" stat "$key" >&2
                "$CTL" metrics | grep promotion >&2
                false
            fi
            sleep 0.02
        done
    done
    # The rest, in one listing: none came back to MEMORY.
    listing=$("$CTL" --json ls --prefix rfc/ --limit 1000)
    for key in "${rest[@]}"; do
        tiers=$(jq -c --arg k "$key" '.[] | select(.key == $k) | .tiers' <<<"$listing")
        [ "$tiers" = '["LOCAL_DISK"]' ] || { echo "$key: $tiers" >&2; false; }
    done
    # stat says why: the hot keys were admitted and promoted.
    run "$CTL" --json stat "${hot[0]}"
    [ "$(jq -r .last_promotion.outcome <<<"$output")" = completed ]
    [ "$(jq -r .last_promotion.refused <<<"$output")" = false ]
    [ "$(jq .last_promotion.reads <<<"$output")" -ge "$threshold" ]
    [ "$(jq .last_promotion.threshold <<<"$output")" = "$threshold" ]
    run "$CTL" stat "${hot[0]}"
    [[ "$output" == *"promotion:"*"completed"* ]]
}

@test "a key read once is refused as admission_gated, and stat and hot say so" {
    key=$(disk_only_keys | tail -n 1)
    "$CTL" get "$key" >/dev/null
    run "$CTL" --json stat "$key"
    [ "$(jq -r .last_promotion.outcome <<<"$output")" = admission_gated ]
    [ "$(jq -r .last_promotion.refused <<<"$output")" = true ]
    [ "$(jq .last_promotion.reads <<<"$output")" -lt "$(jq .last_promotion.threshold <<<"$output")" ]
    [ "$(jq '.last_promotion.age_ms >= 0' <<<"$output")" = true ]
    run "$CTL" --json hot --limit 1000
    [ "$(jq -r --arg k "$key" '.[] | select(.key == $k) | .last_promotion.outcome' <<<"$output")" = admission_gated ]
}

@test "a refusal by the strict watermark (DRAM is full) is watermark_gated" {
    "$CTL" tune set promotion_strict_watermark=true >/dev/null
    key=$(disk_only_keys | sed -n 3p)
    "$CTL" get "$key" >/dev/null
    "$CTL" get "$key" >/dev/null
    run "$CTL" --json stat "$key"
    json=$output
    run "$CTL" stat "$key"
    "$CTL" tune set promotion_strict_watermark=false >/dev/null
    # Refused candidates are retried; gone, this one is not, so the counters hold still.
    "$CTL" rm --force "$key" >/dev/null
    [ "$(jq -r .last_promotion.outcome <<<"$json")" = watermark_gated ]
    [[ "$output" == *"watermark_gated (promotion_strict_watermark is on"* ]]
}

@test "promotion_attempts_total is the sum of every attempt's outcome" {
    snapshot=$("$CTL" metrics)  # one scrape: every counter of the same moment
    attempts=$(metric promotion_attempts_total "$snapshot")
    sum=0
    for m in promotion_queued_total promotion_deduplicated_total; do
        sum=$(( sum + $(metric $m "$snapshot") ))
    done
    for reason in admission_gated watermark_gated no_room victims_hotter gate_refused queue_full stale; do
        sum=$(( sum + $(metric "promotion_failed_total{reason=\"$reason\"}" "$snapshot") ))
    done
    echo "attempts $attempts, outcomes $sum" >&2
    [ "$attempts" -gt 0 ]
    [ "$attempts" = "$sum" ]
    run "$CTL" check
    [ "$status" -eq 0 ]
}
