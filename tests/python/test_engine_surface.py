"""The call surface SGLang HiCache, vLLM's Mooncake store connector and LMCache use beyond
put/get (issue 33, and issue 35's Python part): caller memory checked on every path that
takes an address, multi-buffer objects, put_parts, upsert, batch_remove, ReplicateConfig's
fields (the master's HTTP probes: test_master_http.py). Against real mooncaked masters (conftest.py)."""
import ctypes
import os
import random
import subprocess
import sys
import time

from conftest import Master, make_store
from mooncake_tier.store import ReplicateConfig

NO_AVAILABLE_HANDLE = -200
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
OBJECT_HAS_LEASE = -706
LEASE_WAIT = 0.3  # the fixture master's default_kv_lease_ttl is 200 ms
SENTINEL = 0xA5


class Pool:
    """A ctypes buffer of `total` bytes whose first `registered` bytes are registered with the
    store; the rest is filled with SENTINEL so a write past the region shows."""

    def __init__(self, store, total, registered=None):
        self.buf = (ctypes.c_ubyte * total)()
        self.ptr = ctypes.addressof(self.buf)
        self.total = total
        self.registered = total if registered is None else registered
        ctypes.memset(self.ptr, SENTINEL, total)
        self.store = store
        assert store.register_buffer(self.ptr, self.registered) == 0

    def write(self, offset, data):
        ctypes.memmove(self.ptr + offset, data, len(data))

    def read(self, offset, n):
        return ctypes.string_at(self.ptr + offset, n)

    def tail_untouched(self):
        tail = self.read(self.registered, self.total - self.registered)
        return tail == bytes([SENTINEL]) * len(tail)

    def close(self):
        assert self.store.unregister_buffer(self.ptr) == 0


def rand_bytes(n, seed):
    return random.Random(seed).randbytes(n)


# ---- 1. caller memory is checked ----

def test_get_into_past_the_registered_region_is_refused_before_a_byte(store):
    value = rand_bytes(200 * 1024, 1)
    assert store.put("big200k", value) == 0
    pool = Pool(store, 2 << 20, registered=64 * 1024)
    try:
        ctypes.memset(pool.ptr, SENTINEL, pool.total)
        # The case: 64 KiB registered, a 1 MiB size, a 200 KiB value.
        assert store.get_into("big200k", pool.ptr, 1 << 20) == INVALID_PARAMS
        assert pool.read(0, pool.total) == bytes([SENTINEL]) * pool.total
        # Starting inside the region, ending one byte past it.
        assert store.get_into("big200k", pool.ptr + 1, 64 * 1024) == INVALID_PARAMS
        assert pool.tail_untouched()
        # Inside the region the value is too big: the store's own -600, nothing written.
        assert store.get_into("big200k", pool.ptr, 64 * 1024) == INVALID_PARAMS
        assert pool.read(0, pool.total) == bytes([SENTINEL]) * pool.total
        # A size that ends exactly at the region's end is fine.
        small = rand_bytes(64 * 1024, 2)
        assert store.put("exact64k", small) == 0
        assert store.get_into("exact64k", pool.ptr, 64 * 1024) == 64 * 1024
        assert pool.read(0, 64 * 1024) == small and pool.tail_untouched()
    finally:
        pool.close()


