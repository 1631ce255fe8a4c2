"""MooncakeDistributedStore's contract, method by method, against a real master and the
store's embedded node: Mooncake's return conventions and ErrorCode numbers."""
import ctypes
import re
import threading
import time

import pytest

from conftest import make_store, wait_for
from mooncake_tier.store import (ExistOptions, MooncakeDistributedStore, ReplicaStatus,
                                 ReplicateConfig)

OBJECT_NOT_FOUND = -704
OBJECT_HAS_LEASE = -706
INVALID_PARAMS = -600
LEASE_WAIT = 0.3  # the fixture master's default_kv_lease_ttl is 200 ms


def buffer_of(size):
    buf = (ctypes.c_ubyte * size)()
    return buf, ctypes.addressof(buf)


def test_setup_positional_form_and_hostname(master):
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "P2PHANDSHAKE", 16 * 1024 * 1024, 16 * 1024 * 1024, "tcp",
                   "mlx5_0", master.address) == 0
    host = s.get_hostname()
    assert re.fullmatch(r"localhost:\d+", host)
    assert 12300 <= int(host.split(":")[1]) <= 14300
    assert s.health_check() == 0
    assert s.close() == 0
    assert s.health_check() != 0


def test_setup_human_readable_sizes(master):
    s = make_store(master.address, segment="16 MB", local_buffer="1.5MB")
    try:
        assert s.put("hr", b"x" * 1024) == 0
        assert s.get("hr") == b"x" * 1024
        # 1.5 MB of local buffer: a staged put of 2 MB does not fit.
        assert s.put("hr-big", b"x" * (2 << 20)) < 0
    finally:
        s.close()


@pytest.mark.parametrize("bad", ["50%", "MB", "12XB", "-3"])
def test_setup_bad_size_is_nonzero(master, bad):
    s = MooncakeDistributedStore()
    config = {"local_hostname": "127.0.0.1", "global_segment_size": bad,
              "local_buffer_size": "16MB", "master_server_addr": master.address}
    assert s.setup(config) != 0
    assert s.health_check() != 0  # nothing was set up
    s.close()


def test_setup_unreachable_master_is_negative(tmp_path):
    from conftest import free_port
    s = MooncakeDistributedStore()
    assert s.setup({"local_hostname": "127.0.0.1", "global_segment_size": 0,
                    "master_server_addr": f"127.0.0.1:{free_port()}"}) < 0


def test_put_get_size_exist_remove(store):
    assert store.put("k", b"hello") == 0
    assert store.get("k") == b"hello"
    assert store.get_size("k") == 5
    assert store.is_exist("k") == 1
    # Put of an existing key succeeds and keeps the stored value (Mooncake's callers rely on it).
    assert store.put("k", b"other") == 0
    assert store.get("k") == b"hello"
    # A read holds a lease: remove is refused until it ends, unless forced.
    assert store.remove("k") == OBJECT_HAS_LEASE
    time.sleep(LEASE_WAIT)
    assert store.remove("k") == 0
    assert store.get("k") == b""
    assert store.get_size("k") == OBJECT_NOT_FOUND
    assert store.is_exist("k") == 0
    assert store.remove("k") == OBJECT_NOT_FOUND
    assert store.put("forced", b"v") == 0 and store.get("forced") == b"v"
    assert store.remove("forced", force=True) == 0


def test_put_takes_any_contiguous_buffer(store):
    assert store.put("mv", memoryview(b"abcdef")[1:4]) == 0
    assert store.get("mv") == b"bcd"
    assert store.put("ba", bytearray(b"xyz")) == 0 and store.get("ba") == b"xyz"
    # A strided view is not the bytes in memory order: refused rather than stored wrong.
    assert store.put("strided", memoryview(b"abcdef")[::2]) == INVALID_PARAMS
    assert store.put_batch(["s1"], [memoryview(b"abcdef")[::2]]) == INVALID_PARAMS


def test_invalid_key_is_invalid_params(store):
    assert store.put("", b"v") == INVALID_PARAMS
    assert store.is_exist("a\0b") == INVALID_PARAMS


def test_zero_local_buffer_refuses_staged_puts_only(master):
    s = make_store(master.address, local_buffer=0)
    try:
        assert s.put("zlb", b"value") < 0
        assert s.is_exist("zlb") == 0
        buf, ptr = buffer_of(64)
        ctypes.memmove(buf, b"zero-copy", 9)
        assert s.register_buffer(ptr, 64) == 0
        assert s.put_from("zlb", ptr, 9) == 0
        assert s.get("zlb") == b"zero-copy"
        assert s.unregister_buffer(ptr) == 0
    finally:
        s.close()


