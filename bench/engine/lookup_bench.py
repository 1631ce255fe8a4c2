#!/usr/bin/env python3
"""Lookups against table size (issue 36): batch_is_exist of existing keys at N objects.

  /usr/bin/python3 bench/engine/lookup_bench.py --mooncaked build/bin/mooncaked \
      --pythonpath build/python [--sizes 10000,1000000] [--clients 1,4] [--rounds 5] \
      [--calls 300] [--keys 256] [--json out.json]

One standalone mooncaked per size, all up at once, each loaded with that many 8-byte objects
under 32-byte keys (through the module's put_batch, 2 loader processes). Then, per round and
client count, each daemon in turn: C client processes (the module, setup_dummy) each time
CALLS calls of batch_is_exist of KEYS random existing keys. A daemon's rate is the clients'
calls/s summed; the figure that matters is each size's rate over the first size's, taken per
round (so drift hits both sides) and reported as the median over rounds, also from the median
call time (robust to a client descheduled on a shared box).
"""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from bench_daemon import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def key(i):
    return f"lookup-{i:025d}"  # 32 bytes: longer than the small-string buffer, as engines' are


def open_store(pythonpath, address):
    sys.path.insert(0, pythonpath)
    from mooncake_tier.store import MooncakeDistributedStore
    store = MooncakeDistributedStore()
    if store.setup_dummy(16 << 20, 16 << 20, address) != 0:
        sys.exit(f"setup_dummy {address} failed")
    return store


def run_loader(args):
    store = open_store(args.pythonpath, args.address)
    value = b"v" * 8
    for lo in range(args.first, args.last, 1000):
        keys = [key(i) for i in range(lo, min(lo + 1000, args.last))]
        rc = store.put_batch(keys, [value] * len(keys))
        if rc != 0:
            sys.exit(f"put_batch at {lo}: {rc}")
    store.close()


def run_client(args):
    store = open_store(args.pythonpath, args.address)
    rng = random.Random(args.seed)
    batches = [[key(rng.randrange(args.objects)) for _ in range(args.keys)]
               for _ in range(args.calls)]
    print("ready", flush=True)
    sys.stdin.readline()  # go
    times = []
    start = time.perf_counter()
    for keys in batches:
        t = time.perf_counter()
        found = store.batch_is_exist(keys)
        times.append(time.perf_counter() - t)
        if found != [1] * len(keys):
            sys.exit("a loaded key was not found")
    elapsed = time.perf_counter() - start
    store.close()
    print(json.dumps({"elapsed": elapsed, "times": times}), flush=True)


def self_cmd(args, mode, *extra):
    return [sys.executable, os.path.abspath(__file__), "--mode", mode,
            "--pythonpath", args.pythonpath, *map(str, extra)]