def test_every_address_path_checks_the_region(store):
    pool = Pool(store, 256 * 1024, registered=64 * 1024)
    try:
        data = rand_bytes(1000, 3)
        pool.write(0, data)
        past = 64 * 1024 + 1
        # put_from / batch_put_from read caller memory: past the region is refused, no key made.
        assert store.put_from("pf-past", pool.ptr, past) == INVALID_PARAMS
        assert store.is_exist("pf-past") == 0
        assert store.batch_put_from(["bpf-ok", "bpf-past"], [pool.ptr, pool.ptr],
                                    [1000, past]) == [0, INVALID_PARAMS]
        assert store.is_exist("bpf-past") == 0 and store.get("bpf-ok") == data
        # upsert_from / batch_upsert_from likewise.
        assert store.upsert_from("uf-past", pool.ptr, past) == INVALID_PARAMS
        assert store.batch_upsert_from(["buf-past"], [pool.ptr + 10], [64 * 1024]) == \
            [INVALID_PARAMS]
        assert store.is_exist("uf-past") == 0 and store.is_exist("buf-past") == 0
        # batch_get_into: the out-of-region key alone fails, the other lands.
        ctypes.memset(pool.ptr, 0, 64 * 1024)
        res = store.batch_get_into(["bpf-ok", "bpf-ok"], [pool.ptr, pool.ptr + 60 * 1024],
                                   [1000, 8 * 1024])
        assert res == [1000, INVALID_PARAMS]
        assert pool.read(0, 1000) == data and pool.tail_untouched()
        # get_into_ranges: a destination range past the region.
        r = store.get_into_ranges([pool.ptr], [["bpf-ok"]], [[[64 * 1024 - 10]]], [[[0]]],
                                  [[[100]]])
        assert r[0][0][0] == INVALID_PARAMS and pool.tail_untouched()
        # multi-buffer forms: one piece past the region fails its key.
        assert store.batch_put_from_multi_buffers(
            ["mb-past"], [[pool.ptr, pool.ptr + 64 * 1024 - 8]], [[8, 16]]) == [INVALID_PARAMS]
        assert store.is_exist("mb-past") == 0
        assert store.batch_get_into_multi_buffers(
            ["bpf-ok"], [[pool.ptr, pool.ptr + 64 * 1024 - 8]], [[992, 16]]) == [INVALID_PARAMS]
        assert pool.tail_untouched()
        # A null pointer.
        assert store.get_into("bpf-ok", 0, 1000) == INVALID_PARAMS
        assert store.put_from("null", 0, 10) == INVALID_PARAMS
    finally:
        pool.close()


def test_range_running_into_a_registered_buffer_from_outside(store):
    # One allocation: its second half registered, a get_into starting in the first half
    # (unregistered) and running into the registered half is refused.
    buf = (ctypes.c_ubyte * 8192)()
    base = ctypes.addressof(buf)
    assert store.register_buffer(base + 4096, 4096) == 0
    try:
        assert store.put("into-reg", b"x" * 3000) == 0
        assert store.get_into("into-reg", base + 2048, 4096) == INVALID_PARAMS
        assert bytes(buf[2048:4096]) == b"\0" * 2048
        # Wholly before the registered half: unregistered memory is the caller's word.
        assert store.get_into("into-reg", base, 4096) == 3000
        assert bytes(buf[:3000]) == b"x" * 3000
    finally:
        assert store.unregister_buffer(base + 4096) == 0


def test_nested_and_adjacent_registrations_count_as_one_region(store):
    buf = (ctypes.c_ubyte * (128 * 1024))()
    base = ctypes.addressof(buf)
    value = rand_bytes(8192, 5)
    assert store.put("nest", value) == 0
    # Two buffers registered end to end, and one nested inside the first.
    assert store.register_buffer(base, 32 * 1024) == 0
    assert store.register_buffer(base + 32 * 1024, 32 * 1024) == 0
    assert store.register_buffer(base + 16 * 1024, 4096) == 0
    try:
        # Across the seam of the adjacent pair, and out of the nested one into its parent.
        assert store.get_into("nest", base + 30 * 1024, 8192) == 8192
        assert ctypes.string_at(base + 30 * 1024, 8192) == value
        assert store.get_into("nest", base + 18 * 1024, 8192) == 8192
        # Past the end of the pair: refused, nothing written beyond it.
        assert store.get_into("nest", base + 60 * 1024, 8192) == INVALID_PARAMS
        assert bytes(buf[64 * 1024:]) == b"\0" * (64 * 1024)
    finally:
        for p in (base, base + 32 * 1024, base + 16 * 1024):
            assert store.unregister_buffer(p) == 0


# ---- 2. multi-buffer objects ----

def engine_pools(store, keys, pieces, piece):
    """A save pool and a fresh load pool, pieces scattered (a gap after each) as a paged KV
    pool's per-layer pages are."""
    stride = piece + 64
    save = Pool(store, keys * pieces * stride)
    load = Pool(store, keys * pieces * stride)
    ptrs = lambda p: [[p.ptr + (k * pieces + j) * stride for j in range(pieces)]
                      for k in range(keys)]
    return save, load, ptrs(save), ptrs(load)


