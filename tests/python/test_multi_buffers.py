"""Multi-buffer objects as vLLM stores them (issue 33): a key is 8 scattered buffers, 64 keys a
call, every byte checked; between two processes (each with an embedded node, so one side
copies to/from its own segment and the other goes over the data channel); uneven buffer sizes;
a buffer past registered memory (-600, nothing moved); and no staging copy of the values (the
process's peak RSS does not grow by the bytes moved). Against real mooncaked daemons
(conftest.py)."""
import ctypes
import os
import random
import re
import subprocess
import sys
import time

import mooncake_tier
from conftest import Standalone, make_store
from mooncake_tier.store import ReplicateConfig

INVALID_PARAMS = -600
SENTINEL = 0xA5
KEYS, PIECES = 64, 8
UNEVEN = [1, 4095, 4097, 65536, 3, 100000, 7, 12345]  # one key's 8 pieces


class Pool:
    """ctypes memory whose first `registered` bytes are registered; filled with SENTINEL."""

    def __init__(self, store, total, registered=None):
        self.buf = (ctypes.c_ubyte * total)()
        self.ptr = ctypes.addressof(self.buf)
        self.registered = total if registered is None else registered
        ctypes.memset(self.ptr, SENTINEL, total)
        self.store = store
        assert store.register_buffer(self.ptr, self.registered) == 0

    def close(self):
        assert self.store.unregister_buffer(self.ptr) == 0


def layout(pool, sizes_per_key, gap=64):
    """Each key's pieces one after another in `pool`, a gap after each (so no two are adjacent
    and none can be sent as one span)."""
    ptrs, at = [], pool.ptr
    for sizes in sizes_per_key:
        row = []
        for n in sizes:
            row.append(at)
            at += n + gap
        ptrs.append(row)
    assert at - pool.ptr <= pool.registered
    return ptrs


def span_needed(sizes_per_key, gap=64):
    return sum(n + gap for sizes in sizes_per_key for n in sizes)


def fill(ptrs, sizes_per_key, seed):
    """Random bytes into every piece; returns each key's value (its pieces concatenated)."""
    rng = random.Random(seed)
    values = []
    for row, sizes in zip(ptrs, sizes_per_key):
        parts = [rng.randbytes(n) for n in sizes]
        for p, part in zip(row, parts):
            ctypes.memmove(p, part, len(part))
        values.append(b"".join(parts))
    return values


def values_of(sizes_per_key, seed):
    """The values fill() writes for this seed."""
    rng = random.Random(seed)
    return [b"".join(rng.randbytes(n) for n in sizes) for sizes in sizes_per_key]


def gather(ptrs, sizes_per_key):
    return [b"".join(ctypes.string_at(p, n) for p, n in zip(row, sizes))
            for row, sizes in zip(ptrs, sizes_per_key)]


def peak_rss_kib():
    return int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1))


def settle_rss():
    """Waits until the RSS stops growing (an embedded segment is faulted in by a background
    thread after setup)."""
    last, still = -1, 0
    while still < 3:
        rss = int(re.search(r"VmRSS:\s+(\d+)", open("/proc/self/status").read()).group(1))
        still = still + 1 if rss <= last else 0
        last = max(last, rss)
        time.sleep(0.1)


def reset_peak_rss():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak RSS starts again from the current RSS


# ---- 1. one process: 8 uneven buffers a key, 64 keys a call ----

