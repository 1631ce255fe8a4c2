# Shared by the mooncakectl bats files: a real standalone mooncaked per file, on free ports.
#
# MOONCAKE_BIN (set by ctest) is the directory holding mooncakectl and mooncaked; without it
# the build tree next to the sources is tried.

bats_require_minimum_version 1.5.0

MOONCAKE_BIN=${MOONCAKE_BIN:-$(cd "$BATS_TEST_DIRNAME/../../build/bin" 2>/dev/null && pwd)}
CTL="$MOONCAKE_BIN/mooncakectl"
DAEMON="$MOONCAKE_BIN/mooncaked"

# True when nothing accepts connections on 127.0.0.1:$1.
port_is_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Starts a standalone daemon (extra mooncaked flags in "$@") and exports MOONCAKE_MASTER.
# Ports are picked at random and retried if the daemon could not bind them. With
# MC_WITH_METRICS=1 the daemon also serves /metrics on port + 2 (exported as MC_METRICS_PORT).
start_daemon() {
    [ -x "$CTL" ] || { echo "no mooncakectl at $CTL (set MOONCAKE_BIN)" >&2; return 1; }
    [ -x "$DAEMON" ] || { echo "no mooncaked at $DAEMON (set MOONCAKE_BIN)" >&2; return 1; }
    command -v jq >/dev/null || { echo "these tests need jq (apt-get install jq)" >&2; return 1; }
    export MC_DIR="$BATS_FILE_TMPDIR/mooncake"
    mkdir -p "$MC_DIR/disk"
    local attempt port
    : >"$MC_DIR/daemon.log"
    for attempt in 1 2 3 4 5 6 7 8; do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
        port_is_free "$port" && port_is_free $((port + 1)) && port_is_free $((port + 2)) || continue
        local metrics_port=0
        [ "${MC_WITH_METRICS:-0}" = 1 ] && metrics_port=$((port + 2))
        export MC_METRICS_PORT=$metrics_port
        # Every attempt's output is kept (appended), so a failure shows why each one ended.
        echo "--- attempt $attempt: port $port" >>"$MC_DIR/daemon.log"
        "$DAEMON" --role standalone --listen "127.0.0.1:$port" --metrics_port "$metrics_port" \
            --dram_size 64MiB --disk_dir "$MC_DIR/disk" --disk_size 256MiB "$@" \
            >>"$MC_DIR/daemon.log" 2>&1 3>&- &
        export MC_PID=$!
        export MOONCAKE_MASTER="127.0.0.1:$port"
        echo "$MC_PID" >"$MC_DIR/daemon.pid"
        # Up to 30 s: a loaded CI machine (two ctest jobs, one of them a sanitizer build's
        # test) can take seconds to start it. Only an exited daemon means "try another port".
        local i
        for i in $(seq 1 600); do
            if ! kill -0 "$MC_PID" 2>/dev/null; then
                local status=0
                wait "$MC_PID" 2>/dev/null || status=$?
                echo "--- attempt $attempt: mooncaked exited with status $status" >>"$MC_DIR/daemon.log"
                break
            fi
            # Ready once the node has registered: `nodes` lists it.
            if "$CTL" nodes 2>/dev/null | grep -q "127.0.0.1:$port"; then
                return 0
            fi
            sleep 0.05
        done
        if kill -0 "$MC_PID" 2>/dev/null; then
            echo "--- attempt $attempt: not ready after 30 s, stopping it" >>"$MC_DIR/daemon.log"
            kill -TERM "$MC_PID" 2>/dev/null
            wait "$MC_PID" 2>/dev/null
        fi
    done
    echo "mooncaked did not start; its log:" >&2
    cat "$MC_DIR/daemon.log" >&2
    return 1
}

stop_daemon() {
    [ -n "${MC_PID:-}" ] || return 0
    kill -TERM "$MC_PID" 2>/dev/null || return 0
    local i
    for i in $(seq 1 100); do
        kill -0 "$MC_PID" 2>/dev/null || return 0
        sleep 0.05
    done
    kill -KILL "$MC_PID" 2>/dev/null
}

# Waits (up to $2 seconds, default 10) until `mooncakectl $1...` succeeds.
wait_until() {
    local cmd=$1 timeout=${2:-10} i
    for i in $(seq 1 $((timeout * 20))); do
        eval "$cmd" >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "timed out waiting for: $cmd" >&2
    return 1
}

# The first tier of KEY, from `stat --json`.
first_tier() {
    "$CTL" --json stat "$1" | jq -r '.tiers[0] // "none"'
}

# True when the key has a COMPLETE LOCAL_DISK replica (`stat`: not an access).
has_disk_copy() {
    "$CTL" --json stat "$1" | jq -e '.tiers | index("LOCAL_DISK") != null' >/dev/null
}

# Flips one byte in the middle of the first occurrence of the text $1 in the disk image.
flip_byte_of() {
    python3 - "$MC_DIR/disk/mooncake-disk.img" "$1" <<'EOF'
import sys
path, marker = sys.argv[1], sys.argv[2].encode()
with open(path, "r+b") as f:
    data = f.read()
    at = data.find(marker)
    assert at >= 0, "marker not found in the image"
    f.seek(at + 2000)
    b = f.read(1)
    f.seek(at + 2000)
    f.write(bytes([b[0] ^ 0xFF]))
EOF
}