class Daemon:
    def __init__(self, args, objects, tmp):
        self.objects = objects
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        dram_mib = max(256, objects * 64 // (1 << 20) * 2)  # 64-byte granules, room to spare
        disk = os.path.join(tmp, f"disk-{objects}")
        os.makedirs(disk)
        self.log = open(os.path.join(tmp, f"daemon-{objects}.log"), "w")
        self.proc = subprocess.Popen(
            [args.mooncaked, "--role", "standalone", "--listen", self.address,
             "--data_port", str(free_port()), "--metrics_port", "0",
             "--dram_size", f"{dram_mib}MiB", "--disk_dir", disk, "--disk_size", "64MiB",
             "--enable_offload=false"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                sys.exit(f"mooncaked exited with {self.proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("mooncaked did not start")
                time.sleep(0.05)

    def load(self, args):
        t = time.monotonic()
        step = (self.objects + args.loaders - 1) // args.loaders
        loaders = [subprocess.Popen(self_cmd(args, "load", "--address", self.address,
                                             "--first", lo,
                                             "--last", min(lo + step, self.objects)))
                   for lo in range(0, self.objects, step)]
        if any(p.wait() != 0 for p in loaders):
            sys.exit(f"loading {self.objects} objects failed")
        return time.monotonic() - t

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def measure(args, daemon, clients, round_no):
    procs = [subprocess.Popen(self_cmd(args, "client", "--address", daemon.address,
                                       "--objects", daemon.objects, "--calls", args.calls,
                                       "--keys", args.keys,
                                       "--seed", round_no * 1000 + c),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for c in range(clients)]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            sys.exit("a client did not start")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.stdout.readline()) for p in procs]
    if any(p.wait() != 0 for p in procs):
        sys.exit("a client failed")
    times = [t for r in results for t in r["times"]]
    return {"calls_per_s": sum(args.calls / r["elapsed"] for r in results),
            "median_ms": statistics.median(times) * 1e3,
            "p99_ms": sorted(times)[int(0.99 * (len(times) - 1))] * 1e3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="main", choices=("main", "load", "client"))
    ap.add_argument("--mooncaked", default=os.path.join(REPO, "build/bin/mooncaked"))
    ap.add_argument("--pythonpath", default=os.path.join(REPO, "build/python"))
    ap.add_argument("--sizes", default="10000,1000000")
    ap.add_argument("--clients", default="1,4")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--keys", type=int, default=256)
    ap.add_argument("--loaders", type=int, default=2)
    ap.add_argument("--json")
    # Internal (loader and client processes).
    ap.add_argument("--address")
    ap.add_argument("--first", type=int)
    ap.add_argument("--last", type=int)
    ap.add_argument("--objects", type=int)
    ap.add_argument("--seed", type=int)
    args = ap.parse_args()
    if args.mode == "load":
        return run_loader(args)
    if args.mode == "client":
        return run_client(args)

    sizes = [int(s) for s in args.sizes.split(",")]
    client_counts = [int(c) for c in args.clients.split(",")]
    tmp = tempfile.mkdtemp(prefix="lookup-bench-")
    daemons = []
    try:
        report = {"keys_per_call": args.keys, "calls": args.calls, "rounds": args.rounds,
                  "sizes": {}}
        for n in sizes:
            d = Daemon(args, n, tmp)
            daemons.append(d)
            rss0 = d.rss_mib()
            secs = d.load(args)
            report["sizes"][n] = {"load_s": secs, "rss_growth_mib": d.rss_mib() - rss0}
            print(f"loaded {n} objects in {secs:.1f} s", file=sys.stderr)
        runs = {(n, c): [] for n in sizes for c in client_counts}
        for r in range(args.rounds):
            for c in client_counts:
                for d in daemons:
                    runs[(d.objects, c)].append(measure(args, d, c, r))
        table = []
        for c in client_counts:
            base = runs[(sizes[0], c)]
            for n in sizes:
                rs = runs[(n, c)]
                ratios = [x["calls_per_s"] / b["calls_per_s"] for x, b in zip(rs, base)]
                # The same from the median call: on a shared box a client descheduled for a
                # while lowers calls/s but not the median call time.
                p50_ratios = [b["median_ms"] / x["median_ms"] for x, b in zip(rs, base)]
                row = {"objects": n, "clients": c,
                       "calls_per_s": statistics.median(x["calls_per_s"] for x in rs),
                       "median_ms": statistics.median(x["median_ms"] for x in rs),
                       "p99_ms": statistics.median(x["p99_ms"] for x in rs),
                       "ratio_to_first": statistics.median(ratios),
                       "ratios": ratios,
                       "p50_ratio_to_first": statistics.median(p50_ratios),
                       "p50_ratios": p50_ratios}
                table.append(row)
        report["table"] = table
        print(f"{'objects':>10} {'clients':>7} {'calls/s':>9} {'p50 ms':>7} {'p99 ms':>7} "
              f"{'ratio':>6} {'by p50':>6}  per round (rate; by p50)")
        for row in table:
            print(f"{row['objects']:>10} {row['clients']:>7} {row['calls_per_s']:>9.0f} "
                  f"{row['median_ms']:>7.3f} {row['p99_ms']:>7.3f} "
                  f"{row['ratio_to_first']:>6.2f} {row['p50_ratio_to_first']:>6.2f}  "
                  + " ".join(f"{x:.2f}" for x in row["ratios"]) + "; "
                  + " ".join(f"{x:.2f}" for x in row["p50_ratios"]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
    finally:
        for d in daemons:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
