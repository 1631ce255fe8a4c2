#!/usr/bin/env bats
# Own-first eviction through the daemon (issue 34): with a small DRAM and a disk, tenant
# `burst` writing three times its MEMORY quota evicts its own objects, never the hot set of
# tenant `steady`, which stays within its quota.

load helpers

setup_file() {
    # 16 MiB of DRAM; each tenant's MEMORY quota is about 40% of it.
    start_daemon --dram_size 16MiB --enable_offload
    "$CTL" tenant set steady --memory 6MiB
    "$CTL" tenant set burst --memory 6MiB
    head -c 524288 /dev/urandom >"$BATS_FILE_TMPDIR/value"
}

teardown_file() {
    stop_daemon
}

@test "a tenant over its MEMORY quota evicts its own objects, not another tenant's" {
    local i
    for i in $(seq 1 8); do
        "$CTL" --tenant steady put "hot/$i" "$BATS_FILE_TMPDIR/value"
    done
    for i in $(seq 1 8); do
        "$CTL" --tenant steady get "hot/$i" >/dev/null
    done
    # 36 x 512 KiB = 18 MiB: three times burst's quota, more than the whole DRAM.
    for i in $(seq 1 36); do
        "$CTL" --tenant burst put "bulk/$i" "$BATS_FILE_TMPDIR/value"
    done
    for i in $(seq 1 8); do
        run --separate-stderr "$CTL" --tenant steady --json stat "hot/$i"
        [ "$status" -eq 0 ]
        echo "$output" | jq -e '.tiers | index("MEMORY") != null' ||
            { echo "hot/$i: $output" >&2; return 1; }
    done
    run --separate-stderr "$CTL" --json tenant ls
    [ "$status" -eq 0 ]
    echo "$output" | jq -e '.tenants[] | select(.tenant == "burst") | .quota_evictions > 0'
    echo "$output" | jq -e '.tenants[] | select(.tenant == "steady") | .quota_evictions == 0'
    echo "$output" | jq -e '.tenants[] | select(.tenant == "burst") | .memory_bytes <= 6291456'
}
