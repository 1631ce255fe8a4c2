#!/usr/bin/env bash
# Large values through the CLI against a raw loopback socket copy of the same bytes, in the
# same run: `mooncakectl put KEY FILE`, `mooncakectl get KEY --out /dev/null` and
# `mooncakectl get KEY | cat >/dev/null` (the bytes into a pipe, as a consumer reads them)
# against a standalone mooncaked, versus bench/net/raw_copy.py (FILE sent with sendfile to a
# receiver that drops the bytes: the fastest raw copy). Rounds interleave store and raw; best
# of ROUNDS each; ratio = raw time / store time (1.0 = line rate). The CLI's max RSS comes
# from /usr/bin/time -v of the same commands.
#
#   bench/net/cli-vs-raw.sh                 # 64 and 256 MiB, 3 rounds; BUILD_DIR=build
#   SIZES_MIB="16 256" ROUNDS=5 bench/net/cli-vs-raw.sh
#   JSON=1 bench/net/cli-vs-raw.sh          # one JSON object per line
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
sizes=${SIZES_MIB:-64 256}
rounds=${ROUNDS:-3}
for bin in mooncaked mooncakectl; do
    [[ -x $build/bin/$bin ]] || { echo "cli-vs-raw: build $build/bin/$bin first" >&2; exit 2; }
done
[[ -x /usr/bin/time ]] || { echo "cli-vs-raw: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
largest=0
for s in $sizes; do ((s > largest)) && largest=$s; done
# DRAM for one value at a time plus room (each round removes its key).
"$build/bin/mooncaked" --role standalone --listen "127.0.0.1:$port" --metrics_port 0 \
    --dram_size "$((largest * 2 + 64))MiB" >"$tmp/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$tmp"' EXIT
ctl=("$build/bin/mooncakectl" --master "127.0.0.1:$port")
for _ in $(seq 100); do "${ctl[@]}" nodes >/dev/null 2>&1 && break; sleep 0.1; done
# The segment is prefaulted by a background thread after start-up: let it finish first, so
# the first rounds do not share the CPU with it.
sleep "${WARMUP_SEC:-3}"

now() { date +%s.%N; }
best() { sort -g | head -1; }
rss_kib() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }

for mib in $sizes; do
    bytes=$((mib << 20))
    file=$tmp/value-$mib
    head -c "$bytes" /dev/urandom >"$file"
    : >"$tmp/put.t"; : >"$tmp/get.t"; : >"$tmp/getpipe.t"; : >"$tmp/rawput.t"; : >"$tmp/rawget.t"
    for r in $(seq "$rounds"); do
        key=bench/cli-$mib-$r
        t0=$(now)
        /usr/bin/time -v -o "$tmp/put-$r.rss" "${ctl[@]}" put "$key" "$file" >/dev/null
        t1=$(now)
        /usr/bin/time -v -o "$tmp/get-$r.rss" "${ctl[@]}" get "$key" --out /dev/null
        t2=$(now)
        "${ctl[@]}" get "$key" | cat >/dev/null
        t3=$(now)
        echo "$t1 - $t0" | bc >>"$tmp/put.t"
        echo "$t2 - $t1" | bc >>"$tmp/get.t"
        echo "$t3 - $t2" | bc >>"$tmp/getpipe.t"
        "${ctl[@]}" rm --force "$key" >/dev/null
        python3 bench/net/raw_copy.py put "$file" >>"$tmp/rawput.t"
        python3 bench/net/raw_copy.py get "$file" >>"$tmp/rawget.t"
    done
    put_rss=$(for r in $(seq "$rounds"); do rss_kib "$tmp/put-$r.rss"; done | sort -n | tail -1)
    get_rss=$(for r in $(seq "$rounds"); do rss_kib "$tmp/get-$r.rss"; done | sort -n | tail -1)
    cp "$tmp/rawget.t" "$tmp/rawgetpipe.t"
    for op in put get getpipe; do
        store=$(best <"$tmp/$op.t")
        raw=$(best <"$tmp/raw$op.t")
        rss=$([[ $op == put ]] && echo "$put_rss" || echo "$get_rss")
        ratio=$(echo "scale=3; $raw / $store" | bc)
        if [[ -n "${JSON:-}" ]]; then
            printf '{"op":"%s","size_mib":%d,"store_s":%.4f,"raw_s":%.4f,"ratio":%.2f,"cli_max_rss_kib":%d}\n' \
                "$op" "$mib" "$store" "$raw" "$ratio" "$rss"
        else
            printf '%-7s %5d MiB  store %.4f s  raw %.4f s  ratio %.2f  CLI max RSS %d KiB\n' \
                "$op" "$mib" "$store" "$raw" "$ratio" "$rss"
        fi
    done
done
