#!/usr/bin/env python3
"""Engine load generator (issue 36): N engine processes replay a Mooncake-format trace through
the Python module against a real standalone mooncaked, and the same pages go through a raw
loopback TCP copy in the same run.

  /usr/bin/python3 bench/engine/engine_load.py --mooncaked build/bin/mooncaked \
      --pythonpath build/python --json out.json --plot out.svg

Per request each client does what a prefix-caching engine does with its KV pages (one page
per hash_id, i.e. per 512-token block):
  batch_is_exist(all blocks) -> the longest prefix of existing blocks,
  batch_get_into(that prefix)  (every page byte-checked against its key),
  batch_put_from(the rest)     (pages filled with key-derived bytes).
Arms: `raw` (a loopback socket copy of the same pages, one ack per batch), `promotion` (daemon
defaults) and `no-promotion` (--promotion_on_hit=false: a LOCAL_DISK hit stays on disk).
Tier shares come from the daemon's Prometheus counters (gets_total{tier=...}), as deltas over
the measured phase, divided by the blocks the clients looked up: a block not in the found
prefix (absent, or behind an absent one) counts as a miss, as it does for the engine.

Only the standard library (the brief's numpy is not installed on this machine): buffers come
from the module's MooncakeHostMemAllocator (what SGLang uses), bytes move with ctypes.
"""
import argparse
import ctypes
import hashlib
import json
import multiprocessing as mp
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_TRACE = os.path.join(os.path.dirname(REPO), "shared", "traces",
                             "conversation_trace.jsonl")
CALLS = ("is_exist", "get_into", "put_from")


# ---------------------------------------------------------------------------------------------
# Trace and page contents


def load_trace(path, n):
    """hash_ids of the first n requests."""
    out = []
    with open(path) as f:
        for line in f:
            if len(out) >= n:
                break
            line = line.strip()
            if line:
                out.append(json.loads(line)["hash_ids"])
    if not out:
        sys.exit(f"engine_load: no requests in {path}")
    return out


def page_of(key, size):
    """The page a key stands for: its 16-byte digest repeated, so every byte of a get is
    checked and two keys never share a page."""
    d = hashlib.blake2b(key.encode(), digest_size=16).digest()
    reps, tail = divmod(size, 16)
    return d * reps + d[:tail]


def count_wrong(got, want):
    return sum(1 for a, b in zip(got, want) if a != b) + abs(len(got) - len(want))


# ---------------------------------------------------------------------------------------------
# Daemon


