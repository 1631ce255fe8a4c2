"""SGLang's standalone-storage mode: MooncakeHostMemAllocator for the host KV pool and
setup_dummy(mem_pool_size, local_buffer_size, server_address) attaching the engine to a store
process already running on the host (here a real `mooncaked --role standalone`)."""
import ctypes
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import Standalone
from mooncake_tier.store import MooncakeDistributedStore, MooncakeHostMemAllocator

PAGE = 64 << 10  # one KV page of a small model
PAGES = 64
NOT_FOUND = -704
INVALID_PARAMS = -600
HAS_LEASE = -706
LEASE_S = 0.3  # the daemon's --default_kv_lease_ttl is 200 ms; reads and puts take a lease


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Standalone(tmp_path_factory.mktemp("standalone"))
    yield d
    d.stop()


def page_bytes(rank, i):
    """Distinct, reproducible contents of page i of rank `rank`."""
    return bytes(((rank * 131 + i * 7 + j) * 2654435761 >> 13) & 0xFF for j in range(256)) * (
        PAGE // 256)


def dummy_store(daemon, pool_bytes):
    s = MooncakeDistributedStore()
    assert s.setup_dummy(pool_bytes, 16 << 20, daemon.address) == 0
    return s


def test_allocator_memory_is_shared_memory():
    alloc = MooncakeHostMemAllocator()
    ptr = alloc.alloc(3 * PAGE + 5)
    assert ptr != 0 and ptr % 4096 == 0
    # Zeroed, writable over its whole length.
    assert ctypes.string_at(ptr, 3 * PAGE + 5) == bytes(3 * PAGE + 5)
    ctypes.memset(ptr, 0xAB, 3 * PAGE + 5)
    # A memfd mapping (MAP_SHARED): another process handed the descriptor maps these pages.
    with open("/proc/self/maps") as f:
        line = next(l for l in f if int(l.split("-")[0], 16) == ptr)
    assert "memfd:mooncake-tier-host-pool" in line and line.split()[1].endswith("s")
    assert alloc.free(ptr) == 0
    assert alloc.free(ptr) == -1  # not an allocation any more
    assert alloc.free(12345) == -1
    with pytest.raises(RuntimeError):  # as Mooncake's: never a 0 for ctypes.from_address
        alloc.alloc(0)
    with pytest.raises(RuntimeError):
        alloc.alloc(1 << 62)


def test_sglang_shaped_round_trip(daemon):
    alloc = MooncakeHostMemAllocator()
    pool_bytes = PAGES * PAGE
    pool = alloc.alloc(pool_bytes)
    assert pool
    store = dummy_store(daemon, pool_bytes)
    try:
        assert store.register_buffer(pool, pool_bytes) == 0
        for i in range(PAGES):
            ctypes.memmove(pool + i * PAGE, page_bytes(0, i), PAGE)
        keys = [f"sgl-page-{i}_0_k" for i in range(PAGES)]
        ptrs = [pool + i * PAGE for i in range(PAGES)]
        assert store.batch_is_exist(keys) == [0] * PAGES
        assert store.batch_put_from(keys, ptrs, [PAGE] * PAGES) == [0] * PAGES
        assert store.batch_is_exist(keys + ["sgl-page-missing"]) == [1] * PAGES + [0]

        fresh_bytes = pool_bytes
        fresh = alloc.alloc(fresh_bytes)
        assert store.register_buffer(fresh, fresh_bytes) == 0
        got = store.batch_get_into(keys, [fresh + i * PAGE for i in range(PAGES)],
                                   [PAGE] * PAGES)
        assert got == [PAGE] * PAGES
        assert ctypes.string_at(fresh, fresh_bytes) == ctypes.string_at(pool, pool_bytes)
        assert ctypes.string_at(fresh + 5 * PAGE, PAGE) == page_bytes(0, 5)

        # A range past the registered allocation is refused before a byte moves. (The pool is
        # unregistered first: mmap may have placed `fresh` right below it, and registered
        # buffers end to end count as one region.)
        assert store.unregister_buffer(pool) == 0
        assert store.batch_get_into([keys[0]], [fresh + fresh_bytes - 10], [PAGE]) == [
            INVALID_PARAMS]

        assert store.remove(keys[0]) == HAS_LEASE  # just read: leased, as in Mooncake
        time.sleep(LEASE_S)
        assert store.batch_remove(keys, False) == [0] * PAGES
        assert store.batch_is_exist(keys) == [0] * PAGES
        assert store.get_into(keys[0], fresh, PAGE) == NOT_FOUND
        assert store.unregister_buffer(fresh) == 0
        assert alloc.free(fresh) == 0
    finally:
        store.close()
        alloc.free(pool)


def test_every_data_call_through_the_daemon(daemon):
    store = dummy_store(daemon, 1 << 20)
    other = dummy_store(daemon, 1 << 20)  # a second attached engine sees the same objects
    try:
        assert store.health_check() == 0
        assert store.put("d-one", b"hello standalone") == 0
        assert other.get("d-one") == b"hello standalone"
        assert store.put_batch(["d-a", "d-b"], [b"a" * 100, b"b" * 200]) == 0
        assert other.get_batch(["d-a", "d-b", "d-none"]) == [b"a" * 100, b"b" * 200, b""]
        assert other.get_size("d-b") == 200
        assert other.is_exist("d-a") == 1 and other.is_exist("d-none") == 0
        buf = ctypes.create_string_buffer(300)
        ptr = ctypes.addressof(buf)
        ctypes.memmove(ptr, b"x" * 300, 300)
        assert store.put_from("d-from", ptr, 300) == 0
        assert other.get_into("d-from", ptr, 300) == 300 and buf.raw == b"x" * 300
        time.sleep(LEASE_S)
        assert other.remove("d-one") == 0
        # Multi-buffer forms (SGLang's MLA / hybrid pools) and upsert, from allocator memory.
        alloc = MooncakeHostMemAllocator()
        mem = alloc.alloc(4096)
        ctypes.memmove(mem, b"K" * 100, 100)
        ctypes.memmove(mem + 1000, b"V" * 50, 50)
        assert store.batch_put_from_multi_buffers(
            ["d-multi"], [[mem, mem + 1000]], [[100, 50]]) == [0]
        assert other.batch_get_into_multi_buffers(
            ["d-multi"], [[mem + 2000, mem + 3000]], [[50, 100]]) == [150]
        assert ctypes.string_at(mem + 2000, 50) + ctypes.string_at(mem + 3000, 100) == \
            b"K" * 100 + b"V" * 50
        time.sleep(LEASE_S)
        assert store.upsert("d-multi", b"new") == 0 and other.get("d-multi") == b"new"
        assert alloc.free(mem) == 0
        assert store.is_exist("d-one") == 0 and store.get("d-one") == b""
        assert store.remove("d-one") == NOT_FOUND
        assert store.put("d-one", b"again") == 0 and other.get("d-one") == b"again"
    finally:
        store.close()
        other.close()


def test_setup_dummy_refusals(tmp_path):
    s = MooncakeDistributedStore()
    assert s.setup_dummy(1 << 20, 16 << 20, "") == INVALID_PARAMS
    assert s.setup_dummy(1 << 20, "lots", "127.0.0.1:1") == INVALID_PARAMS
    # No store process there: setup fails with a code, and the store stays unset.
    assert s.setup_dummy(1 << 20, 16 << 20, "nohost") == INVALID_PARAMS
    assert s.setup_dummy(1 << 20, 16 << 20, "127.0.0.1:1") == -900  # RPC_FAIL
    assert s.put("k", b"v") < 0


ENGINE = textwrap.dedent(r"""
    import ctypes, sys, time
    sys.path.insert(0, sys.argv[3])
    from test_standalone_storage import PAGE, page_bytes
    from mooncake_tier.store import MooncakeDistributedStore, MooncakeHostMemAllocator
    address, rank, n = sys.argv[1], int(sys.argv[2]), 16
    alloc = MooncakeHostMemAllocator()
    pool = alloc.alloc(2 * n * PAGE)
    store = MooncakeDistributedStore()
    assert store.setup_dummy(2 * n * PAGE, 16 << 20, address) == 0
    assert store.register_buffer(pool, 2 * n * PAGE) == 0
    for i in range(n):
        ctypes.memmove(pool + i * PAGE, page_bytes(rank, i), PAGE)
    mine = [f"tp{rank}-page-{i}" for i in range(n)]
    assert store.batch_put_from(mine, [pool + i * PAGE for i in range(n)], [PAGE] * n) == [0] * n
    peer = 1 - rank
    theirs = [f"tp{peer}-page-{i}" for i in range(n)]
    deadline = time.monotonic() + 30
    while store.batch_is_exist(theirs) != [1] * n:
        assert time.monotonic() < deadline, "the peer engine's pages never appeared"
        time.sleep(0.05)
    dst = pool + n * PAGE
    assert store.batch_get_into(theirs, [dst + i * PAGE for i in range(n)], [PAGE] * n) == [PAGE] * n
    for i in range(n):
        assert ctypes.string_at(dst + i * PAGE, PAGE) == page_bytes(peer, i), i
    print("ok", rank, flush=True)
    # Stay attached until the peer has read ours too.
    seen = f"tp{peer}-done"
    assert store.put(f"tp{rank}-done", b"1") == 0
    while store.is_exist(seen) != 1:
        assert time.monotonic() < deadline, "the peer never finished"
        time.sleep(0.05)
    store.close()
""")


def test_two_engine_processes_share_one_daemon(daemon):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    engines = [subprocess.Popen([sys.executable, "-c", ENGINE, daemon.address, str(rank), here],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
               for rank in (0, 1)]
    outs = [p.communicate(timeout=60) for p in engines]
    for rank, (p, (out, err)) in enumerate(zip(engines, outs)):
        assert p.returncode == 0, err.decode()[-2000:]
        assert out.decode().split() == ["ok", str(rank)]
    # The pages outlive the engines: they are in the store process, not in either engine.
    store = dummy_store(daemon, 1 << 20)
    try:
        keys = [f"tp{r}-page-{i}" for r in (0, 1) for i in range(16)]
        assert store.batch_is_exist(keys) == [1] * 32
        assert store.get("tp1-page-3") == page_bytes(1, 3)
        time.sleep(LEASE_S)
        assert store.batch_remove(keys + ["tp0-done", "tp1-done"], False) == [0] * 34
    finally:
        store.close()
