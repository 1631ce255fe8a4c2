#!/usr/bin/env python3
"""get_into_ranges against batch_get_into of the same bytes, same run (issue 33): the range
form an engine uses to gather parts of values (a tensor shard, a layer's slice) into one
registered buffer, against reading whole values into it.

  /usr/bin/python3 bench/engine/ranges_bench.py --mooncaked build/bin/mooncaked \
      --pythonpath build/python

One `mooncaked --role standalone` (master and a node), and two stores in this process:
  local   a store with an embedded node, every write placed in its own segment: bytes move
          by memcpy out of the segment;
  remote  a store without a segment: bytes come from the daemon's node over TCP.
Per call: 64 keys of 8 x --piece bytes. `whole`: batch_get_into of each value into its slot
of the destination. `ranges`: one get_into_ranges call naming, per key, its 8 pieces as 8
ranges, each landing at a scattered place of the destination (a 64-byte gap after each), so
the same bytes are read in both arms. `half`: the same call naming only every other piece
(half the bytes). Arms alternate call by call; figures are medians over --rounds calls, MB/s
of the bytes the call delivers. Every byte read is checked.
"""
import argparse
import ctypes
import os
import random
import statistics
import sys
import time

from bench_daemon import Pool, local_and_remote

KEYS, PIECES, GAP = 64, 8, 64


def scenario(name, store, cfg, piece, rounds):
    value = PIECES * piece
    stride = piece + GAP
    span = KEYS * PIECES * stride
    src, dst = Pool(store, KEYS * value), Pool(store, span)
    ctypes.memmove(src.ptr, random.Random(1).randbytes(KEYS * value), KEYS * value)
    keys = [f"rg-{name}-{k}" for k in range(KEYS)]
    rc = store.batch_put_from(keys, [src.ptr + k * value for k in range(KEYS)],
                              [value] * KEYS, cfg)
    assert rc == [0] * KEYS, rc
    times = {"whole": [], "ranges": [], "half": []}
    wrong = 0
    for r in range(rounds + 1):  # round 0 warms up
        order = list(times) if r % 2 == 0 else list(reversed(times))
        for arm in order:
            ctypes.memset(dst.ptr, 0, span)
            if arm == "whole":
                t0 = time.perf_counter()
                got = store.batch_get_into(keys, [dst.ptr + k * value for k in range(KEYS)],
                                           [value] * KEYS)
                secs = time.perf_counter() - t0
                ok = got == [value] * KEYS and \
                    ctypes.string_at(dst.ptr, KEYS * value) == ctypes.string_at(src.ptr, KEYS * value)
            else:
                step = 1 if arm == "ranges" else 2
                js = list(range(0, PIECES, step))
                dsts = [[(k * PIECES + j) * stride for j in js] for k in range(KEYS)]
                srcs = [[j * piece for j in js] for _ in range(KEYS)]
                sizes = [[piece] * len(js) for _ in range(KEYS)]
                t0 = time.perf_counter()
                got = store.get_into_ranges([dst.ptr], [keys], [dsts], [srcs], [sizes])
                secs = time.perf_counter() - t0
                ok = got == [[[piece] * len(js) for _ in range(KEYS)]]
                for k in range(0, KEYS, 7):  # a sample of keys, every range of each
                    for j in js:
                        a = ctypes.string_at(src.ptr + k * value + j * piece, piece)
                        b = ctypes.string_at(dst.ptr + (k * PIECES + j) * stride, piece)
                        ok = ok and a == b
            wrong += 0 if ok else 1
            if r > 0:
                times[arm].append(secs)
    assert store.batch_remove(keys, True) == [0] * KEYS
    out = {"failed_calls": wrong}
    for arm, secs in times.items():
        delivered = KEYS * value // (2 if arm == "half" else 1)
        out[arm] = delivered / statistics.median(secs) / 1e6
        out[arm + "_ms"] = statistics.median(secs) * 1e3
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mooncaked", default="build/bin/mooncaked")
    ap.add_argument("--pythonpath", default="build/python")
    ap.add_argument("--piece", type=int, default=32 * 1024, help="bytes per range (8 a key)")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.pythonpath))
    from mooncake_tier.store import MooncakeDistributedStore, ReplicateConfig

    per_call = KEYS * PIECES * args.piece
    seg = 4 * per_call
    results = local_and_remote(
        args.mooncaked, seg, "ranges-bench-", MooncakeDistributedStore, ReplicateConfig,
        lambda name, store, cfg: scenario(name, store, cfg, args.piece, args.rounds))
    print(f"{KEYS} keys/call x {PIECES} ranges x {args.piece} B = "
          f"{per_call / 2**20:.1f} MiB per call; median of {args.rounds} calls; MB/s "
          f"(ms a call)")
    print("| path | batch_get_into | get_into_ranges | **ranges/whole** | "
          "half the ranges | failed calls |")
    print("| --- " * 6 + "|")
    for name, r in results.items():
        print(f"| {name} | {r['whole']:.0f} ({r['whole_ms']:.2f}) | "
              f"{r['ranges']:.0f} ({r['ranges_ms']:.2f}) | "
              f"{r['ranges'] / r['whole']:.2f} | {r['half']:.0f} ({r['half_ms']:.2f}) | "
              f"{r['failed_calls']} |")
    if any(r["failed_calls"] for r in results.values()):
        sys.exit("ranges_bench: some calls failed or read back wrong bytes")


if __name__ == "__main__":
    main()