def test_uneven_pieces_64_keys_read_back_in_another_split(store):
    sizes = [UNEVEN[k % PIECES:] + UNEVEN[:k % PIECES] for k in range(KEYS)]  # rotated per key
    # The same values read back into a different split: the sizes reversed.
    back_sizes = [list(reversed(s)) for s in sizes]
    save = Pool(store, span_needed(sizes))
    load = Pool(store, span_needed(back_sizes))
    try:
        save_ptrs, load_ptrs = layout(save, sizes), layout(load, back_sizes)
        values = fill(save_ptrs, sizes, seed=33)
        keys = [f"uneven-{k}" for k in range(KEYS)]
        assert store.batch_put_from_multi_buffers(keys, save_ptrs, sizes) == [0] * KEYS
        assert store.get(keys[3]) == values[3]
        got = store.batch_get_into_multi_buffers(keys, load_ptrs, back_sizes)
        assert got == [len(v) for v in values]
        assert gather(load_ptrs, back_sizes) == values
        # Buffers larger in total than the value: the value fills them in order, the rest is
        # left as it was, the answer is the value's size.
        ctypes.memset(load.ptr, SENTINEL, load.registered)
        total = sum(UNEVEN)
        roomy_sizes = [[total - 10, 1000], [total - 10, 1000]]
        assert span_needed(roomy_sizes) <= load.registered
        roomy = layout(load, roomy_sizes)
        assert store.batch_get_into_multi_buffers(keys[:2], roomy, roomy_sizes) == [total] * 2
        for k in range(2):
            assert ctypes.string_at(roomy[k][0], total - 10) == values[k][:total - 10]
            assert ctypes.string_at(roomy[k][1], 10) == values[k][total - 10:]
            assert ctypes.string_at(roomy[k][1] + 10, 990) == bytes([SENTINEL]) * 990
    finally:
        save.close()
        load.close()


# ---- 2. caller memory checked before any byte moves ----

def test_a_buffer_past_registered_memory_is_600_and_nothing_moves(store):
    piece = 4096
    pool = Pool(store, 64 * piece + 8192, registered=64 * piece)
    try:
        good = [[pool.ptr + j * piece for j in range(PIECES)]]
        # The last piece starts inside the region and runs 1 byte past its end.
        bad = [[pool.ptr + (8 + j) * piece for j in range(PIECES - 1)] +
               [pool.ptr + 64 * piece - piece + 1]]
        sizes = [[piece] * PIECES] * 2
        fill(good + bad, sizes, seed=5)
        assert store.batch_put_from_multi_buffers(["past-ok", "past-bad"], good + bad, sizes) == \
            [0, INVALID_PARAMS]
        assert store.is_exist("past-ok") == 1
        assert store.is_exist("past-bad") == 0  # refused before anything was stored
        # A get whose last piece runs past: -600, and none of its pieces is written (the
        # pieces before the bad one included), while the other key of the call is read.
        dst_good = [[pool.ptr + (16 + j) * piece for j in range(PIECES)]]
        dst_bad = [[pool.ptr + (24 + j) * piece for j in range(PIECES - 1)] +
                   [pool.ptr + 64 * piece - 100]]
        ctypes.memset(pool.ptr + 16 * piece, SENTINEL, 16 * piece)
        ctypes.memset(pool.ptr + 64 * piece - 100, SENTINEL, 100 + 8192)
        got = store.batch_get_into_multi_buffers(["past-ok", "past-ok"], dst_good + dst_bad,
                                                 sizes)
        assert got == [PIECES * piece, INVALID_PARAMS]
        assert gather(dst_good, [[piece] * PIECES]) == gather(good, [[piece] * PIECES])
        assert ctypes.string_at(pool.ptr + 24 * piece, 7 * piece) == \
            bytes([SENTINEL]) * (7 * piece)
        assert ctypes.string_at(pool.ptr + 64 * piece - 100, 100 + 8192) == \
            bytes([SENTINEL]) * (100 + 8192)
    finally:
        pool.close()


# ---- 3. two processes: one puts, the other gets, both ways ----

CHILD = r"""
import ctypes, random, sys
sys.path[:0] = [sys.argv[2], sys.argv[3]]
from test_multi_buffers import Pool, layout, fill, gather, span_needed, values_of, UNEVEN, KEYS
from conftest import make_store
from mooncake_tier.store import ReplicateConfig
store = make_store(sys.argv[1], segment="32MB")
sizes = [UNEVEN] * KEYS
save, load = Pool(store, span_needed(sizes)), Pool(store, span_needed(sizes))
ptrs = layout(save, sizes)
values = fill(ptrs, sizes, seed=1)
cfg = ReplicateConfig()
cfg.preferred_segment = store.get_hostname()  # into this process's own segment: a memcpy
keys = [f"child-{k}" for k in range(KEYS)]
print("put", store.batch_put_from_multi_buffers(keys, ptrs, sizes, cfg) == [0] * KEYS,
      store.get_hostname(), flush=True)
sys.stdin.readline()  # the parent has put its keys into this process's segment
keys = [f"parent-{k}" for k in range(KEYS)]
back = layout(load, sizes)
got = store.batch_get_into_multi_buffers(keys, back, sizes)
print("get", got == [sum(UNEVEN)] * KEYS, gather(back, sizes) == values_of(sizes, seed=2),
      flush=True)
sys.stdin.readline()
store.close()
"""