def free_port(taken):
    """A loopback port below the ephemeral range (as tests/python/conftest.py picks them, so no
    outgoing connection grabs it before the daemon binds), never one already handed out."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            high = int(f.read().split()[0])
    except (OSError, ValueError):
        high = 0
    for _ in range(1000):
        port = random.randrange(10000, high) if high > 11000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            port = s.getsockname()[1]
        if port not in taken:
            taken.add(port)
            return port
    raise RuntimeError("no free loopback port")


class Daemon:
    """One `mooncaked --role standalone` (master and node in one), as conftest's Standalone."""

    def __init__(self, binary, workdir, dram_mib, disk_mib, extra, warmup_s):
        ports = set()
        self.port, data, self.metrics_port = (free_port(ports) for _ in range(3))
        self.address = f"127.0.0.1:{self.port}"
        disk = os.path.join(workdir, f"disk-{self.port}")
        os.mkdir(disk)
        self.log_path = os.path.join(workdir, f"mooncaked-{self.port}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [binary, "--role", "standalone", "--listen", self.address,
             "--data_port", str(data), "--metrics_port", str(self.metrics_port),
             "--dram_size", f"{dram_mib}MiB", "--disk_dir", disk,
             "--disk_size", f"{disk_mib}MiB", *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mooncaked exited with {self.proc.returncode}; "
                                   f"see {self.log_path}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"mooncaked did not listen on {self.port}")
                time.sleep(0.05)
        # The segment is prefaulted by a background thread after start-up (see
        # bench/net/cli-vs-raw.sh): let it finish so the clients do not share the CPU with it.
        time.sleep(warmup_s)

    def metrics(self):
        """{name{labels}: value} of every sample on /metrics, the mooncake_ prefix dropped."""
        text = urllib.request.urlopen(
            f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10).read().decode()
        out = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            name, value = line.rsplit(" ", 1)
            if name.startswith("mooncake_"):
                name = name[len("mooncake_"):]
            try:
                out[name] = float(value)
            except ValueError:
                pass
        return out

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ---------------------------------------------------------------------------------------------
# Store client (one process = one engine)


def store_client(pythonpath, address, requests, page, prefix, ready, go, results):
    sys.path.insert(0, pythonpath)
    from mooncake_tier.store import MooncakeDistributedStore, MooncakeHostMemAllocator

    max_blocks = max(len(r) for r in requests)
    pool_bytes = max_blocks * page
    pool = MooncakeHostMemAllocator().alloc(pool_bytes)  # the engine's host KV pool
    store = MooncakeDistributedStore()
    rc = store.setup_dummy(pool_bytes, 16 << 20, address)
    if rc != 0 or store.register_buffer(pool, pool_bytes) != 0:
        ready.put(f"setup_dummy/register_buffer failed ({rc})")
        return
    ptrs = [pool + i * page for i in range(max_blocks)]
    lat = {c: [] for c in CALLS}
    st = dict(requests=0, blocks=0, found=0, gets=0, get_failed=0, get_bytes=0, wrong_bytes=0,
              wrong_pages=0, puts=0, put_ok=0, put_bytes=0)
    put_codes, get_codes = {}, {}
    slow_puts = []
    ready.put("ok")
    go.wait()
    start = time.monotonic()
    for ids in requests:
        keys = [f"{prefix}-{h}" for h in ids]
        n = len(keys)
        t = time.perf_counter()
        exist = store.batch_is_exist(keys)
        lat["is_exist"].append(time.perf_counter() - t)
        hit = 0
        while hit < n and exist[hit] == 1:
            hit += 1
        if hit:
            # Zeroed first, so a get that claims success but writes nothing is caught even
            # when the same key sat in the same slot last time.
            ctypes.memset(pool, 0, hit * page)
            t = time.perf_counter()
            got = store.batch_get_into(keys[:hit], ptrs[:hit], [page] * hit)
            lat["get_into"].append(time.perf_counter() - t)
            for i in range(hit):
                if got[i] == page:
                    st["get_bytes"] += page
                    data = ctypes.string_at(ptrs[i], page)
                    want = page_of(keys[i], page)
                    if data != want:
                        st["wrong_pages"] += 1
                        st["wrong_bytes"] += count_wrong(data, want)
                else:
                    st["get_failed"] += 1
                    get_codes[got[i]] = get_codes.get(got[i], 0) + 1
        if hit < n:
            for i in range(hit, n):
                ctypes.memmove(ptrs[i], page_of(keys[i], page), page)
            t = time.perf_counter()
            rcs = store.batch_put_from(keys[hit:], ptrs[hit:n], [page] * (n - hit))
            dt = time.perf_counter() - t
            lat["put_from"].append(dt)
            if dt > 0.1:  # when the stalls come: seconds into the run, and how long
                slow_puts.append((round(time.monotonic() - dt - start, 3), round(dt, 3)))
            for rc in rcs:
                if rc == 0:
                    st["put_ok"] += 1
                    st["put_bytes"] += page
                else:
                    put_codes[rc] = put_codes.get(rc, 0) + 1
        st["requests"] += 1
        st["blocks"] += n
        st["found"] += hit
        st["gets"] += hit
        st["puts"] += n - hit
    end = time.monotonic()
    store.close()
    results.put(dict(start=start, end=end, lat=lat, stats=st, slow_puts=slow_puts,
                     put_codes={str(k): v for k, v in put_codes.items()},
                     get_codes={str(k): v for k, v in get_codes.items()}))


# ---------------------------------------------------------------------------------------------
# Raw baseline: the same pages over a loopback socket


def raw_receiver(listener, page):
    """Reads each batch (8-byte length, then the pages) into one reused buffer and answers one
    byte: the cheapest receiver there is."""
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sink = bytearray(max(page, 1 << 20))
    view = memoryview(sink)
    header = bytearray(8)
    while True:
        got = 0
        while got < 8:
            k = conn.recv_into(memoryview(header)[got:], 8 - got)
            if k == 0:
                conn.close()
                return
            got += k
        (left,) = struct.unpack("<Q", header)
        while left:
            k = conn.recv_into(view, min(len(sink), left))
            if k == 0:
                conn.close()
                return
            left -= k
        conn.sendall(b"A")


def raw_client(pythonpath, address, requests, page, prefix, ready, go, results):
    # The receiver is its own process, as the daemon is for the store arms.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    receiver = mp.get_context("fork").Process(target=raw_receiver, args=(listener, page))
    receiver.start()
    max_blocks = max(len(r) for r in requests)
    buf = bytearray(max_blocks * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    view = memoryview(buf)
    sock = socket.create_connection(listener.getsockname())
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    lat = []
    sent = 0
    ready.put("ok")
    go.wait()
    start = time.monotonic()
    for ids in requests:
        n = len(ids)
        # The same per-page work the store client does (fill from the key), so the ratio
        # compares transports, not Python.
        for i, h in enumerate(ids):
            ctypes.memmove(base + i * page, page_of(f"{prefix}-{h}", page), page)
        t = time.perf_counter()
        sock.sendall(struct.pack("<Q", n * page))
        sock.sendall(view[:n * page])
        if sock.recv(1) != b"A":
            raise RuntimeError("raw receiver went away")
        lat.append(time.perf_counter() - t)
        sent += n * page
    end = time.monotonic()
    sock.close()
    receiver.join()
    listener.close()
    results.put(dict(start=start, end=end, lat={"copy": lat},
                     stats=dict(requests=len(requests), bytes=sent)))


# ---------------------------------------------------------------------------------------------
# Arms


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100.0 * (len(v) - 1))))]


