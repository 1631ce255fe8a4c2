#!/usr/bin/env bats
# mooncakectl against a standalone mooncaked that has an access token (--auth_token_file):
# without the token every mutating or admin command is refused (exit 1, one stderr line
# naming the token), inspection works; with it, from --auth_token_file, $MOONCAKE_AUTH_TOKEN_FILE
# or $MOONCAKE_AUTH_TOKEN, everything works; a wrong token is refused; no flag takes the
# token itself on the command line.

load helpers

setup_file() {
    export MC_TOKEN_FILE="$BATS_FILE_TMPDIR/token"
    printf 'bats-secret-token\n' >"$MC_TOKEN_FILE"
    chmod 600 "$MC_TOKEN_FILE"
    start_daemon --default_kv_lease_ttl=200 --enable_offload --auth_token_file "$MC_TOKEN_FILE"
    printf 'seed value' >"$BATS_FILE_TMPDIR/seed"
    "$CTL" --auth_token_file "$MC_TOKEN_FILE" put sec/seed "$BATS_FILE_TMPDIR/seed"
}

teardown_file() {
    stop_daemon
}

setup() {
    unset MOONCAKE_AUTH_TOKEN_FILE MOONCAKE_AUTH_TOKEN
}

# Runs mooncakectl without a token and expects exit 1 with the token named on stderr.
refused() {
    run --separate-stderr "$CTL" "$@"
    [ "$status" -eq 1 ] || { echo "exit $status for: $*" >&2; return 1; }
    [[ "$stderr" == *"needs the access token"* ]] || { echo "stderr: $stderr" >&2; return 1; }
    [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
}

@test "without the token: every mutating and admin command is refused with exit 1" {
    run bash -c "printf 'x' | '$CTL' put sec/new"
    [ "$status" -eq 1 ]
    [[ "$output" == *"PutStart needs the access token"* ]]
    refused rm sec/seed
    refused rm --force sec/seed
    refused rm --prefix sec/
    refused tune set promotion_admission_threshold=5
    refused promote sec/seed
    refused offload sec/seed
    refused evict sec/seed
    # Bytes travel on the data channel, which wants the token too.
    refused get sec/seed
    # Nothing changed.
    run "$CTL" --auth_token_file "$MC_TOKEN_FILE" get sec/seed
    [ "$status" -eq 0 ]
    [ "$output" = "seed value" ]
    run "$CTL" --json tune get promotion_admission_threshold
    [ "$(jq -r .promotion_admission_threshold <<<"$output")" = 2 ]
}

@test "without the token: inspection works" {
    run "$CTL" stat sec/seed
    [ "$status" -eq 0 ]
    run "$CTL" ls
    [ "$status" -eq 0 ]
    [[ "$output" == *"sec/seed"* ]]
    run "$CTL" nodes
    [ "$status" -eq 0 ]
    run "$CTL" tasks
    [ "$status" -eq 0 ]
    run "$CTL" hot
    [ "$status" -eq 0 ]
    run "$CTL" metrics
    [ "$status" -eq 0 ]
    run "$CTL" tune get
    [ "$status" -eq 0 ]
}

@test "with --auth_token_file everything works" {
    local T=(--auth_token_file "$MC_TOKEN_FILE")
    run bash -c "printf 'v1' | '$CTL' --auth_token_file '$MC_TOKEN_FILE' put sec/flag"
    [ "$status" -eq 0 ]
    run "$CTL" "${T[@]}" get sec/flag
    [ "$status" -eq 0 ]
    [ "$output" = "v1" ]
    run "$CTL" "${T[@]}" tune set promotion_admission_threshold=3
    [ "$status" -eq 0 ]
    run "$CTL" "${T[@]}" tune set promotion_admission_threshold=2
    [ "$status" -eq 0 ]
    run "$CTL" "${T[@]}" offload sec/flag
    [ "$status" -eq 0 ]
    wait_until "'$CTL' --json stat sec/flag | jq -e '.tiers | index(\"LOCAL_DISK\")'"
    sleep 0.3  # the get's read lease (200 ms) ends
    run "$CTL" "${T[@]}" evict sec/flag
    [ "$status" -eq 0 ] || { echo "$output" >&2; false; }
    run "$CTL" "${T[@]}" promote sec/flag
    [ "$status" -eq 0 ]
    run "$CTL" "${T[@]}" rm --force sec/flag
    [ "$status" -eq 0 ]
    run "$CTL" stat sec/flag
    [ "$status" -eq 3 ]
}

@test "the token from \$MOONCAKE_AUTH_TOKEN_FILE and from \$MOONCAKE_AUTH_TOKEN" {
    run bash -c "printf 'v2' | MOONCAKE_AUTH_TOKEN_FILE='$MC_TOKEN_FILE' '$CTL' put sec/envfile"
    [ "$status" -eq 0 ]
    MOONCAKE_AUTH_TOKEN_FILE="$MC_TOKEN_FILE" run "$CTL" get sec/envfile
    [ "$status" -eq 0 ]
    [ "$output" = "v2" ]
    run bash -c "printf 'v3' | MOONCAKE_AUTH_TOKEN=bats-secret-token '$CTL' put sec/env"
    [ "$status" -eq 0 ]
    MOONCAKE_AUTH_TOKEN=bats-secret-token run "$CTL" rm --force sec/env sec/envfile
    [ "$status" -eq 0 ]
    # The flag's file wins over the environment.
    MOONCAKE_AUTH_TOKEN=wrong run "$CTL" --auth_token_file "$MC_TOKEN_FILE" tune get
    [ "$status" -eq 0 ]
}

@test "a wrong token is refused at connect (exit 1)" {
    MOONCAKE_AUTH_TOKEN=wrong run --separate-stderr "$CTL" stat sec/seed
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"auth token refused"* ]]
    printf 'nope\n' >"$BATS_TEST_TMPDIR/wrong"
    run --separate-stderr "$CTL" --auth_token_file "$BATS_TEST_TMPDIR/wrong" ls
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"auth token refused"* ]]
}

@test "an unreadable or empty token file is a usage error (exit 2)" {
    run --separate-stderr "$CTL" --auth_token_file "$BATS_TEST_TMPDIR/missing" ls
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"cannot read --auth_token_file"* ]]
    MOONCAKE_AUTH_TOKEN_FILE="$BATS_TEST_TMPDIR/missing" run --separate-stderr "$CTL" ls
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"MOONCAKE_AUTH_TOKEN_FILE"* ]]
    : >"$BATS_TEST_TMPDIR/empty"
    run --separate-stderr "$CTL" --auth_token_file "$BATS_TEST_TMPDIR/empty" ls
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"holds no token"* ]]
}

@test "no option takes the token itself on the command line" {
    run "$CTL" --auth_token bats-secret-token ls
    [ "$status" -eq 2 ]
    run "$CTL" --token bats-secret-token ls
    [ "$status" -eq 2 ]
    run "$CTL" --help
    [[ "$output" == *"MOONCAKE_AUTH_TOKEN"* ]]
    [[ "$output" != *"--auth_token "* ]]
}