def test_two_processes_put_in_one_get_in_the_other(tmp_path):
    daemon = Standalone(tmp_path, dram="16MiB")
    here = os.path.dirname(os.path.abspath(__file__))
    module_dir = os.path.dirname(os.path.dirname(os.path.abspath(mooncake_tier.__file__)))
    child = subprocess.Popen([sys.executable, "-c", CHILD, daemon.address, here, module_dir],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ), cwd=here)
    store = make_store(daemon.address, segment="16MB")
    sizes = [UNEVEN] * KEYS
    pool = Pool(store, span_needed(sizes))
    try:
        word, ok, child_name = child.stdout.readline().split()
        assert (word, ok) == ("put", "True")
        # The child's keys sit in its segment: read over the data channel, scattered here.
        ctypes.memset(pool.ptr, 0, pool.registered)
        ptrs = layout(pool, sizes)
        keys = [f"child-{k}" for k in range(KEYS)]
        assert store.batch_get_into_multi_buffers(keys, ptrs, sizes) == [sum(UNEVEN)] * KEYS
        assert gather(ptrs, sizes) == values_of(sizes, seed=1)
        # This process's pieces into the child's segment over the data channel; the child
        # reads them out of its own segment.
        values = fill(ptrs, sizes, seed=2)
        cfg = ReplicateConfig()
        cfg.preferred_segment = child_name
        keys = [f"parent-{k}" for k in range(KEYS)]
        assert store.batch_put_from_multi_buffers(keys, ptrs, sizes, cfg) == [0] * KEYS
        assert all(d.node == child_name
                   for d in store.get_replica_desc(keys[0]) if d.is_memory_replica())
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().split() == ["get", "True", "True"]
        assert values == values_of(sizes, seed=2)
    finally:
        pool.close()
        store.close()
        try:
            child.stdin.write("end\n")
            child.stdin.flush()
        except BrokenPipeError:
            pass
        child.wait(timeout=30)
        daemon.stop()


# ---- 4. no staging copy ----

def _moves_without_a_copy(store, cfg):
    """Puts and gets 32 MiB in scattered pieces twice (the first round warms pages and
    connections up); the second may raise the peak RSS by far less than the bytes moved."""
    piece = 64 * 1024
    sizes = [[piece] * PIECES] * KEYS
    total = KEYS * PIECES * piece
    save, load = Pool(store, span_needed(sizes)), Pool(store, span_needed(sizes))
    try:
        save_ptrs, load_ptrs = layout(save, sizes), layout(load, sizes)
        values = fill(save_ptrs, sizes, seed=9)
        for round_ in range(2):
            keys = [f"nocopy-{round_}-{k}" for k in range(KEYS)]
            settle_rss()
            reset_peak_rss()
            before = peak_rss_kib()
            assert store.batch_put_from_multi_buffers(keys, save_ptrs, sizes, cfg) == [0] * KEYS
            assert store.batch_get_into_multi_buffers(keys, load_ptrs, sizes) == \
                [PIECES * piece] * KEYS
            grown = (peak_rss_kib() - before) * 1024
            assert gather(load_ptrs, sizes) == values
            assert store.batch_remove(keys, True) == [0] * KEYS
        # A staging copy of the call's values would add `total` bytes at once.
        assert grown < total // 4, f"peak RSS grew {grown >> 20} MiB moving {total >> 20} MiB"
    finally:
        save.close()
        load.close()


def test_no_staging_copy_over_the_data_channel(tmp_path):
    daemon = Standalone(tmp_path, dram="96MiB")
    store = make_store(daemon.address, segment=0)  # no segment: every byte goes over TCP
    try:
        _moves_without_a_copy(store, ReplicateConfig())
    finally:
        store.close()
        daemon.stop()


def test_no_staging_copy_into_the_local_segment(tmp_path):
    daemon = Standalone(tmp_path, dram="16MiB")
    store = make_store(daemon.address, segment="96MB")
    try:
        cfg = ReplicateConfig()
        cfg.preferred_segment = store.get_hostname()
        _moves_without_a_copy(store, cfg)
    finally:
        store.close()
        daemon.stop()