def run_clients(target, args, address, shards, prefix, timeout):
    """Starts one process per shard, releases them together once all are set up, and returns
    their results and the wall time from the first start to the last end."""
    ctx = mp.get_context("spawn")  # a fresh interpreter: no store state inherited
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=target, args=(args.pythonpath, address, shard, args.page_size,
                                              prefix, ready, go, results))
             for shard in shards]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            msg = ready.get(timeout=60)
            if msg != "ok":
                raise RuntimeError(f"client: {msg}")
        go.set()
        out = [results.get(timeout=timeout) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    wall = max(r["end"] for r in out) - min(r["start"] for r in out)
    return out, wall


def run_raw(args, shards):
    out, wall = run_clients(raw_client, args, "", shards, "raw", args.timeout)
    total = sum(r["stats"]["bytes"] for r in out)
    lat = [x for r in out for x in r["lat"]["copy"]]
    reqs = sum(r["stats"]["requests"] for r in out)
    return dict(arm="raw", wall_s=wall, requests=reqs, requests_per_s=reqs / wall,
                bytes=total, bytes_per_s=total / wall,
                p50_ms={"copy": 1e3 * percentile(lat, 50)},
                p99_ms={"copy": 1e3 * percentile(lat, 99)})


def delta(after, before, name):
    return after.get(name, 0.0) - before.get(name, 0.0)


def run_store(args, shards, arm, workdir):
    extra = ["--promotion_on_hit=false"] if arm == "no-promotion" else []
    extra += args.daemon_flag
    d = Daemon(args.mooncaked, workdir, args.dram, args.disk, extra, args.warmup)
    try:
        before = d.metrics()
        out, wall = run_clients(store_client, args, d.address, shards, "eng", args.timeout)
        after = d.metrics()
    finally:
        d.stop()
    st = {}
    for r in out:
        for k, v in r["stats"].items():
            st[k] = st.get(k, 0) + v
    put_codes, get_codes = {}, {}
    for r in out:
        for k, v in r["put_codes"].items():
            put_codes[k] = put_codes.get(k, 0) + v
        for k, v in r["get_codes"].items():
            get_codes[k] = get_codes.get(k, 0) + v
    p50, p99, mean, in_calls, slow, slow_s = {}, {}, {}, 0.0, {}, {}
    for c in CALLS:
        lat = [x for r in out for x in r["lat"][c]]
        p50[c] = None if not lat else 1e3 * percentile(lat, 50)
        p99[c] = None if not lat else 1e3 * percentile(lat, 99)
        mean[c] = None if not lat else 1e3 * sum(lat) / len(lat)
        slow[c] = sum(1 for x in lat if x > 0.1)
        slow_s[c] = sum(x for x in lat if x > 0.1)
        in_calls += sum(lat)
    blocks = st["blocks"]
    mem = delta(after, before, 'gets_total{tier="MEMORY"}')
    disk = delta(after, before, 'gets_total{tier="LOCAL_DISK"}')
    moved = st["get_bytes"] + st["put_bytes"]
    return dict(
        arm=arm, wall_s=wall, requests=st["requests"], requests_per_s=st["requests"] / wall,
        bytes=moved, bytes_per_s=moved / wall,
        p50_ms=p50, p99_ms=p99, mean_ms=mean,
        # Share of the clients' wall time spent inside store calls (the rest is the page
        # filling and checking this script does, and Python).
        slow_puts=[sorted(r["slow_puts"]) for r in out],  # per client: [start s, seconds]
        calls_over_100ms=slow, seconds_in_calls_over_100ms=slow_s,
        in_call_share=in_calls / (wall * len(out)),
        put_success_ratio=(st["put_ok"] / st["puts"]) if st["puts"] else 1.0,
        put_failures_by_code=put_codes, get_failures_by_code=get_codes,
        wrong_bytes=st["wrong_bytes"], wrong_pages=st["wrong_pages"],
        blocks=blocks, blocks_found=st["found"], gets_failed=st["get_failed"],
        memory_share=mem / blocks, disk_share=disk / blocks,
        miss_share=max(0.0, 1.0 - (mem + disk) / blocks),
        # The floor of miss_share: every distinct block is absent the first time it is asked.
        compulsory_miss_share=len({b for s in shards for r in s for b in r}) / blocks,
        metrics_delta={k: delta(after, before, k) for k in (
            'gets_total{tier="MEMORY"}', 'gets_total{tier="LOCAL_DISK"}', "get_misses_total",
            "puts_total", "put_no_space_total", "evictions_total", "offload_completed_total",
            "promotion_attempts_total", "promotion_completed_total")},
        daemon=dict(dram_mib=args.dram, disk_mib=args.disk, flags=extra))


# ---------------------------------------------------------------------------------------------
# Output


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def table(rows):
    head = ["arm", "req/s", "MB/s", "vs raw", "exist p50/p99 ms", "get p50/p99 ms",
            "put p50/p99 ms", "puts >100 ms", "put ok", "wrong B", "MEMORY", "LOCAL_DISK", "miss"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        if r["arm"] == "raw":
            cells = ["raw", fmt(r["requests_per_s"], ".1f"), fmt(r["bytes_per_s"] / 1e6, ".0f"),
                     "1.00", "", f"copy {r['p50_ms']['copy']:.2f} / {r['p99_ms']['copy']:.2f}",
                     "", "", "", "", "", "", ""]
        else:
            lat = [f"{fmt(r['p50_ms'][c], '.2f')} / {fmt(r['p99_ms'][c], '.2f')}"
                   for c in CALLS]
            cells = [r["arm"], fmt(r["requests_per_s"], ".1f"),
                     fmt(r["bytes_per_s"] / 1e6, ".0f"), fmt(r.get("raw_ratio"), ".2f"), *lat,
                     f"{r['calls_over_100ms']['put_from']} "
                     f"({r['seconds_in_calls_over_100ms']['put_from']:.1f} s)",
                     f"{100 * r['put_success_ratio']:.1f}%", str(r["wrong_bytes"]),
                     f"{r['memory_share']:.3f}", f"{r['disk_share']:.3f}",
                     f"{r['miss_share']:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def svg(rows, title):
    """Two panels by hand (no matplotlib here): MB/s per arm, and the tier shares of the
    blocks looked up per store arm as stacked bars."""
    w, h, top, base = 720, 340, 50, 290
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           '<text x="180" y="40" text-anchor="middle">MB/s (pages moved)</text>',
           '<text x="540" y="40" text-anchor="middle">share of blocks looked up</text>']
    peak = max(r["bytes_per_s"] for r in rows) / 1e6 or 1.0
    span = base - top
    x = 40
    bw = min(80, 280 // max(1, len(rows)) - 10)
    for r in rows:
        v = r["bytes_per_s"] / 1e6
        bh = span * v / peak
        color = "#888888" if r["arm"] == "raw" else "#3366cc"
        out.append(f'<rect x="{x}" y="{base - bh:.1f}" width="{bw}" height="{bh:.1f}" '
                   f'fill="{color}"/>')
        out.append(f'<text x="{x + bw / 2}" y="{base - bh - 4:.1f}" '
                   f'text-anchor="middle">{v:.0f}</text>')
        out.append(f'<text x="{x + bw / 2}" y="{base + 16}" text-anchor="middle">'
                   f'{r["arm"]}</text>')
        x += bw + 20
    out.append(f'<line x1="30" y1="{base}" x2="330" y2="{base}" stroke="black"/>')
    colors = (("memory_share", "#2ca02c", "MEMORY"), ("disk_share", "#ff7f0e", "LOCAL_DISK"),
              ("miss_share", "#d62728", "miss"))
    x = 400
    for r in rows:
        if r["arm"] == "raw":
            continue
        y = base
        for key, color, _ in colors:
            bh = span * r[key]
            y -= bh
            out.append(f'<rect x="{x}" y="{y:.1f}" width="80" height="{bh:.1f}" '
                       f'fill="{color}"/>')
            if r[key] >= 0.06:
                out.append(f'<text x="{x + 40}" y="{y + bh / 2 + 4:.1f}" text-anchor="middle" '
                           f'fill="white">{100 * r[key]:.0f}%</text>')
        out.append(f'<text x="{x + 40}" y="{base + 16}" text-anchor="middle">{r["arm"]}</text>')
        x += 110
    for i, (_, color, label) in enumerate(colors):
        out.append(f'<rect x="{400 + i * 100}" y="{base + 28}" width="10" height="10" '
                   f'fill="{color}"/><text x="{414 + i * 100}" y="{base + 37}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mooncaked", default=os.path.join(REPO, "build", "bin", "mooncaked"))
    ap.add_argument("--pythonpath", default=os.path.join(REPO, "build", "python"))
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--requests", type=int, default=2000,
                    help="trace lines replayed (default 2000)")
    ap.add_argument("--clients", type=int, default=2, help="engine processes (default 2)")
    ap.add_argument("--page-size", type=int, default=65536, help="bytes per block (64 KiB)")
    ap.add_argument("--dram", type=int, default=0,
                    help="daemon DRAM in MiB; default: a third of the working set")
    ap.add_argument("--disk", type=int, default=0,
                    help="daemon LOCAL_DISK in MiB; default: the working set")
    ap.add_argument("--warmup", type=float, default=2.0,
                    help="seconds between daemon start and load (segment prefault)")
    ap.add_argument("--timeout", type=float, default=600.0, help="per arm, seconds")
    ap.add_argument("--daemon-flag", action="append", default=[],
                    help="extra mooncaked flag for both store arms (repeatable)")
    ap.add_argument("--log-dir", help="copy the daemons' logs here")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--plot", help="write an SVG bar chart here")
    ap.add_argument("--no-raw", action="store_true", help="skip the raw socket baseline")
    ap.add_argument("--only", choices=("promotion", "no-promotion"))
    args = ap.parse_args()
    args.mooncaked = os.path.abspath(args.mooncaked)
    args.pythonpath = os.path.abspath(args.pythonpath)
    if not os.access(args.mooncaked, os.X_OK):
        sys.exit(f"engine_load: no mooncaked at {args.mooncaked} (--mooncaked)")

    requests = load_trace(args.trace, args.requests)
    distinct = len({h for r in requests for h in r})
    ws_mib = -(-distinct * args.page_size // (1 << 20))
    # Working set ~3x DRAM so MEMORY, LOCAL_DISK and misses all show; disk holds all of it
    # (offloads of evicted pages land there, so misses come from capacity, not disk size).
    args.dram = args.dram or max(16, ws_mib // 3)
    args.disk = args.disk or max(64, ws_mib)
    shards = [requests[i::args.clients] for i in range(args.clients)]
    arms = ["promotion", "no-promotion"] if args.only is None else [args.only]

    rows = []
    workdir = tempfile.mkdtemp(prefix="engine-load-")
    try:
        if not args.no_raw:
            print("engine_load: arm raw ...", file=sys.stderr, flush=True)
            rows.append(run_raw(args, shards))
        for arm in arms:
            print(f"engine_load: arm {arm} ...", file=sys.stderr, flush=True)
            rows.append(run_store(args, shards, arm, workdir))
    finally:
        if args.log_dir:  # the daemons' logs outlive the run's scratch directory
            os.makedirs(args.log_dir, exist_ok=True)
            for name in os.listdir(workdir):
                if name.endswith(".log"):
                    shutil.copy(os.path.join(workdir, name), args.log_dir)
        shutil.rmtree(workdir, ignore_errors=True)
    raw = next((r for r in rows if r["arm"] == "raw"), None)
    for r in rows:
        r["raw_ratio"] = (r["bytes_per_s"] / raw["bytes_per_s"]) if raw else None

    setup = dict(trace=os.path.abspath(args.trace), requests=len(requests),
                 clients=args.clients, page_size=args.page_size, distinct_blocks=distinct,
                 working_set_mib=ws_mib, dram_mib=args.dram, disk_mib=args.disk,
                 block_refs=sum(len(r) for r in requests))
    print(f"trace {os.path.basename(args.trace)}: {setup['requests']} requests, "
          f"{setup['block_refs']} block refs, {distinct} distinct = {ws_mib} MiB at "
          f"{args.page_size} B pages; daemon DRAM {args.dram} MiB, disk {args.disk} MiB; "
          f"{args.clients} clients")
    print(table(rows))
    print(f"miss floor (each distinct block's first request): {distinct / setup['block_refs']:.3f}"
          " of the blocks looked up")
    for r in rows:
        if r["arm"] != "raw" and (r["put_failures_by_code"] or r["get_failures_by_code"]):
            print(f"{r['arm']}: put failures by code {r['put_failures_by_code']}, "
                  f"get failures by code {r['get_failures_by_code']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(setup=setup, arms=rows), f, indent=2)
            f.write("\n")
    if args.plot:
        with open(args.plot, "w") as f:
            f.write(svg(rows, f"engine load: {len(requests)} requests, {args.clients} clients, "
                              f"{args.page_size // 1024} KiB pages"))
    if any(r.get("wrong_bytes") for r in rows):
        sys.exit("engine_load: wrong bytes read back")


if __name__ == "__main__":
    main()