def test_zero_copy_put_from_get_into(store):
    data = b"zero copy! " * 1000
    buf, ptr = buffer_of(len(data) + 100)
    assert store.register_buffer(ptr, len(data) + 100) == 0
    ctypes.memmove(buf, data, len(data))
    assert store.put_from("zc", ptr, len(data)) == 0
    ctypes.memset(buf, 0, len(data) + 100)
    assert store.get_into("zc", ptr, len(data) + 100) == len(data)
    assert bytes(buf[:len(data)]) == data
    small, small_ptr = buffer_of(10)
    assert store.get_into("zc", small_ptr, 10) < 0
    assert store.get_into("missing", ptr, 100) == OBJECT_NOT_FOUND
    assert store.unregister_buffer(ptr) == 0
    assert store.unregister_buffer(ptr) < 0


def test_batch_put_from_and_batch_get_into(store):
    values = [b"a" * 100, b"b" * 2000, b"c" * 3000]
    keys = [f"bz{i}" for i in range(3)]
    spacing = 4096
    buf, base = buffer_of(spacing * 3)
    assert store.register_buffer(base, spacing * 3) == 0
    ptrs = [base + i * spacing for i in range(3)]
    for p, v in zip(ptrs, values):
        ctypes.memmove(ctypes.c_void_p(p), v, len(v))
    assert store.batch_put_from(keys, ptrs, [len(v) for v in values]) == [0, 0, 0]
    assert [store.get(k) for k in keys] == values
    # Mismatched list lengths: one error per key.
    assert all(r < 0 for r in store.batch_put_from(keys[:2], ptrs, [1, 2, 3]))
    assert store.batch_put_from([], [], []) == []
    ctypes.memset(buf, 0, spacing * 3)
    assert store.batch_get_into(keys, ptrs, [spacing] * 3) == [len(v) for v in values]
    for p, v in zip(ptrs, values):
        assert ctypes.string_at(p, len(v)) == v
    bad = store.batch_get_into(keys[:2], ptrs, [spacing] * 3)
    assert len(bad) == 2 and all(r < 0 for r in bad)
    assert store.batch_get_into(["bz0", "none"], ptrs[:2], [spacing] * 2)[1] == OBJECT_NOT_FOUND
    # A buffer too small for its value fails that key alone, with get_into's error; the bytes
    # of the others land.
    ctypes.memset(buf, 0, spacing * 3)
    mixed = store.batch_get_into(keys, ptrs, [spacing, 10, spacing])
    assert mixed[1] == store.get_into(keys[1], ptrs[1], 10) and mixed[1] < 0
    assert mixed[0] == len(values[0]) and mixed[2] == len(values[2])
    assert ctypes.string_at(ptrs[2], len(values[2])) == values[2]
    assert store.batch_get_into([], [], []) == []
    assert store.unregister_buffer(base) == 0


def test_get_into_ranges(store):
    d1 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    d2 = b"abcdefghijklmnopqrstuvwxyz0123456789"
    assert store.put("gr1", d1) == 0 and store.put("gr2", d2) == 0
    b0, p0 = buffer_of(32)
    b1, p1 = buffer_of(32)
    assert store.register_buffer(p0, 32) == 0 and store.register_buffer(p1, 32) == 0
    res = store.get_into_ranges([p0, p1], [["gr1", "gr2"], ["gr2", "gr1"]],
                                [[[0, 20], [8]], [[4], [16]]],
                                [[[1, 30], [2]], [[0], [10]]],
                                [[[4, 3], [5]], [[6], [4]]])
    assert res == [[[4, 3], [5]], [[6], [4]]]
    assert bytes(b0[0:4]) == d1[1:5] and bytes(b0[8:13]) == d2[2:7]
    assert bytes(b0[20:23]) == d1[30:33]
    assert bytes(b1[4:10]) == d2[0:6] and bytes(b1[16:20]) == d1[10:14]
    mismatch = store.get_into_ranges([p0], [["gr1", "gr2"]], [[[0], []]], [[[0, 1], []]],
                                     [[[4, 4], []]])
    assert mismatch[0][0][0] < 0 and mismatch[0][1] == []
    assert store.get_into_ranges([p0], [["gr1"]], [[[0]]], [[[len(d1) - 1]]], [[[4]]])[0][0][0] < 0
    # Past the end of p0's region: p1 may lie right after it, and buffers registered end to
    # end count as one region (docs/PYTHON.md), so p1 goes first.
    assert store.unregister_buffer(p1) == 0
    assert store.get_into_ranges([p0], [["gr1"]], [[[31]]], [[[0]]], [[[4]]])[0][0][0] < 0
    missing = store.get_into_ranges([p0], [["nope", "gr1"]], [[[0], [8]]], [[[0], [0]]],
                                    [[[4], [4]]])
    assert missing[0][0][0] == OBJECT_NOT_FOUND and missing[0][1] == [4]
    # An unregistered buffer has no known size: refused.
    b2, p2 = buffer_of(32)
    assert store.get_into_ranges([p2], [["gr1"]], [[[0]]], [[[0]]], [[[4]]])[0][0][0] < 0


