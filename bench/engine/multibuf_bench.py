#!/usr/bin/env python3
"""Multi-buffer objects against single-buffer ones and a raw copy, same bytes, same run
(issue 33): what vLLM's save/load path (batch_put_from_multi_buffers /
batch_get_into_multi_buffers, a key = 8 scattered per-layer pages) costs against
batch_put_from / batch_get_into of one contiguous buffer per key.

  /usr/bin/python3 bench/engine/multibuf_bench.py --mooncaked build/bin/mooncaked \
      --pythonpath build/python

One `mooncaked --role standalone` (master and a node), and two stores in this process:
  local   a store with an embedded node, every write placed in its own segment
          (preferred_segment = itself): bytes move by memcpy between caller memory and the
          segment;
  remote  a store without a segment: bytes go to the daemon's node over the TCP data channel.
Per call: 64 keys, each 8 pieces of --piece bytes. The multi-buffer pieces are scattered (a
64-byte gap after each, as a paged KV pool's layers are), so they cannot be sent as one span;
the single-buffer arm puts the same bytes from one contiguous buffer per key. `raw` is one
memmove of the call's bytes (the floor a copy-free path approaches locally). Arms alternate
call by call; figures are medians over --rounds calls. Every byte read back is checked.

The `session` arm moves the multi-buffer arm's bytes as a layer-wise engine does through
Mooncake's session API (vLLM's connector with use_layerwise; SGLang's direct linker): a put
session per key, one batch_put_from_multi_buffer_ranges call per piece index (a layer: every
key's piece j at offset j * --piece of its object), the session's end; then a get session
and one batch_get_into_multi_buffer_ranges call per layer. Its time is all those calls.

Standard library only; buffers are ctypes arrays registered with the store.
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


def run_arm(store, arm, keys, piece, src, dst, cfg):
    """One put call and one get call of `arm`; returns (put s, get s, results ok)."""
    value = PIECES * piece
    stride = piece + GAP
    if arm == "session":
        sizes = [[piece] for _ in range(KEYS)]
        layer = lambda pool, j: [[pool.ptr + (k * PIECES + j) * stride] for k in range(KEYS)]
        offsets = lambda j: [[j * piece] for _ in range(KEYS)]
        t0 = time.perf_counter()
        put = store.batch_put_session_start(keys, [value] * KEYS, cfg)
        for j in range(PIECES):
            put += [n - piece for n in store.batch_put_from_multi_buffer_ranges(
                keys, layer(src, j), sizes, offsets(j))]
        put += store.batch_put_session_end(keys)
        t1 = time.perf_counter()
        got = [0] * KEYS
        assert store.batch_get_session_start(keys) == [0] * KEYS
        for j in range(PIECES):
            read = store.batch_get_into_multi_buffer_ranges(keys, layer(dst, j), sizes, offsets(j))
            got = [g + n for g, n in zip(got, read)]
        store.batch_get_session_end(keys)
        t2 = time.perf_counter()
        ok = put == [0] * (KEYS * (PIECES + 2)) and got == [value] * KEYS
        return t1 - t0, t2 - t1, ok
    if arm == "multi":
        sp = [[src.ptr + (k * PIECES + j) * stride for j in range(PIECES)] for k in range(KEYS)]
        dp = [[dst.ptr + (k * PIECES + j) * stride for j in range(PIECES)] for k in range(KEYS)]
        sizes = [[piece] * PIECES for _ in range(KEYS)]
        t0 = time.perf_counter()
        put = store.batch_put_from_multi_buffers(keys, sp, sizes, cfg)
        t1 = time.perf_counter()
        got = store.batch_get_into_multi_buffers(keys, dp, sizes)
        t2 = time.perf_counter()
    else:
        sp = [src.ptr + k * value for k in range(KEYS)]
        dp = [dst.ptr + k * value for k in range(KEYS)]
        sizes = [value] * KEYS
        t0 = time.perf_counter()
        put = store.batch_put_from(keys, sp, sizes, cfg)
        t1 = time.perf_counter()
        got = store.batch_get_into(keys, dp, sizes)
        t2 = time.perf_counter()
    ok = put == [0] * KEYS and got == [value] * KEYS
    return t1 - t0, t2 - t1, ok


def check_bytes(arm, piece, src, dst):
    """The bytes read back equal the bytes put (pieces compared where they sit)."""
    if arm in ("multi", "session"):
        stride = piece + GAP
        n = KEYS * PIECES
        a = b"".join(ctypes.string_at(src.ptr + i * stride, piece) for i in range(n))
        b = b"".join(ctypes.string_at(dst.ptr + i * stride, piece) for i in range(n))
    else:
        n = KEYS * PIECES * piece
        a, b = ctypes.string_at(src.ptr, n), ctypes.string_at(dst.ptr, n)
    return a == b


def scenario(name, store, cfg, piece, rounds):
    value = PIECES * piece
    span = KEYS * PIECES * (piece + GAP)
    # Both arms use the same two pools (same pages, so neither gets luckier memory), each
    # with its own layout of the call's values in them.
    src, dst = Pool(store, span), Pool(store, span)
    ctypes.memmove(src.ptr, random.Random(1).randbytes(span), span)
    pools = {arm: (src, dst) for arm in ("single", "multi", "session")}
    raw_dst = (ctypes.c_ubyte * (KEYS * value))()
    times = {arm: ([], []) for arm in pools}
    raw = []
    wrong = 0
    for r in range(rounds + 1):  # round 0 warms up (connections, pages)
        arms = ("single", "multi", "session")
        for arm in arms if r % 2 == 0 else arms[::-1]:
            src, dst = pools[arm]
            ctypes.memset(dst.ptr, 0, span)
            keys = [f"mb-{name}-{arm}-{r}-{k}" for k in range(KEYS)]
            put_s, get_s, ok = run_arm(store, arm, keys, piece, src, dst, cfg)
            if not ok or not check_bytes(arm, piece, src, dst):
                wrong += 1
            assert store.batch_remove(keys, True) == [0] * KEYS
            if r > 0:
                times[arm][0].append(put_s)
                times[arm][1].append(get_s)
        t0 = time.perf_counter()
        ctypes.memmove(raw_dst, src.ptr, KEYS * value)
        if r > 0:
            raw.append(time.perf_counter() - t0)
    total = KEYS * value
    mbps = lambda secs: total / statistics.median(secs) / 1e6
    out = {"raw": mbps(raw), "failed_calls": wrong}
    for arm in pools:
        out[f"{arm}_put"] = mbps(times[arm][0])
        out[f"{arm}_get"] = mbps(times[arm][1])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mooncaked", default="build/bin/mooncaked")
    ap.add_argument("--pythonpath", default="build/python")
    ap.add_argument("--piece", type=int, default=32 * 1024, help="bytes per buffer (8 a key)")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.pythonpath))
    from mooncake_tier.store import MooncakeDistributedStore, ReplicateConfig

    per_call = KEYS * PIECES * args.piece
    seg = 8 * per_call  # room for both arms' calls with slack
    results = local_and_remote(
        args.mooncaked, seg, "multibuf-bench-", MooncakeDistributedStore, ReplicateConfig,
        lambda name, store, cfg: scenario(name, store, cfg, args.piece, args.rounds))
    print(f"{KEYS} keys/call x {PIECES} pieces x {args.piece} B = "
          f"{per_call / 2**20:.1f} MiB per call; median of {args.rounds} calls; MB/s")
    print("| path | raw copy | single put | multi put | multi/single put | single get | "
          "multi get | multi/single get | multi put/raw | multi get/raw | failed calls |")
    print("| --- " * 11 + "|")
    for name, r in results.items():
        print(f"| {name} | {r['raw']:.0f} | {r['single_put']:.0f} | {r['multi_put']:.0f} | "
              f"{r['multi_put'] / r['single_put']:.2f} | {r['single_get']:.0f} | "
              f"{r['multi_get']:.0f} | {r['multi_get'] / r['single_get']:.2f} | "
              f"{r['multi_put'] / r['raw']:.2f} | {r['multi_get'] / r['raw']:.2f} | "
              f"{r['failed_calls']} |")
    print()
    print("Layer-wise through the session API (the multi-buffer arm's bytes, one call per "
          "layer): MB/s")
    print("| path | session put | session/multi put | session get | session/multi get |")
    print("| --- " * 5 + "|")
    for name, r in results.items():
        print(f"| {name} | {r['session_put']:.0f} | {r['session_put'] / r['multi_put']:.2f} | "
              f"{r['session_get']:.0f} | {r['session_get'] / r['multi_get']:.2f} |")
    if any(r["failed_calls"] for r in results.values()):
        sys.exit("multibuf_bench: some calls failed or read back wrong bytes")


if __name__ == "__main__":
    main()