def test_engine_shaped_multi_buffers_8_per_key_64_keys(store):
    n_keys, pieces, piece = 64, 8, 2048
    save, load, save_ptrs, load_ptrs = engine_pools(store, n_keys, pieces, piece)
    try:
        keys = [f"vllm-block-{i}" for i in range(n_keys)]
        values = {}
        for k, key in enumerate(keys):
            parts = [rand_bytes(piece, k * 100 + j) for j in range(pieces)]
            for j, part in enumerate(parts):
                ctypes.memmove(save_ptrs[k][j], part, piece)
            values[key] = b"".join(parts)
        sizes = [[piece] * pieces for _ in keys]
        cfg = ReplicateConfig()
        assert store.batch_put_from_multi_buffers(keys, save_ptrs, sizes, cfg) == [0] * n_keys
        # The object is the concatenation of its pieces.
        assert store.get(keys[5]) == values[keys[5]]
        assert store.get_size(keys[0]) == pieces * piece
        got = store.batch_get_into_multi_buffers(keys, load_ptrs, sizes)
        assert got == [pieces * piece] * n_keys
        for k, key in enumerate(keys):
            back = b"".join(ctypes.string_at(p, piece) for p in load_ptrs[k])
            assert back == values[key], key
        # The gaps between pieces were not written.
        gap = ctypes.string_at(load_ptrs[0][0] + piece, 64)
        assert gap == bytes([SENTINEL]) * 64
    finally:
        save.close()
        load.close()


def test_multi_buffers_contiguous_pieces_and_errors(store):
    pool = Pool(store, 64 * 1024)
    try:
        data = rand_bytes(12 * 1024, 7)
        pool.write(0, data)
        adj = [pool.ptr, pool.ptr + 4096, pool.ptr + 8192]  # end to end: one span
        assert store.batch_put_from_multi_buffers(["mc-adj"], [adj], [[4096] * 3]) == [0]
        assert store.get("mc-adj") == data
        # Read back into pieces of uneven sizes, elsewhere in the pool.
        dst = [pool.ptr + 20000, pool.ptr + 30000, pool.ptr + 40000]
        assert store.batch_get_into_multi_buffers(["mc-adj"], [dst], [[100, 5000, 8000]]) == \
            [len(data)]
        assert (pool.read(20000, 100) + pool.read(30000, 5000) + pool.read(40000, 7188)) == data
        # Too small in total: -600, nothing written.
        ctypes.memset(pool.ptr + 20000, 0, 100)
        assert store.batch_get_into_multi_buffers(["mc-adj"], [[pool.ptr + 20000]], [[100]]) == \
            [INVALID_PARAMS]
        assert pool.read(20000, 100) == b"\0" * 100
        # Missing key; a key whose lists differ; outer lists that differ.
        assert store.batch_get_into_multi_buffers(["nope"], [[pool.ptr]], [[10]]) == \
            [OBJECT_NOT_FOUND]
        assert store.batch_put_from_multi_buffers(["a1", "a2"], [[pool.ptr], [pool.ptr]],
                                                  [[10], [10, 20]]) == [0, INVALID_PARAMS]
        assert store.batch_put_from_multi_buffers(["a3", "a4"], [[pool.ptr]], [[10]]) == \
            [INVALID_PARAMS, INVALID_PARAMS]
        assert store.batch_get_into_multi_buffers(["a1"], [[]], [[]]) == [INVALID_PARAMS]
        assert store.batch_put_from_multi_buffers([], [], []) == []
        # An existing key: 0, the stored value kept (as put_from).
        pool.write(0, b"Z" * 10)
        assert store.batch_put_from_multi_buffers(["a1"], [[pool.ptr]], [[10]]) == [0]
        assert store.get("a1") == data[:10]
        # The upsert form replaces it (once the get's lease has ended).
        time.sleep(LEASE_WAIT)
        assert store.batch_upsert_from_multi_buffers(["a1"], [[pool.ptr]], [[10]]) == [0]
        assert store.get("a1") == b"Z" * 10
    finally:
        pool.close()