def test_batch_is_exist_put_batch_get_batch_buffers(store):
    keys = [f"pb{i}" for i in range(6)]
    assert store.put_batch(keys[:3], [b"1", b"22", b"333"]) == 0
    assert store.batch_is_exist(keys) == [1, 1, 1, 0, 0, 0]
    assert store.batch_is_exist([]) == []
    assert store.get_batch(keys[:4]) == [b"1", b"22", b"333", b""]
    bufs = store.batch_get_buffer(["pb2", "nope"])
    assert bufs[1] is None and bufs[0].size() == 3 and bytes(bufs[0]) == b"333"
    assert store.batch_get_buffer([]) == []
    assert store.put_batch(["x"], [b"1", b"2"]) == INVALID_PARAMS


def test_remove_by_regex_and_remove_all(store):
    for i in range(5):
        assert store.put(f"rx_a_{i}", b"v") == 0
        assert store.put(f"rx_b_{i}", b"v") == 0
    assert store.remove_by_regex(r"^rx_a_[0-2]$", force=True) == 3
    assert store.batch_is_exist([f"rx_a_{i}" for i in range(5)]) == [0, 0, 0, 1, 1]
    assert store.remove_by_regex("(", force=True) == INVALID_PARAMS
    assert store.remove_all(force=True) >= 7
    assert store.is_exist("rx_b_0") == 0


def test_replicate_config_and_exist_options():
    c = ReplicateConfig()
    assert (c.replica_num, c.with_soft_pin, c.preferred_segment) == (1, False, "")
    c.replica_num = 3
    c.preferred_segment = "node1:12345"
    assert "3" in str(c) and c.preferred_segment == "node1:12345"
    o = ExistOptions()
    assert o.prefetch_to_memory is False


def test_put_with_replicate_config(store):
    c = ReplicateConfig()
    c.replica_num = 2  # one node: one copy (test_replica_copies.py has two)
    assert store.put("rc", b"v", c) == 0
    descs = store.get_replica_desc("rc")
    assert len(descs) == 1 and descs[0].is_memory_replica()
    assert descs[0].status == ReplicaStatus.COMPLETE
    assert not descs[0].is_local_disk_replica() and not descs[0].is_disk_replica()
    assert "MEMORY" in str(descs[0].type)
    assert store.get_replica_desc("nope") == []
    batch = store.batch_get_replica_desc(["rc", "nope"])
    assert list(batch) == ["rc"]
    # One round trip per 10,000 keys: a longer batch is split, not refused.
    batch = store.batch_get_replica_desc([f"nope-{i}" for i in range(10000)] + ["rc"])
    assert list(batch) == ["rc"]


def test_close_leaves_the_cluster(master):
    s = make_store(master.address)
    assert s.put("teardown", b"bytes") == 0
    assert s.close() == 0
    other = make_store(master.address)
    try:
        assert other.get("teardown") == b""  # its only replica left with the node
        assert other.put("teardown", b"again") == 0 and other.get("teardown") == b"again"
    finally:
        other.close()
    # A closed store can be set up again.
    assert s.setup({"local_hostname": "127.0.0.1", "global_segment_size": "8MB",
                    "master_server_addr": master.address}) == 0
    assert s.close() == 0


def test_pure_client_reads_what_a_node_holds(master):
    holder = make_store(master.address)
    client = make_store(master.address, segment=0)
    try:
        assert holder.put("pc", b"held") == 0
        assert client.get("pc") == b"held"
        assert client.put("pc2", b"from client") == 0
        assert holder.get("pc2") == b"from client"
    finally:
        client.close()
        holder.close()


def test_threads_share_one_store(master):
    """Eight threads at once on one store, 1 MiB values: every thread gets its own bytes back
    (calls run concurrently with the GIL released; a call holding it would serialize them
    but not fail, so this checks thread-safety, not timing). 128 MB: nothing is evicted."""
    store = make_store(master.address, segment="128MB")
    value = bytes(range(256)) * 4096
    errors = []

    def worker(t):
        try:
            for i in range(8):
                k = f"gil_{t}_{i}"
                assert store.put(k, value) == 0
                assert store.get(k) == value
        except AssertionError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    time.sleep(LEASE_WAIT)
    assert store.remove_by_regex("^gil_") == 64
    store.close()
