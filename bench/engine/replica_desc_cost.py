#!/usr/bin/env python3
"""What vLLM's tier log costs: batch_get_replica_desc against batch_is_exist, same keys, same run.

  /usr/bin/python3 bench/engine/replica_desc_cost.py [--mooncaked build/bin/mooncaked]
      [--pythonpath build/python] [--keys 256] [--rounds 200]

Starts a standalone mooncaked, puts KEYS small objects, then times ROUNDS calls of each over
all of them (alternating, so drift hits both) and prints the median per call and the ratio.
Both are one round trip when the batch is one RPC; issue 36 found the replica query ~50x the
existence check, one RPC per key.
"""
import argparse
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from bench_daemon import free_port

REPO = pathlib.Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mooncaked", default=str(REPO / "build/bin/mooncaked"))
    ap.add_argument("--pythonpath", default=str(REPO / "build/python"))
    ap.add_argument("--keys", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    sys.path.insert(0, args.pythonpath)
    from mooncake_tier.store import MooncakeDistributedStore

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        daemon = subprocess.Popen(
            [args.mooncaked, "--role", "standalone", "--listen", f"127.0.0.1:{port}",
             "--data_port", str(free_port()), "--metrics_port", "0", "--dram_size", "256MiB",
             "--disk_dir", tmp, "--disk_size", "256MiB"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 20
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.time() > deadline or daemon.poll() is not None:
                        sys.exit("mooncaked did not start")
                    time.sleep(0.05)
            store = MooncakeDistributedStore()
            assert store.setup_dummy(64 << 20, 16 << 20, f"127.0.0.1:{port}") == 0
            keys = [f"desc-{i}" for i in range(args.keys)]
            assert store.put_batch(keys, [b"v" * 4096] * len(keys)) == 0
            exist, desc = [], []
            for _ in range(args.rounds):
                t = time.perf_counter()
                assert store.batch_is_exist(keys) == [1] * len(keys)
                exist.append(time.perf_counter() - t)
                t = time.perf_counter()
                assert len(store.batch_get_replica_desc(keys)) == len(keys)
                desc.append(time.perf_counter() - t)
            store.close()
        finally:
            daemon.terminate()
            daemon.wait()
    e, d = statistics.median(exist) * 1e3, statistics.median(desc) * 1e3
    print(f"{args.keys} keys, {args.rounds} rounds: batch_is_exist {e:.3f} ms, "
          f"batch_get_replica_desc {d:.3f} ms per call (median); ratio {d / e:.2f}")


if __name__ == "__main__":
    main()