def test_multi_buffers_no_space_is_200(tmp_path):
    # DRAM full of objects that readers hold leases on (5 s here) that keep them from eviction
    # (lease_blocks_eviction, Mooncake's rule): a multi-buffer put that needs room is -200, and
    # one that fits in what is left is 0.
    m = Master(tmp_path, "--default_kv_lease_ttl", "5000", "--lease_blocks_eviction=true")
    s = make_store(m.address, segment="1MB")
    pool = Pool(s, 1 << 20)
    try:
        quarter = 256 * 1024
        fill = [f"fill-{i}" for i in range(4)]
        assert s.put_batch(fill[:3], [b"f" * (quarter - 4096)] * 3) == 0
        assert [len(v) for v in s.get_batch(fill[:3])] == [quarter - 4096] * 3  # leased now
        res = s.batch_put_from_multi_buffers(
            ["fits", "no-room"], [[pool.ptr], [pool.ptr, pool.ptr + quarter + 4096]],
            [[4096], [quarter, quarter]])
        assert res == [0, NO_AVAILABLE_HANDLE]
        assert s.is_exist("fits") == 1 and s.is_exist("no-room") == 0
        # A value larger than every segment is no room too (-200, as Mooncake answers any
        # failure to place), refused before any room is looked for.
        assert s.batch_put_from_multi_buffers(["huge"], [[pool.ptr, pool.ptr]],
                                              [[1 << 20, 4096]]) == [NO_AVAILABLE_HANDLE]
    finally:
        pool.close()
        s.close()
        m.stop()


# ---- 3. put_parts, upsert, batch_remove, remove_all, get_buffer ----

def test_put_parts_lmcache_shape(store):
    meta = b"\x01\x02meta-header"
    kv = memoryview(bytearray(rand_bytes(100_000, 11)))
    assert store.put_parts("lm-chunk", meta, kv) == 0
    assert store.get("lm-chunk") == meta + bytes(kv)
    handle = store.get_buffer("lm-chunk")
    assert handle is not None and handle.size() == len(meta) + len(kv)
    assert bytes(memoryview(handle)) == meta + bytes(kv)
    assert store.put_parts("lm-one", b"single", config=ReplicateConfig()) == 0
    assert store.get("lm-one") == b"single"
    assert store.put_parts("lm-none") == INVALID_PARAMS
    assert store.put_parts("lm-bad", b"x", 12) == INVALID_PARAMS
    assert store.get_buffer("lm-missing") is None


def test_upsert_forms(store):
    assert store.put("up", b"old value") == 0
    assert store.upsert("up", b"new") == 0
    assert store.get("up") == b"new"
    # A reader's lease refuses the replacement, as remove is refused; later it goes through.
    assert store.upsert("up", b"newer") == OBJECT_HAS_LEASE
    assert store.get("up") == b"new"
    time.sleep(LEASE_WAIT)
    assert store.upsert("up", b"newer") == 0
    time.sleep(LEASE_WAIT)
    assert store.upsert("up-fresh", b"v") == 0
    buf = (ctypes.c_ubyte * 64)()
    ptr = ctypes.addressof(buf)
    assert store.register_buffer(ptr, 64) == 0
    try:
        ctypes.memmove(ptr, b"from-buffer", 11)
        assert store.upsert_from("up", ptr, 11) == 0
        assert store.batch_upsert_from(["up-b1", "up-fresh"], [ptr, ptr + 5], [5, 6]) == [0, 0]
        time.sleep(LEASE_WAIT)
        assert [store.get(k) for k in ("up", "up-b1", "up-fresh")] == \
            [b"from-buffer", b"from-", b"buffer"]
        time.sleep(LEASE_WAIT)
        assert store.upsert_batch(["up-b1", "up-b2"], [b"one", b"two"]) == 0
        assert store.get("up-b1") == b"one" and store.get("up-b2") == b"two"
    finally:
        assert store.unregister_buffer(ptr) == 0


def test_batch_remove_and_remove_all(master):
    s = make_store(master.address)
    try:
        assert s.put_batch(["br1", "br2", "br3"], [b"1", b"2", b"3"]) == 0
        assert s.batch_remove(["br1", "nope"]) == [0, OBJECT_NOT_FOUND]
        assert s.get("br2") == b"2"
        assert s.batch_remove(["br2"]) == [OBJECT_HAS_LEASE]
        assert s.batch_remove(["br2"], force=True) == [0]
        assert s.batch_remove([]) == []
        assert s.is_exist("br1") == 0 and s.is_exist("br2") == 0
        assert s.remove_all(True) >= 1
        assert s.is_exist("br3") == 0
    finally:
        s.close()


