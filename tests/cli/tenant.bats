#!/usr/bin/env bats
# mooncakectl tenant ls|set|rm against a standalone mooncaked with an administrator token, a
# tenant's token and a --tenant_policy_file (issue 34): quotas set and listed (table and
# --json), an unregistered tenant's put refused once tenants are registered, bad names refused,
# rm refused while a tenant holds objects unless --purge, the policy file rewritten and
# loaded again after a restart, and a tenant's token neither changes tenants nor sees others.

load helpers

setup_file() {
    export MC_TOKEN_FILE="$BATS_FILE_TMPDIR/token"
    printf 'bats-admin-token\n' >"$MC_TOKEN_FILE"
    chmod 600 "$MC_TOKEN_FILE"
    export MC_TENANT_TOKENS="$BATS_FILE_TMPDIR/tenant-tokens"
    printf 'alpha alpha-secret\n' >"$MC_TENANT_TOKENS"
    chmod 600 "$MC_TENANT_TOKENS"
    export MC_POLICY="$BATS_FILE_TMPDIR/tenants.policy"
    export MC_DAEMON_FLAGS="--auth_token_file $MC_TOKEN_FILE --tenant_tokens_file $MC_TENANT_TOKENS --tenant_policy_file $MC_POLICY"
    # shellcheck disable=SC2086
    start_daemon $MC_DAEMON_FLAGS
    printf 'tenant value' >"$BATS_FILE_TMPDIR/value"
}

# A test that restarts the daemon leaves its pid in daemon.pid, not in MC_PID of later tests.
stop_current_daemon() {
    MC_PID=$(cat "$MC_DIR/daemon.pid" 2>/dev/null) stop_daemon
}

teardown_file() {
    stop_current_daemon
}

setup() {
    export MOONCAKE_AUTH_TOKEN_FILE="$MC_TOKEN_FILE"
    unset MOONCAKE_AUTH_TOKEN
}

@test "tenant set registers two tenants with quotas; ls shows them" {
    run --separate-stderr "$CTL" tenant set alpha --memory 8MiB --disk 32MiB
    [ "$status" -eq 0 ]
    run --separate-stderr "$CTL" tenant set beta --memory 16M
    [ "$status" -eq 0 ]
    [[ "$output" == *beta* ]]
    run --separate-stderr "$CTL" tenant ls
    [ "$status" -eq 0 ]
    [[ "$output" == *TENANT*REGISTERED*MEMORY* ]]
    [[ "$output" == *alpha* ]]
    [[ "$output" == *"quotas: MEMORY"* ]]
}

@test "tenant ls --json has the documented shape" {
    run --separate-stderr "$CTL" --json tenant ls
    [ "$status" -eq 0 ]
    echo "$output" | jq -e '.tenants | type == "array"'
    echo "$output" | jq -e '.tenants[] | select(.tenant == "alpha") |
        .registered == true and .memory_quota == 8388608 and .disk_quota == 33554432'
    echo "$output" | jq -e '.tenants[] | select(.tenant == "beta") |
        .memory_quota == 16000000 or .memory_quota == 16777216'
    echo "$output" | jq -e '.tenants[0] | has("memory_bytes") and has("memory_objects") and
        has("disk_bytes") and has("disk_objects") and has("puts_refused") and
        has("quota_evictions") and has("promotions")'
    echo "$output" | jq -e 'has("memory_quota_sum") and has("disk_quota_sum") and
        has("memory_capacity") and has("disk_capacity") and (.warnings | type == "array")'
    echo "$output" | jq -e '.multi_tenant == true and .memory_capacity > 0'
}

@test "an unregistered tenant's put is refused" {
    run --separate-stderr "$CTL" --tenant ghost put t/ghost "$BATS_FILE_TMPDIR/value"
    [ "$status" -ne 0 ]
    [[ "$stderr" == *ghost* ]] || { echo "stderr: $stderr" >&2; return 1; }
    run --separate-stderr "$CTL" --tenant beta put t/beta "$BATS_FILE_TMPDIR/value"
    [ "$status" -eq 0 ]
}

