"""ReplicateConfig.replica_num honoured through the module against a real master (issue 33):
that many MEMORY copies, each on its own node, written before the put ends, each readable, the
copies of preferred_segments placed in order, a node's departure leaving the others, and a
request for more copies than there are nodes placed as far as it goes and counted."""
import ctypes
import json
import os
import subprocess

import pytest

from conftest import MOONCAKED, Master, make_store, wait_for
from mooncake_tier.store import ReplicateConfig

CTL = os.path.join(os.path.dirname(MOONCAKED), "mooncakectl") if MOONCAKED else ""


def stat(master, key):
    out = subprocess.run([CTL, "--master", master.address, "--json", "stat", key],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def memory_nodes(store, key):
    """The nodes (hostnames) of the key's MEMORY replicas, as a reader is handed them."""
    return [d.node for d in store.get_replica_desc(key) if d.is_memory_replica()]


def memory_holders(master, key):
    """The nodes of the key's MEMORY copies in the master's order (`mooncakectl stat`)."""
    return [r["node"] for r in stat(master, key)["replicas"] if r["tier"] == "MEMORY"]


def memory_copies(master, key):
    """How many MEMORY copies the key has, by `mooncakectl stat` (inspection: not a read, so
    it keeps the key's place in the eviction order)."""
    return sum(r["tier"] == "MEMORY" for r in stat(master, key)["replicas"])


@pytest.fixture
def three_nodes(tmp_path):
    # No offload: what eviction drops is gone, and a copy is only ever in MEMORY.
    m = Master(tmp_path, "--enable_offload=false")
    stores = [make_store(m.address, segment="8MB") for _ in range(3)]
    yield m, stores
    for s in stores:
        s.close()
    m.stop()


def copies(n, *segments):
    c = ReplicateConfig()
    c.replica_num = n
    c.preferred_segments = list(segments)
    return c


def test_each_copy_is_on_its_own_node_and_holds_the_bytes(three_nodes):
    m, (a, b, c) = three_nodes
    value = os.urandom(100_000)
    assert a.put("two", value, copies(2)) == 0
    holders = memory_nodes(a, "two")
    assert len(holders) == 2 and len(set(holders)) == 2
    assert a.get("two") == value and b.get("two") == value
    view = stat(m, "two")
    memory = [r for r in view["replicas"] if r["tier"] == "MEMORY"]
    assert len(memory) == 2 and all(r["status"] == "COMPLETE" for r in memory)
    assert sorted(r["node"] for r in memory) == sorted(holders)
    # The batch forms write every copy too, from registered buffers.
    keys = [f"batch-{i}" for i in range(8)]
    data = [os.urandom(4096 + i) for i in range(8)]
    bufs = [ctypes.create_string_buffer(d, len(d)) for d in data]
    for buf in bufs:
        assert a.register_buffer(ctypes.addressof(buf), len(buf)) == 0
    assert a.batch_put_from(keys, [ctypes.addressof(x) for x in bufs],
                            [len(d) for d in data], copies(3)) == [0] * 8
    for key, d in zip(keys, data):
        assert len(set(memory_nodes(a, key))) == 3
        assert c.get(key) == d
    assert a.put_batch(["pb-1", "pb-2"], [b"x" * 5000, b"y" * 7000], copies(2)) == 0
    assert len(set(memory_nodes(b, "pb-2"))) == 2
    assert m.metric("put_copies_short_total") == 0


def test_preferred_segments_place_the_copies_in_order(three_nodes):
    _, (a, b, c) = three_nodes
    order = [c.get_hostname(), b.get_hostname()]
    assert a.put("placed", b"p" * 9000, copies(2, *order)) == 0
    assert memory_nodes(a, "placed") == order  # the first range first, then the copy
    # preferred_segments beyond replica_num place nothing more.
    assert a.put("capped", b"q" * 9000, copies(1, *order)) == 0
    assert memory_nodes(a, "capped") == [c.get_hostname()]


def test_each_store_reads_its_own_nodes_copy_first(three_nodes):
    m, (a, b, c) = three_nodes
    value = os.urandom(70_000)
    assert c.put("near", value, copies(2, b.get_hostname(), a.get_hostname())) == 0
    # The master lists the copies as placed; a reader whose own node holds one tries it first
    # (a memcpy, no socket), and a reader holding none keeps the master's order.
    assert memory_holders(m, "near") == [b.get_hostname(), a.get_hostname()]
    assert memory_nodes(a, "near") == [a.get_hostname(), b.get_hostname()]
    assert memory_nodes(b, "near") == [b.get_hostname(), a.get_hostname()]
    assert memory_nodes(c, "near") == [b.get_hostname(), a.get_hostname()]
    assert [d.node for d in a.batch_get_replica_desc(["near"])["near"]] == [
        a.get_hostname(), b.get_hostname()]
    assert a.get("near") == value and b.get("near") == value and c.get("near") == value


def test_a_departed_node_leaves_the_other_copies_readable(tmp_path):
    m = Master(tmp_path, "--enable_offload=false")
    a = make_store(m.address, segment="8MB")
    b = make_store(m.address, segment="8MB")
    try:
        value = os.urandom(50_000)
        assert a.put("kept", value, copies(2, b.get_hostname(), a.get_hostname())) == 0
        assert memory_holders(m, "kept") == [b.get_hostname(), a.get_hostname()]
        b.close()  # its node leaves: its copy goes with it
        assert wait_for(lambda: memory_nodes(a, "kept") == [a.get_hostname()], 10)
        assert a.get("kept") == value
    finally:
        a.close()
        m.stop()


def test_more_copies_than_nodes_places_what_it_can_and_counts_it(three_nodes):
    m, (a, _, _) = three_nodes
    assert a.put("five", b"f" * 3000, copies(5)) == 0
    assert len(set(memory_nodes(a, "five"))) == 3
    assert m.metric("put_copies_short_total") == 1
    c = ReplicateConfig()
    c.replica_num = 0  # Mooncake's INVALID_PARAMS
    assert a.put("none", b"n", c) == -600


def test_eviction_takes_one_copy_at_a_time(tmp_path):
    m = Master(tmp_path, "--enable_offload=false")
    block = 256 * 1024  # 16 fill a 4 MB segment
    a = make_store(m.address, segment="4MB")
    b = make_store(m.address, segment="4MB")
    try:
        assert a.put("old", b"o" * block, copies(2)) == 0  # the coldest object
        evictions = m.metric("evictions_total")
        i = 0
        # Fill both segments past full with single copies until eviction reaches "old".
        while memory_copies(m, "old") == 2:
            assert a.put(f"fill-{i}", b"f" * block) == 0
            i += 1
            assert i < 64
        # One copy went, the other stays readable and in MEMORY.
        assert memory_copies(m, "old") == 1
        assert a.get("old") == b"o" * block
        assert m.metric("evictions_total") == evictions + 1
    finally:
        a.close()
        b.close()
        m.stop()