# ---- 5. ReplicateConfig ----

def test_replicate_config_has_mooncakes_fields(store):
    c = ReplicateConfig()
    assert c.replica_num == 1 and not c.with_soft_pin and not c.with_hard_pin
    assert c.preferred_segment == "" and c.preferred_segments == [] and c.group_ids == []
    c.replica_num = 2
    c.with_soft_pin = True
    c.soft_pin_ttl_ms = 5000
    c.with_hard_pin = True
    c.preferred_segment = store.get_hostname()
    c.preferred_segments = [store.get_hostname(), "other:1"]
    c.prefer_alloc_in_same_node = True
    c.group_ids = ["g1"]
    c.tenant_id = "default"  # the store's own tenant (another is refused: test_engine_calls)
    assert store.put("rc-key", b"value", c) == 0
    assert store.get("rc-key") == b"value"
    assert store.batch_put_from_multi_buffers([], [], [], c) == []
    c.tenant_id = "t1"
    assert store.put("rc-key-t1", b"value", c) == -600
    assert store.get("rc-key-t1") == b""


def test_preferred_segment_places_the_object(tmp_path):
    m = Master(tmp_path)
    a = make_store(m.address)
    b = make_store(m.address)
    try:
        def holder(key):
            descs = a.get_replica_desc(key)
            assert len(descs) == 1
            return descs[0].node

        for target in (a, b):
            c = ReplicateConfig()
            c.preferred_segment = target.get_hostname()
            name = f"pref-{target.get_hostname()}"
            assert a.put(name, b"v" * 1000, c) == 0
            assert holder(name) == target.get_hostname()
            # The batch, zero-copy and multi-buffer paths take it too.
            c2 = ReplicateConfig()
            c2.preferred_segments = [target.get_hostname()]
            assert a.put_batch([name + "-b1", name + "-b2"], [b"x", b"y"], c2) == 0
            assert {holder(name + "-b1"), holder(name + "-b2")} == {target.get_hostname()}
            assert a.batch_upsert_from_multi_buffers([], [], [], c2) == []
        # prefer_alloc_in_same_node: the writer's own node.
        same = ReplicateConfig()
        same.prefer_alloc_in_same_node = True
        assert b.put_parts("pref-same", b"p1", b"p2", config=same) == 0
        assert holder("pref-same") == b.get_hostname()
        # A segment that is no live node is no preference: the write still succeeds.
        gone = ReplicateConfig()
        gone.preferred_segment = "127.0.0.1:1"
        assert a.put("pref-gone", b"v", gone) == 0 and a.get("pref-gone") == b"v"
    finally:
        a.close()
        b.close()
        m.stop()


TRANSFER_SCRIPT = r"""
import sys
from mooncake_tier.store import MooncakeDistributedStore
for form in ("args", "dict", "args"):
    s = MooncakeDistributedStore()
    if form == "args":  # vLLM / SGLang: RDMA settings, a transfer engine, a client HTTP port
        rc = s.setup("127.0.0.1", "P2PHANDSHAKE", 4 << 20, 16 << 20, "rdma", "mlx5_0",
                     sys.argv[1], None, enable_client_http_server=True, client_http_port=9300)
    else:  # LMCache's dict
        rc = s.setup({"local_hostname": "127.0.0.1", "global_segment_size": "4MB",
                      "master_server_addr": sys.argv[1], "protocol": "rdma",
                      "device_name": "mlx5_1"})
    assert rc == 0, rc
    assert s.put("te-" + form, b"v") == 0 and s.get("te-" + form) == b"v"
    s.close()
"""


def test_ignored_transfer_engine_settings_are_logged_once(master):
    """RDMA protocol and devices, a transfer engine or a client HTTP port mean nothing here:
    setup works, and says so once per process (docs/PYTHON.md, "Ignored arguments")."""
    out = subprocess.run([sys.executable, "-c", TRANSFER_SCRIPT, master.address],
                         env=dict(os.environ), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    line = "transfer-engine settings that mooncake-tier ignores"
    assert out.stderr.count(line) == 1, out.stderr
    assert "protocol 'rdma', rdma devices 'mlx5_0'" in out.stderr
    assert "enable_client_http_server, client_http_port" in out.stderr
