#!/usr/bin/env bash
# Issue 36's rows: BatchPut and BatchGet (the client library's batch calls) against a raw batch
# (the same values as one TCP stream with one ack per batch; one request send and the values
# back to back for gets), same run, both topologies, 4 KiB / 64 KiB / 512 KiB, 1 and 4
# threads. Alternates a "before" and an "after" throughput_bench RUNS times each and prints
# every run's ratio (raw time / store time = store ops/s / raw ops/s) and the worst and best.
#
#   bench/run-batch-exchange.sh BEFORE_BENCH AFTER_BENCH [RUNS]
#
# Each throughput_bench starts the mooncaked of its own build (the binary it was built with).
set -euo pipefail
before=$1 after=$2 runs=${3:-3}
args=(--quick --rounds 1 --topology both --sizes 4096,65536,524288 --threads 1,4
      --ops BatchPut,BatchGet)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= runs; ++r)); do
    for side in before after; do
        bin=$before; [[ $side == after ]] && bin=$after
        echo "run $r $side ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
        "$bin" "${args[@]}" 2>/dev/null | sed "s/^{/{\"side\": \"$side\", \"run\": $r, /" >> "$tmp/rows.jsonl"
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
/usr/bin/python3 - "$tmp/rows.jsonl" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cells = collections.OrderedDict()
for r in rows:
    k = (r["topology"], r["op"], r["size"], r["threads"])
    cells.setdefault(k, {"before": [], "after": []})[r["side"]].append(r)
def human(b): return f"{b // 1024} KiB"
def goal(size): return 0.9 if size >= 65536 else 0.5
print("| topology | op | size | threads | before ratio (runs) | after ratio (runs) | after worst / best | after ops/s (median) | goal | met (worst) |")
print("| --- | --- | ---: | ---: | --- | --- | --- | ---: | ---: | --- |")
met = total = 0
for (topo, op, size, th), v in cells.items():
    b = [x["ratio"] for x in v["before"]]; a = [x["ratio"] for x in v["after"]]
    ops = sorted(x["ops_per_s"] for x in v["after"])
    bad = sum(x["failed_checks"] for x in v["before"] + v["after"])
    ok = a and min(a) >= goal(size)
    total += 1; met += bool(ok)
    fmt = lambda xs: " ".join(f"{x:.2f}" for x in xs)
    print(f"| {topo} | {op} | {human(size)} | {th} | {fmt(b)} | {fmt(a)} | {min(a):.2f} / {max(a):.2f} | "
          f"{ops[len(ops)//2]:.0f} | {goal(size)} | {'yes' if ok else 'no'}{' (checks failed: %d)' % bad if bad else ''} |")
print(f"\nGoal met in every after-run in {met} of {total} rows.")
PY