@test "bad tenant names are refused" {
    run --separate-stderr "$CTL" tenant set ""
    [ "$status" -eq 2 ]
    run --separate-stderr "$CTL" tenant set "$(printf 'a%.0s' $(seq 1 65))"
    [ "$status" -eq 2 ]
    run --separate-stderr "$CTL" tenant set a/b
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"a/b"* || "$stderr" == *"A-Za-z0-9"* ]] || { echo "stderr: $stderr" >&2; return 1; }
    run --separate-stderr "$CTL" tenant set alpha --memory lots
    [ "$status" -eq 2 ]
}

@test "tenant rm of a tenant holding data is refused without --purge" {
    "$CTL" --tenant beta put t/keep1 "$BATS_FILE_TMPDIR/value"
    run --separate-stderr "$CTL" tenant rm beta
    [ "$status" -eq 1 ]
    [[ "$stderr" == *purge* ]] || { echo "stderr: $stderr" >&2; return 1; }
    run --separate-stderr "$CTL" --json tenant rm beta --purge
    [ "$status" -eq 0 ]
    echo "$output" | jq -e '[.tenants[] | select(.tenant == "beta" and .registered)] | length == 0'
    run --separate-stderr "$CTL" tenant set beta --memory 16MiB
    [ "$status" -eq 0 ]
    run --separate-stderr "$CTL" --tenant beta stat t/keep1
    [ "$status" -eq 3 ]
}

@test "a tenant's token cannot set tenants and sees only its own row" {
    unset MOONCAKE_AUTH_TOKEN_FILE
    export MOONCAKE_AUTH_TOKEN=alpha-secret
    run --separate-stderr "$CTL" --tenant alpha tenant set alpha --memory 1GiB
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"cluster's token"* ]] || { echo "stderr: $stderr" >&2; return 1; }
    run --separate-stderr "$CTL" --tenant alpha tenant rm beta
    [ "$status" -eq 1 ]
    run --separate-stderr "$CTL" --tenant alpha --json tenant ls
    [ "$status" -eq 0 ]
    echo "$output" | jq -e '[.tenants[].tenant] == ["alpha"]'
    [[ "$output" != *beta* ]]
}

@test "the policy file is rewritten and loaded again after a restart" {
    grep -q '^alpha' "$MC_POLICY"
    grep -q '^beta' "$MC_POLICY"
    stop_current_daemon
    # shellcheck disable=SC2086
    start_daemon $MC_DAEMON_FLAGS
    run --separate-stderr "$CTL" --json tenant ls
    [ "$status" -eq 0 ]
    echo "$output" | jq -e '.tenants[] | select(.tenant == "alpha") |
        .registered == true and .memory_quota == 8388608'
    run --separate-stderr "$CTL" --tenant ghost put t/ghost2 "$BATS_FILE_TMPDIR/value"
    [ "$status" -ne 0 ]
}

@test "a bad policy file stops the daemon with the line named" {
    printf 'good memory=1MiB\nbad memory=lots\n' >"$BATS_TEST_TMPDIR/bad.policy"
    run "$DAEMON" --role standalone --listen 127.0.0.1:1 --dram_size 16MiB \
        --tenant_policy_file "$BATS_TEST_TMPDIR/bad.policy"
    [ "$status" -ne 0 ]
    [[ "$output" == *"bad.policy"* ]]
    [[ "$output" == *"line 2"* ]] || { echo "output: $output" >&2; return 1; }
}

@test "without a policy file a change says it is not persisted" {
    stop_current_daemon
    rm -rf "$MC_DIR/disk"
    start_daemon
    unset MOONCAKE_AUTH_TOKEN_FILE
    run --separate-stderr "$CTL" tenant set solo --memory 4MiB
    [ "$status" -eq 0 ]
    [[ "$stderr" == *"warning: not persisted: no --tenant_policy_file"* ]] || { echo "stderr: $stderr" >&2; return 1; }
}
