"""Each engine's store call sequence, mode by mode, against real daemons (issue 33's audit;
the call table is docs/ENGINES.md).

Written from reading the engines' store-facing files (SGLang HiCache's mooncake_store.py,
vLLM's Mooncake store connector worker, LMCache's mooncakestore_connector.py) and Mooncake's
binding (store_py.cpp): the same calls, in the same order, with the same argument shapes, and
the results read the way each engine reads them. No engine code is copied; the host pools are
torch tensors as the engines' are. Per mode: 64 KV pages stored, found (batch_is_exist), read
back byte-identical into fresh buffers, removed.

A test marked xfail(strict=True) is a gap that still has to be built: it flips to a failure
(XPASS) the day the gap is closed, so the mark has to go then.

Run:  MOONCAKED=build/bin/mooncaked PYTHONPATH=build/python \
      python3 -m pytest -q -p no:cacheprovider tests/python/test_engine_calls.py
"""
import asyncio
import ctypes
import os
import threading
import time
import urllib.error
import urllib.request

import pytest

torch = pytest.importorskip("torch")

from conftest import Master, Standalone, free_port, wait_for, wait_listening  # noqa: E402
from mooncake_tier.store import (  # noqa: E402  (the engines' import line, ours)
    MooncakeDistributedStore,
    MooncakeHostMemAllocator,
    ReplicateConfig,
)

PAGES = 64
NO_AVAILABLE_HANDLE = -200
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
LEASE_WAIT = 0.35  # the fixture masters' default_kv_lease_ttl is 200 ms
SGLANG_LOCAL_BUFFER = 16 * 1024 * 1024  # SGLang's DEFAULT_LOCAL_BUFFER_SIZE


# ---------------------------------------------------------------- helpers

def int_list(res, n):
    """Mooncake's per-key results: a list of exactly n Python ints (not bools, not None)."""
    assert isinstance(res, list), type(res)
    assert len(res) == n, (len(res), n)
    assert all(type(v) is int for v in res), [type(v) for v in res[:3]]
    return res


def random_fill(t, seed):
    g = torch.Generator().manual_seed(seed)
    t.view(torch.uint8).copy_(torch.randint(0, 256, t.view(torch.uint8).shape,
                                            dtype=torch.uint8, generator=g))


def nbytes(t):
    return t.numel() * t.element_size()


def sglang_setup(store, master_address, segment=32 << 20, **kwargs):
    """SGLang's non-standalone setup: 7 positional arguments, the transfer engine (None when
    none is shared), then the optional keywords it adds."""
    return store.setup("127.0.0.1", "P2PHANDSHAKE", segment, SGLANG_LOCAL_BUFFER, "tcp", "",
                       master_address, None, **kwargs)


def sglang_warmup(store):
    """SGLang's warmup: put 4 KiB (retried while it is non-zero), then is_exist == 1 and
    get == value."""
    key = f"sglang_mooncake_store_warmup_key{time.monotonic_ns()}"
    value = bytes(4 * 1024)
    for _ in range(10):
        if store.put(key, value) == 0:
            break
        time.sleep(1)
    else:
        pytest.fail("warmup put never returned 0")
    assert store.is_exist(key) == 1
    assert store.get(key) == value
    return key


def sglang_exists_prefix(store, query_keys, multiplier):
    """SGLang's batch_exists: the page count of the prefix whose objects all answer 1."""
    res = int_list(store.batch_is_exist(query_keys), len(query_keys))
    for i, r in enumerate(res):
        if r != 1:
            return i // multiplier
    return len(query_keys) // multiplier


def sglang_put(store, keys, ptrs, sizes, config=None):
    """SGLang's _put_batch_zero_copy_impl: multi-buffer when the pointers are lists."""
    if ptrs and isinstance(ptrs[0], (list, tuple)):
        return store.batch_put_from_multi_buffers(keys, ptrs, sizes, config or ReplicateConfig())
    if config is not None:
        return store.batch_put_from(keys, ptrs, sizes, config)
    return store.batch_put_from(keys, ptrs, sizes)


def sglang_get(store, keys, ptrs, sizes):
    if ptrs and isinstance(ptrs[0], (list, tuple)):
        return store.batch_get_into_multi_buffers(keys, ptrs, sizes)
    return store.batch_get_into(keys, ptrs, sizes)


def sglang_set(store, keys, ptrs, sizes, multiplier, config=None):
    """SGLang's batch_set_v1: put only what batch_is_exist does not report as 1, then fold the
    per-object results (== 0) into per-page booleans."""
    exist = int_list(store.batch_is_exist(keys), len(keys))
    results = [0 if e == 1 else -1 for e in exist]
    missing = [i for i, e in enumerate(exist) if e != 1]
    if missing:
        put = sglang_put(store, [keys[i] for i in missing], [ptrs[i] for i in missing],
                         [sizes[i] for i in missing], config)
        int_list(put, len(missing))
        for i, r in zip(missing, put):
            results[i] = r
    return [all(r == 0 for r in results[p:p + multiplier])
            for p in range(0, len(results), multiplier)], results


def sglang_load(store, keys, ptrs, sizes, multiplier):
    """SGLang's batch_get_v1: per-object results are bytes read (> 0 is success)."""
    res = int_list(sglang_get(store, keys, ptrs, sizes), len(keys))
    return [all(r > 0 for r in res[p:p + multiplier])
            for p in range(0, len(res), multiplier)], res


def http_get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("engines"))
    yield m
    m.stop()


@pytest.fixture
def sglang_store(cluster):
    s = MooncakeDistributedStore()
    ret = sglang_setup(s, cluster.address, enable_client_http_server=True,
                       client_http_port=free_port())
    if ret:
        pytest.fail(f"Failed to setup Mooncake store, error code: {ret}")
    sglang_warmup(s)
    yield s
    s.close()


def register(store, t):
    """SGLang / vLLM / LMCache register their host pools and treat non-zero as an error."""
    ret = store.register_buffer(t.data_ptr(), nbytes(t))
    assert ret == 0, ret


def clear_all(store, expect_at_least):
    """SGLang's clear() is remove_all(); reads left leases (the master's 200 ms), which
    Mooncake's remove_all skips, so wait them out first as an idle engine would."""
    time.sleep(LEASE_WAIT)
    n = store.remove_all()
    assert type(n) is int and n >= expect_at_least, n


# ---------------------------------------------------------------- SGLang HiCache

def test_sglang_setup_accepts_its_keywords_and_engine(cluster, tmp_path):
    # The optional keywords SGLang passes: client HTTP server (metrics), SSD offload, tenant.
    s = MooncakeDistributedStore()
    try:
        assert sglang_setup(s, cluster.address, enable_client_http_server=True,
                            client_http_port=free_port(), enable_ssd_offload=False,
                            ssd_offload_path=str(tmp_path)) == 0
        sglang_warmup(s)
        assert isinstance(s.get_hostname(), str) and s.get_hostname()
    finally:
        s.close()


def test_sglang_page_first_mha(sglang_store):
    """page_first / page_first_direct MHA host pool: every page is two objects, `{key}_{rank}_k`
    and `{key}_{rank}_v`, each one contiguous range of the pool: batch_put_from /
    batch_get_into."""
    store = sglang_store
    page_bytes = 16 * 1024
    kv = torch.empty((PAGES, 2, page_bytes), dtype=torch.uint8)  # page, k|v, bytes
    random_fill(kv, 1)
    register(store, kv)
    rank = "0"
    pages = [f"mha-page-{i:03d}" for i in range(PAGES)]
    keys, ptrs, sizes = [], [], []
    for i, p in enumerate(pages):
        for j, side in enumerate("kv"):
            keys.append(f"{p}_{rank}_{side}")
            ptrs.append(kv[i, j].data_ptr())
            sizes.append(page_bytes)

    assert sglang_exists_prefix(store, keys, 2) == 0
    ok, raw = sglang_set(store, keys, ptrs, sizes, 2)
    assert ok == [True] * PAGES and raw == [0] * (2 * PAGES)
    assert sglang_exists_prefix(store, keys, 2) == PAGES
    # A second backup of the same pages puts nothing (all exist) and still reports success.
    assert sglang_set(store, keys, ptrs, sizes, 2)[0] == [True] * PAGES

    fresh = torch.zeros_like(kv)
    register(store, fresh)
    fptrs = [fresh[i, j].data_ptr() for i in range(PAGES) for j in range(2)]
    ok, raw = sglang_load(store, keys, fptrs, sizes, 2)
    assert ok == [True] * PAGES and raw == [page_bytes] * (2 * PAGES)
    assert torch.equal(fresh, kv)

    # A page not stored: read fails with a negative code, the prefix stops there.
    missing = sglang_load(store, ["never-stored_0_k"], [fptrs[0]], [page_bytes], 1)[1]
    assert missing[0] < 0
    assert sglang_exists_prefix(store, keys + ["never-stored_0_k", "never-stored_0_v"], 2) == PAGES

    clear_all(store, 2 * PAGES)
    assert sglang_exists_prefix(store, keys, 2) == 0
    assert store.unregister_buffer(fresh.data_ptr()) == 0
    assert store.unregister_buffer(kv.data_ptr()) == 0


def test_sglang_layer_first_mla_multi_buffers(sglang_store):
    """layer_first MLA host pool: a page is one object `{key}__k` (no pp) made of one slice per
    layer, scattered one layer stride apart: batch_put_from_multi_buffers /
    batch_get_into_multi_buffers, a ReplicateConfig passed positionally."""
    store = sglang_store
    layers, page_size, token_bytes = 6, 4, 1024  # 4 tokens of 1 KiB latent per layer
    kv = torch.empty((layers, PAGES * page_size, token_bytes), dtype=torch.uint8)
    random_fill(kv, 2)
    register(store, kv)
    slice_bytes = page_size * token_bytes
    keys = [f"mla-page-{i:03d}__k" for i in range(PAGES)]

    def meta(t, page_order):
        return ([[t[l, p * page_size].data_ptr() for l in range(layers)] for p in page_order],
                [[slice_bytes] * layers for _ in page_order])

    ptrs, sizes = meta(kv, range(PAGES))
    assert sglang_exists_prefix(store, keys, 1) == 0
    ok, raw = sglang_set(store, keys, ptrs, sizes, 1)
    assert ok == [True] * PAGES and raw == [0] * PAGES
    assert sglang_exists_prefix(store, keys, 1) == PAGES
    assert [store.get_size(k) for k in keys[:3]] == [layers * slice_bytes] * 3

    # Read back into other host pages (reversed) of a fresh pool.
    fresh = torch.zeros_like(kv)
    register(store, fresh)
    order = list(reversed(range(PAGES)))
    fptrs, fsizes = meta(fresh, order)
    ok, raw = sglang_load(store, keys, fptrs, fsizes, 1)
    assert ok == [True] * PAGES and raw == [layers * slice_bytes] * PAGES
    for i, p in enumerate(order):
        assert torch.equal(fresh[:, p * page_size:(p + 1) * page_size],
                           kv[:, i * page_size:(i + 1) * page_size]), i

    clear_all(store, PAGES)
    assert int_list(store.batch_is_exist(keys), PAGES) == [0] * PAGES
    store.unregister_buffer(fresh.data_ptr())
    store.unregister_buffer(kv.data_ptr())


def test_sglang_group_semantics_config(sglang_store):
    """enable_group_semantics: SGLang probes hasattr(ReplicateConfig, "group_ids"), then puts
    every page's objects with config.group_ids = one id per object (the page's)."""
    store = sglang_store
    assert hasattr(ReplicateConfig, "group_ids")
    page_bytes = 8 * 1024
    kv = torch.empty((PAGES, 2, page_bytes), dtype=torch.uint8)
    random_fill(kv, 3)
    register(store, kv)
    keys, ptrs, gids = [], [], []
    for i in range(PAGES):
        for j, side in enumerate("kv"):
            keys.append(f"grp-page-{i:03d}_0_{side}")
            ptrs.append(kv[i, j].data_ptr())
            gids.append(f"sglang-hicache:grp-page-{i:03d}")
    config = ReplicateConfig()
    config.group_ids = gids
    assert list(config.group_ids) == gids
    ok, _ = sglang_set(store, keys, ptrs, [page_bytes] * len(keys), 2, config)
    assert ok == [True] * PAGES
    fresh = torch.zeros_like(kv)
    register(store, fresh)
    fptrs = [fresh[i, j].data_ptr() for i in range(PAGES) for j in range(2)]
    assert sglang_load(store, keys, fptrs, [page_bytes] * len(keys), 2)[0] == [True] * PAGES
    assert torch.equal(fresh, kv)
    clear_all(store, 2 * PAGES)
    store.unregister_buffer(fresh.data_ptr())
    store.unregister_buffer(kv.data_ptr())


def test_sglang_group_is_evicted_as_a_whole(tmp_path):
    m = Master(tmp_path)
    s = MooncakeDistributedStore()
    try:
        assert sglang_setup(s, m.address, segment=4 << 20) == 0
        page_bytes = 16 * 1024
        kv = torch.empty((PAGES, 2, page_bytes), dtype=torch.uint8)  # 2 MiB of 4
        random_fill(kv, 4)
        register(s, kv)
        keys, ptrs, gids = [], [], []
        for i in range(PAGES):
            for j, side in enumerate("kv"):
                keys.append(f"g{i:03d}_0_{side}")
                ptrs.append(kv[i, j].data_ptr())
                gids.append(f"sglang-hicache:g{i:03d}")
        config = ReplicateConfig()
        config.group_ids = gids
        assert s.batch_put_from(keys, ptrs, [page_bytes] * len(keys), config) == [0] * len(keys)
        # Read the v halves: under plain LRU every k half is now colder than every v half.
        vk = [k for k in keys if k.endswith("_v")]
        assert s.batch_get_into(vk, [p for k, p in zip(keys, ptrs) if k.endswith("_v")],
                                [page_bytes] * PAGES) == [page_bytes] * PAGES
        # Other pages (their own groups) take DRAM and push the coldest objects out.
        for n in range(3 * PAGES // 2):  # 3 MiB more
            cfg = ReplicateConfig()
            cfg.group_ids = [f"sglang-hicache:f{n:03d}"] * 2
            assert s.batch_put_from([f"f{n:03d}_0_k", f"f{n:03d}_0_v"],
                                    [kv[n % PAGES, 0].data_ptr(), kv[n % PAGES, 1].data_ptr()],
                                    [page_bytes] * 2, cfg) == [0, 0]
        ex = s.batch_is_exist(keys)
        halves = [i for i in range(PAGES) if ex[2 * i] != ex[2 * i + 1]]
        assert sum(ex) < 2 * PAGES  # eviction did happen
        assert halves == []
    finally:
        s.close()
        m.stop()


def test_sglang_hybrid_pools_aggregated_put(sglang_store):
    """Hybrid model (batch_set_v2): KV objects (single buffers), Mamba objects (one temporal
    plus one per conv state, single buffers) and an MLA-style side pool (several buffers an
    object) go in ONE batch_put_from_multi_buffers call, scalars wrapped as one-element lists;
    the reads go pool by pool (batch_get_into for single-buffer pools, the multi-buffer form for
    the other). Per page all of a pool's objects must answer 1 / 0 / bytes read."""
    store = sglang_store
    kv_bytes, temporal_bytes, conv_bytes, side_layers, side_bytes = 8192, 4096, 2048, 3, 1024
    kv = torch.empty((PAGES, 2, kv_bytes), dtype=torch.uint8)
    temporal = torch.empty((PAGES, temporal_bytes), dtype=torch.uint8)
    conv = [torch.empty((PAGES, conv_bytes), dtype=torch.uint8) for _ in range(2)]
    side = torch.empty((side_layers, PAGES, side_bytes), dtype=torch.uint8)
    pools = [kv, temporal, *conv, side]
    for n, t in enumerate(pools):
        random_fill(t, 10 + n)
        register(store, t)
    pages = [f"hyb-{i:03d}" for i in range(PAGES)]

    def layout(kvt, temp, convs, sidet):
        kv_k = [f"{p}_0_{s}" for p in pages for s in "kv"]
        kv_p = [kvt[i, j].data_ptr() for i in range(PAGES) for j in range(2)]
        kv_s = [kv_bytes] * len(kv_k)
        mb_k = [f"{p}_0_{x}" for p in pages for x in ("temporal", "conv_0", "conv_1")]
        mb_p = [t[i].data_ptr() for i in range(PAGES) for t in (temp, *convs)]
        mb_s = [s for _ in range(PAGES) for s in (temporal_bytes, conv_bytes, conv_bytes)]
        sd_k = [f"{p}__swa" for p in pages]
        sd_p = [[sidet[l, i].data_ptr() for l in range(side_layers)] for i in range(PAGES)]
        sd_s = [[side_bytes] * side_layers for _ in range(PAGES)]
        return (kv_k, kv_p, kv_s), (mb_k, mb_p, mb_s), (sd_k, sd_p, sd_s)

    (kv_k, kv_p, kv_s), (mb_k, mb_p, mb_s), (sd_k, sd_p, sd_s) = layout(kv, temporal, conv, side)
    all_keys = kv_k + mb_k + sd_k
    all_ptrs = [[p] for p in kv_p + mb_p] + sd_p
    all_sizes = [[s] for s in kv_s + mb_s] + sd_s
    exist = int_list(store.batch_is_exist(all_keys), len(all_keys))
    assert exist == [0] * len(all_keys)
    res = int_list(store.batch_put_from_multi_buffers(all_keys, all_ptrs, all_sizes,
                                                      ReplicateConfig()), len(all_keys))
    assert res == [0] * len(all_keys)
    assert int_list(store.batch_is_exist(all_keys), len(all_keys)) == [1] * len(all_keys)

    fkv = torch.zeros_like(kv)
    ftemp = torch.zeros_like(temporal)
    fconv = [torch.zeros_like(c) for c in conv]
    fside = torch.zeros_like(side)
    for t in (fkv, ftemp, *fconv, fside):
        register(store, t)
    (_, fkv_p, _), (_, fmb_p, _), (_, fsd_p, _) = layout(fkv, ftemp, fconv, fside)
    assert sglang_load(store, kv_k, fkv_p, kv_s, 2)[0] == [True] * PAGES
    assert sglang_load(store, mb_k, fmb_p, mb_s, 3)[0] == [True] * PAGES
    ok, raw = sglang_load(store, sd_k, fsd_p, sd_s, 1)
    assert ok == [True] * PAGES and raw == [side_layers * side_bytes] * PAGES
    for a, b in zip((fkv, ftemp, *fconv, fside), pools):
        assert torch.equal(a, b)
    clear_all(store, len(all_keys))
    assert int_list(store.batch_is_exist(all_keys), len(all_keys)) == [0] * len(all_keys)
    for t in (*pools, fkv, ftemp, *fconv, fside):
        store.unregister_buffer(t.data_ptr())


def test_sglang_embedded_ssd_offload(cluster, tmp_path):
    """MOONCAKE_ENABLE_SSD_OFFLOAD: setup(..., enable_ssd_offload=True, ssd_offload_path=DIR);
    a rank's pages beyond its DRAM segment stay found and read back from its SSD."""
    s = MooncakeDistributedStore()
    assert sglang_setup(s, cluster.address, segment=4 << 20, enable_ssd_offload=True,
                        ssd_offload_path=str(tmp_path)) == 0
    try:
        sglang_warmup(s)
        page_bytes = 64 * 1024  # 64 pages x 2 x 64 KiB: 8 MiB through 4 MiB of DRAM
        kv = torch.empty((PAGES, 2, page_bytes), dtype=torch.uint8)
        random_fill(kv, 95)
        register(s, kv)
        keys = [f"ssd-{i:03d}_0_{x}" for i in range(PAGES) for x in "kv"]
        ptrs = [kv[i, j].data_ptr() for i in range(PAGES) for j in range(2)]
        sizes = [page_bytes] * len(keys)
        for start in range(0, len(keys), 16):  # the cache controller backs up a few pages at a time
            ok, raw = sglang_set(s, keys[start:start + 16], ptrs[start:start + 16],
                                 sizes[start:start + 16], 2)
            assert ok == [True] * 8, raw
        assert wait_for(lambda: sglang_exists_prefix(s, keys, 2) == PAGES, 20)
        fresh = torch.zeros_like(kv)
        register(s, fresh)
        fptrs = [fresh[i, j].data_ptr() for i in range(PAGES) for j in range(2)]
        ok, raw = sglang_load(s, keys, fptrs, sizes, 2)
        assert ok == [True] * PAGES, sorted(set(raw))
        assert torch.equal(fresh, kv)
        assert any(d[0].is_local_disk_replica()
                   for d in s.batch_get_replica_desc(keys).values())
        clear_all(s, len(keys))
        assert sglang_exists_prefix(s, keys, 2) == 0
    finally:
        s.close()


def test_sglang_check_server_polls_get_all_segments(tmp_path):
    """MOONCAKE_CHECK_SERVER: GET http://<master ip>:<master_metrics_port>/get_all_segments
    until the body is non-empty (an empty body means: no segment mounted yet, wait)."""
    import requests  # SGLang's client for the probe

    m = Master(tmp_path)
    s = None
    try:
        ip = m.address.split(":")[0]
        url = f"http://{ip}:{m.metrics_port}/get_all_segments"
        wait_listening(m.metrics_port, m.proc)
        first = requests.get(url, timeout=3)
        assert first.status_code == 200 and first.text == ""

        found = {}

        def poll():
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    r = requests.get(url, timeout=3)
                except Exception:
                    time.sleep(0.2)
                    continue
                if r.text != "":
                    found["text"] = r.text
                    return
                time.sleep(0.2)

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.5)
        s = MooncakeDistributedStore()
        assert sglang_setup(s, m.address, segment=8 << 20) == 0
        t.join()
        assert found.get("text"), "the check never saw a segment"
        assert s.get_hostname() in found["text"].splitlines()
    finally:
        if s is not None:
            s.close()
        m.stop()


class MooncakeHostPool:
    """SGLang's MooncakeHostTensorAllocator, re-done: MooncakeHostMemAllocator().alloc(size)
    gives an address; a ctypes array over it becomes a torch uint8 tensor, viewed as dims."""

    def __init__(self, dims, dtype=torch.uint8):
        self.allocator = MooncakeHostMemAllocator()
        size = dtype.itemsize if hasattr(dtype, "itemsize") else torch.tensor([], dtype=dtype).element_size()
        for d in dims:
            size *= d
        self.ptr = self.allocator.alloc(size)
        assert type(self.ptr) is int and self.ptr != 0
        array = (ctypes.c_byte * size).from_address(self.ptr)
        self.tensor = torch.frombuffer(array, dtype=torch.uint8, count=size).view(dtype).view(dims)
        self.size = size


@pytest.fixture(scope="module")
def standalone_daemon(tmp_path_factory):
    d = Standalone(tmp_path_factory.mktemp("standalone"))
    yield d
    d.stop()


def test_sglang_standalone_storage(standalone_daemon):
    """standalone_storage: the host pool comes from MooncakeHostMemAllocator; setup_dummy(
    required_bytes, DEFAULT_LOCAL_BUFFER_SIZE, client_server_address) attaches to the store
    process already running on the host; then warmup, register the pool, page-first puts/gets
    and the MLA multi-buffer form."""
    page_bytes = 16 * 1024
    mha = MooncakeHostPool((PAGES, 2, page_bytes))
    layers, slice_bytes = 4, 4096
    mla = MooncakeHostPool((layers, PAGES, slice_bytes))
    random_fill(mha.tensor, 20)
    random_fill(mla.tensor, 21)
    required = mha.size + mla.size  # SGLang's _standalone_required_bytes: every host buffer
    store = MooncakeDistributedStore()
    ret = store.setup_dummy(required, SGLANG_LOCAL_BUFFER, standalone_daemon.address)
    assert not ret, ret
    try:
        sglang_warmup(store)
        register(store, mha.tensor)
        register(store, mla.tensor)

        keys = [f"sa-{i:03d}_0_{s}" for i in range(PAGES) for s in "kv"]
        ptrs = [mha.tensor[i, j].data_ptr() for i in range(PAGES) for j in range(2)]
        sizes = [page_bytes] * len(keys)
        assert sglang_exists_prefix(store, keys, 2) == 0
        assert sglang_set(store, keys, ptrs, sizes, 2)[0] == [True] * PAGES
        assert sglang_exists_prefix(store, keys, 2) == PAGES

        mkeys = [f"sa-mla-{i:03d}__k" for i in range(PAGES)]
        mptrs = [[mla.tensor[l, i].data_ptr() for l in range(layers)] for i in range(PAGES)]
        msizes = [[slice_bytes] * layers for _ in range(PAGES)]
        assert sglang_set(store, mkeys, mptrs, msizes, 1)[0] == [True] * PAGES

        # Read back into a second shared pool, as another TP rank's would be.
        fmha = MooncakeHostPool((PAGES, 2, page_bytes))
        fmla = MooncakeHostPool((layers, PAGES, slice_bytes))
        register(store, fmha.tensor)
        register(store, fmla.tensor)
        fptrs = [fmha.tensor[i, j].data_ptr() for i in range(PAGES) for j in range(2)]
        assert sglang_load(store, keys, fptrs, sizes, 2)[1] == [page_bytes] * len(keys)
        assert torch.equal(fmha.tensor, mha.tensor)
        fmptrs = [[fmla.tensor[l, i].data_ptr() for l in range(layers)] for i in range(PAGES)]
        assert sglang_load(store, mkeys, fmptrs, msizes, 1)[1] == [layers * slice_bytes] * PAGES
        assert torch.equal(fmla.tensor, mla.tensor)

        clear_all(store, 3 * PAGES)
        assert sglang_exists_prefix(store, keys, 2) == 0
        assert int_list(store.batch_is_exist(mkeys), PAGES) == [0] * PAGES
        for p in (mha, mla, fmha, fmla):
            assert store.unregister_buffer(p.ptr) == 0
            assert p.allocator.free(p.ptr) == 0
    finally:
        store.close()


def _maps_of(pid):
    with open(f"/proc/{pid}/maps") as f:
        return f.read()


def test_sglang_standalone_pool_is_mapped_by_the_store_process(standalone_daemon):
    pool = MooncakeHostPool((PAGES, 16 * 1024))
    store = MooncakeDistributedStore()
    assert store.setup_dummy(pool.size, SGLANG_LOCAL_BUFFER, standalone_daemon.address) == 0
    try:
        register(store, pool.tensor)
        assert "mooncake-tier-host-pool" in _maps_of(os.getpid())
        assert wait_for(lambda: "mooncake-tier-host-pool" in
                        _maps_of(standalone_daemon.proc.pid), 3)
    finally:
        store.unregister_buffer(pool.ptr)
        store.close()
        pool.allocator.free(pool.ptr)


def test_sglang_tenants_do_not_see_each_other(cluster):
    """Two SGLang deployments on one store, set up with different tenant_id (as
    MOONCAKE_TENANT_ID makes it pass): the same page keys are two objects, and one's
    remove_all (SGLang's clear) leaves the other's pages."""
    a, b = MooncakeDistributedStore(), MooncakeDistributedStore()
    keys = [f"tenant-page_{i}_k" for i in range(8)]
    try:
        assert sglang_setup(a, cluster.address, segment=4 << 20, tenant_id="tenant-a") == 0
        assert sglang_setup(b, cluster.address, segment=4 << 20, tenant_id="tenant-b") == 0
        for i, key in enumerate(keys[:4]):
            assert a.put(key, bytes([i]) * 4096) == 0
        assert int_list(a.batch_is_exist(keys), 8) == [1] * 4 + [0] * 4
        assert int_list(b.batch_is_exist(keys), 8) == [0] * 8
        assert b.get(keys[0]) == b""
        for i, key in enumerate(keys):
            assert b.put(key, bytes([100 + i]) * 4096) == 0
        assert a.get(keys[1]) == bytes([1]) * 4096
        assert b.get(keys[1]) == bytes([101]) * 4096
        # A write naming another tenant than the store's own is refused, not redirected.
        other = ReplicateConfig()
        other.tenant_id = "tenant-b"
        assert a.put("tenant-cross", b"x", other) == -600
        assert b.is_exist("tenant-cross") == 0 and a.is_exist("tenant-cross") == 0
        time.sleep(LEASE_WAIT)
        assert a.remove_all() == 4
        assert int_list(a.batch_is_exist(keys), 8) == [0] * 8
        assert int_list(b.batch_is_exist(keys), 8) == [1] * 8
        assert b.get(keys[7]) == bytes([107]) * 4096
    finally:
        time.sleep(LEASE_WAIT)
        a.remove_all(True)
        b.remove_all(True)
        a.close()
        b.close()


# ---------------------------------------------------------------- vLLM store connector

class VllmKvCaches:
    """FlashAttention-layout KV caches, one (2, num_blocks, block_bytes) tensor a layer; the
    worker registers each layer's storage and splits it at the K/V stride into two segments,
    so 4 layers give 8 buffers a block."""

    def __init__(self, layers, num_blocks, block_bytes, seed=None):
        self.caches = [torch.zeros((2, num_blocks, block_bytes), dtype=torch.uint8)
                       for _ in range(layers)]
        if seed is not None:
            for n, c in enumerate(self.caches):
                random_fill(c, seed + n)
        self.block_len = block_bytes
        self.segments = []
        for c in self.caches:
            seg_stride = c.stride(0) * c.element_size()
            for kv in range(c.shape[0]):
                self.segments.append(c.data_ptr() + kv * seg_stride)

    def register(self, store):
        for c in self.caches:
            ret = store.register_buffer(c.data_ptr(), nbytes(c))
            assert ret == 0, ret

    def value(self, block_id):
        """prepare_value: a block's addresses and sizes, one per segment."""
        return ([s + block_id * self.block_len for s in self.segments],
                [self.block_len] * len(self.segments))

    def block(self, block_id):
        return torch.cat([c[:, block_id].reshape(-1) for c in self.caches])


def vllm_setup(store, master_address, segment=32 << 20, local_buffer=16 << 20):
    ret = store.setup("127.0.0.1", "P2PHANDSHAKE", segment, local_buffer, "tcp", "",
                      master_address)
    if ret != 0:
        raise RuntimeError("Initialize MooncakeDistributedStore failed.")


def vllm_save(store, keys, values, config):
    """The sending thread: dedup with batch_is_exist (!= 1 is missing), then one
    batch_put_from_multi_buffers; failures are values < 0, -200 means back off."""
    exists = int_list(store.batch_is_exist(keys), len(keys))
    missing = [i for i, e in enumerate(exists) if e != 1]
    if not missing:
        return [], set()
    res = store.batch_put_from_multi_buffers([keys[i] for i in missing],
                                             [values[i][0] for i in missing],
                                             [values[i][1] for i in missing], config)
    int_list(res, len(missing))
    failed = [i for i, v in enumerate(res) if v < 0]
    return res, {res[i] for i in failed}


def test_vllm_save_lookup_load_reset(cluster):
    store = MooncakeDistributedStore()
    vllm_setup(store, cluster.address)
    try:
        config = ReplicateConfig()
        config.preferred_segment = store.get_hostname()  # extra_config's preferred_segment
        src = VllmKvCaches(layers=4, num_blocks=PAGES, block_bytes=4096, seed=30)
        src.register(store)
        assert len(src.value(0)[0]) == 8
        prefix = "Qwen3-0.6B@tp_rank:0@pcp0@dcp0@pp_rank:0@group:0"
        hashes = [f"{i:064x}" for i in range(1, PAGES + 1)]
        keys = [f"{prefix}@{h}" for h in hashes]

        # Lookup server (rank 0): every candidate key must answer 1.
        assert int_list(store.batch_is_exist(keys), PAGES) == [0] * PAGES
        res, codes = vllm_save(store, keys, [src.value(b) for b in range(PAGES)], config)
        assert res == [0] * PAGES and codes == set()
        assert int_list(store.batch_is_exist(keys), PAGES) == [1] * PAGES
        # Saving the same request again finds everything stored and puts nothing.
        assert vllm_save(store, keys, [src.value(b) for b in range(PAGES)], config) == ([], set())

        # Tier logging (VLLM_MOONCAKE_STORE_TIER_LOG): a dict-like of key -> descriptors.
        descs = store.batch_get_replica_desc(keys[:4])
        assert hasattr(descs, "get")
        for k in keys[:4]:
            d = descs.get(k)
            assert d and d[0].is_memory_replica() and not d[0].is_disk_replica()

        # Load into other blocks of a fresh cache (the receiving thread rotates by tp_rank).
        dst = VllmKvCaches(layers=4, num_blocks=PAGES, block_bytes=4096)
        dst.register(store)
        rot = 3
        order = list(range(PAGES))[rot:] + list(range(PAGES))[:rot]
        target = {b: PAGES - 1 - b for b in range(PAGES)}
        lkeys = [keys[b] for b in order]
        laddrs = [dst.value(target[b])[0] for b in order]
        lsizes = [dst.value(target[b])[1] for b in order]
        res = int_list(store.batch_get_into_multi_buffers(lkeys, laddrs, lsizes), PAGES)
        assert [v for v in res if v < 0] == []
        assert res == [8 * 4096] * PAGES
        for b in range(PAGES):
            assert torch.equal(dst.block(target[b]), src.block(b)), b

        # A key that is not there fails alone (negative), the others still load.
        res = store.batch_get_into_multi_buffers([keys[0], "absent@" + hashes[0]],
                                                 [laddrs[0], laddrs[1]], [lsizes[0], lsizes[1]])
        assert int_list(res, 2)[0] == 8 * 4096 and res[1] < 0

        # RESET_MSG: remove_all(force=True), even with reads' leases still held.
        n = store.remove_all(force=True)
        assert type(n) is int and n >= PAGES
        assert int_list(store.batch_is_exist(keys), PAGES) == [0] * PAGES
    finally:
        store.close()


def test_vllm_standalone_store_mode(standalone_daemon):
    """mode "standalone-store": the rank contributes no segment (global_segment_size 0), the
    store process on the host owns DRAM and disk, and preferred_segment names its segment.
    The lookup server (rank 0's thread) asks batch_is_exist while the sending thread puts;
    the receiving threads load with batch_get_into_multi_buffers."""
    store = MooncakeDistributedStore()
    vllm_setup(store, standalone_daemon.address, segment=0)
    try:
        config = ReplicateConfig()
        config.preferred_segment = standalone_daemon.address  # the owner's segment name
        src = VllmKvCaches(layers=4, num_blocks=PAGES, block_bytes=4096, seed=70)
        src.register(store)
        keys = [f"sa-vllm@tp_rank:0@{i:064x}" for i in range(PAGES)]
        lookups = []
        stop = threading.Event()

        def lookup_server():
            while not stop.is_set():
                res = store.batch_is_exist(keys)
                lookups.append(sum(1 for r in res if r == 1))

        t = threading.Thread(target=lookup_server)
        t.start()
        try:
            for start in range(0, PAGES, 16):  # four scheduler steps of 16 blocks
                res, codes = vllm_save(store, keys[start:start + 16],
                                       [src.value(b) for b in range(start, start + 16)], config)
                assert res == [0] * 16 and codes == set()
        finally:
            stop.set()
            t.join()
        assert lookups and all(0 <= n <= PAGES for n in lookups)
        assert int_list(store.batch_is_exist(keys), PAGES) == [1] * PAGES
        descs = store.batch_get_replica_desc(keys)
        assert all(descs.get(k)[0].node == standalone_daemon.address for k in keys)

        dst = VllmKvCaches(layers=4, num_blocks=PAGES, block_bytes=4096)
        dst.register(store)
        res = store.batch_get_into_multi_buffers(keys, [dst.value(b)[0] for b in range(PAGES)],
                                                 [dst.value(b)[1] for b in range(PAGES)])
        assert int_list(res, PAGES) == [8 * 4096] * PAGES
        for b in range(PAGES):
            assert torch.equal(dst.block(b), src.block(b)), b
        n = store.remove_all(force=True)
        assert type(n) is int and n >= PAGES
        assert int_list(store.batch_is_exist(keys), PAGES) == [0] * PAGES
    finally:
        store.close()


def test_vllm_standalone_store_with_offload_reads_back_from_disk(tmp_path):
    """standalone-store with enable_offload: the owner's DRAM holds a quarter of what the
    ranks save; the rest must stay found (batch_is_exist == 1) and load byte-identical from
    the owner's SSD tier, and the tier log sees disk replicas."""
    d = Standalone(tmp_path, dram="4MiB", disk="64MiB")
    store = MooncakeDistributedStore()
    vllm_setup(store, d.address, segment=0)
    try:
        config = ReplicateConfig()
        config.preferred_segment = d.address
        n = 4 * PAGES  # 256 keys of 32 KiB: 8 MiB through a 4 MiB DRAM
        src = VllmKvCaches(layers=4, num_blocks=n, block_bytes=4096, seed=90)
        src.register(store)
        keys = [f"off@{i:064x}" for i in range(n)]
        for start in range(0, n, PAGES):
            res, codes = vllm_save(store, keys[start:start + PAGES],
                                   [src.value(b) for b in range(start, start + PAGES)], config)
            assert codes == set(), codes
        assert wait_for(lambda: store.batch_is_exist(keys) == [1] * n, 20)
        descs = store.batch_get_replica_desc(keys[:PAGES])
        tiers = ["memory" if descs.get(k)[0].is_memory_replica() else
                 "disk" if descs.get(k)[0].is_local_disk_replica() else "unknown"
                 for k in keys[:PAGES]]
        assert "disk" in tiers and "unknown" not in tiers
        dst = VllmKvCaches(layers=4, num_blocks=n, block_bytes=4096)
        dst.register(store)
        for start in range(0, n, PAGES):
            batch = range(start, start + PAGES)
            res = store.batch_get_into_multi_buffers([keys[b] for b in batch],
                                                     [dst.value(b)[0] for b in batch],
                                                     [dst.value(b)[1] for b in batch])
            assert int_list(res, PAGES) == [8 * 4096] * PAGES, sorted(set(res))
        for b in range(n):
            assert torch.equal(dst.block(b), src.block(b)), b
        assert store.remove_all(force=True) >= n
        assert store.batch_is_exist(keys) == [0] * n
    finally:
        store.close()
        d.stop()


def test_vllm_no_available_handle_backoff(tmp_path):
    """Under DRAM pressure a save batch reports NO_AVAILABLE_HANDLE (-200) for the keys that
    did not fit; vLLM marks the request skipped and retries it once a later batch succeeds."""
    m = Master(tmp_path, "--default_kv_lease_ttl", "1500", "--lease_blocks_eviction=true")
    store = MooncakeDistributedStore()
    vllm_setup(store, m.address, segment=3 << 20)
    try:
        config = ReplicateConfig()
        src = VllmKvCaches(layers=4, num_blocks=PAGES, block_bytes=4096, seed=40)  # 32 KiB a key
        src.register(store)
        keys = [f"bp@{i:064x}" for i in range(PAGES * 2)]
        first = keys[:PAGES]  # 2 MiB of a 3 MiB segment
        res, codes = vllm_save(store, first, [src.value(b) for b in range(PAGES)], config)
        assert res == [0] * PAGES
        # Reads lease everything stored; the next batch needs more room than is left.
        dst = VllmKvCaches(layers=4, num_blocks=PAGES, block_bytes=4096)
        dst.register(store)
        got = store.batch_get_into_multi_buffers(first, [dst.value(b)[0] for b in range(PAGES)],
                                                 [dst.value(b)[1] for b in range(PAGES)])
        assert int_list(got, PAGES) == [8 * 4096] * PAGES
        second = keys[PAGES:]
        res, codes = vllm_save(store, second, [src.value(b) for b in range(PAGES)], config)
        assert NO_AVAILABLE_HANDLE in codes, codes
        assert all(v in (0, NO_AVAILABLE_HANDLE) for v in res), set(res)
        # Pressure clears when the leases end: the retried batch succeeds.
        time.sleep(1.8)
        res, codes = vllm_save(store, second, [src.value(b) for b in range(PAGES)], config)
        assert codes == set() and all(v == 0 for v in res)
        assert int_list(store.batch_is_exist(second), PAGES) == [1] * PAGES
    finally:
        store.close()
        m.stop()


def test_vllm_value_larger_than_dram_is_no_available_handle(cluster):
    store = MooncakeDistributedStore()
    vllm_setup(store, cluster.address, segment=1 << 20)
    try:
        src = VllmKvCaches(layers=4, num_blocks=2, block_bytes=192 * 1024, seed=80)  # 1.5 MiB
        src.register(store)
        res, codes = vllm_save(store, ["huge@" + "0" * 64], [src.value(0)], ReplicateConfig())
        assert codes == {NO_AVAILABLE_HANDLE}, res
    finally:
        store.close()


# ---------------------------------------------------------------- LMCache

METADATA_BYTES_LEN = 28  # LMCache's RemoteMetadata: length, 4 shape dims, dtype, format


class LmcacheCpuBackend:
    """LMCache's pinned CPU buffer (registered with register_buffer(data_ptr, numel)), cut into
    chunks of chunk_bytes."""

    def __init__(self, chunks, chunk_bytes):
        self.buffer = torch.zeros(chunks * chunk_bytes, dtype=torch.uint8)
        self.chunk_bytes = chunk_bytes

    def chunk(self, i):
        return self.buffer[i * self.chunk_bytes:(i + 1) * self.chunk_bytes]


def lmcache_setup(store, master_address):
    """MooncakestoreConnector: positional setup (its config's defaults: 1 GiB local buffer),
    ReplicateConfig with replica_num = 1 and, with prefer_local_alloc, preferred_segment =
    get_hostname()."""
    store.setup("127.0.0.1", "P2PHANDSHAKE", 32 << 20, 1 << 30, "tcp", "", master_address)
    config = ReplicateConfig()
    config.replica_num = 1
    config.preferred_segment = store.get_hostname()
    return config


def lmcache_meta(length, shape, dtype_code=3, fmt=1):
    """A 28-byte header standing in for RemoteMetadata.serialize()."""
    dims = list(shape) + [0] * (4 - len(shape))
    return (length.to_bytes(4, "little") + b"".join(d.to_bytes(4, "little") for d in dims)
            + dtype_code.to_bytes(4, "little") + fmt.to_bytes(4, "little"))


def test_lmcache_default_mode_put_parts_and_batch_get_buffer(cluster):
    """save_chunk_meta=True: put_parts(key, metadata_bytes, kv_bytes) in asyncio.to_thread;
    batched_get via batch_get_buffer, each BufferHandle (None when missing) read through
    memoryview and torch.frombuffer(offset=METADATA_BYTES_LEN)."""
    store = MooncakeDistributedStore()
    lmcache_setup(store, cluster.address)
    try:
        shape = (2, 4, 16, 32)  # kv, layers, tokens, hidden -> bf16-sized elements
        chunk = torch.empty(shape, dtype=torch.float16)
        chunk_bytes = nbytes(chunk)
        backend = LmcacheCpuBackend(PAGES, chunk_bytes)
        assert store.register_buffer(backend.buffer.data_ptr(), backend.buffer.numel()) == 0
        random_fill(backend.buffer, 50)
        keys = [f"vllm@lmcache@0@{i:016x}" for i in range(PAGES)]
        assert all(not store.is_exist(k) for k in keys)

        async def put_all():
            async def put(i):
                kv_bytes = memoryview(backend.chunk(i).numpy()).cast("B")
                meta = lmcache_meta(len(kv_bytes), shape)
                assert len(meta) == METADATA_BYTES_LEN
                return await asyncio.wait_for(
                    asyncio.to_thread(store.put_parts, keys[i], meta, kv_bytes), timeout=10)
            return await asyncio.gather(*(put(i) for i in range(PAGES)))

        assert asyncio.run(put_all()) == [0] * PAGES
        assert all(store.is_exist(k) for k in keys)  # exists(): the int's truth value
        assert int_list(store.batch_is_exist(keys), PAGES) == [1] * PAGES

        buffers = asyncio.run(asyncio.to_thread(store.batch_get_buffer, keys + ["absent"]))
        assert len(buffers) == PAGES + 1 and buffers[-1] is None
        for i, buf in enumerate(buffers[:-1]):
            view = memoryview(buf)
            assert len(view[:METADATA_BYTES_LEN]) == METADATA_BYTES_LEN
            assert int.from_bytes(view[:4], "little") == chunk_bytes
            assert len(view) == chunk_bytes + METADATA_BYTES_LEN
            n = chunk.numel()
            t = torch.frombuffer(buf, dtype=torch.float16, offset=METADATA_BYTES_LEN,
                                 count=n).reshape(shape)
            fresh = torch.zeros(shape, dtype=torch.float16)
            fresh.copy_(t)
            assert torch.equal(fresh.view(torch.uint8).reshape(-1), backend.chunk(i)), i

        time.sleep(LEASE_WAIT)
        assert [store.remove(k) for k in keys] == [0] * PAGES
        assert int_list(store.batch_is_exist(keys), PAGES) == [0] * PAGES
        assert store.remove(keys[0]) == OBJECT_NOT_FOUND
        assert store.unregister_buffer(backend.buffer.data_ptr()) == 0
    finally:
        store.close()


def test_lmcache_zero_copy_mode_put_from_batch_get_into(cluster):
    """save_chunk_meta=False: put_from(key, ptr, size, replica_config) per chunk, then
    batch_get_into(keys, ptrs, sizes) into freshly allocated chunks; n_read <= 0 is a miss and
    n_read is the chunk's length otherwise."""
    store = MooncakeDistributedStore()
    config = lmcache_setup(store, cluster.address)
    try:
        chunk_bytes = 32 * 1024
        backend = LmcacheCpuBackend(2 * PAGES, chunk_bytes)
        assert store.register_buffer(backend.buffer.data_ptr(), backend.buffer.numel()) == 0
        random_fill(backend.buffer[:PAGES * chunk_bytes], 60)
        keys = [f"vllm@lmcache-zc@0@{i:016x}" for i in range(PAGES)]

        async def put_all():
            return await asyncio.gather(*(
                asyncio.wait_for(asyncio.to_thread(
                    store.put_from, keys[i], backend.chunk(i).data_ptr(), chunk_bytes, config),
                    timeout=10) for i in range(PAGES)))

        assert asyncio.run(put_all()) == [0] * PAGES
        assert int_list(store.batch_is_exist(keys), PAGES) == [1] * PAGES
        d = store.get_replica_desc(keys[0])
        assert d and d[0].is_memory_replica()
        assert d[0].node == store.get_hostname()  # prefer_local_alloc placed it here

        ptrs = [backend.chunk(PAGES + i).data_ptr() for i in range(PAGES)]
        got = asyncio.run(asyncio.to_thread(store.batch_get_into, keys + ["absent"],
                                            ptrs + [ptrs[0]], [chunk_bytes] * (PAGES + 1)))
        int_list(got, PAGES + 1)
        assert got[:PAGES] == [chunk_bytes] * PAGES and got[PAGES] <= 0
        assert torch.equal(backend.buffer[PAGES * chunk_bytes:],
                           backend.buffer[:PAGES * chunk_bytes])

        time.sleep(LEASE_WAIT)
        assert int_list(store.batch_remove(keys), PAGES) == [0] * PAGES
        assert int_list(store.batch_is_exist(keys), PAGES) == [0] * PAGES
        assert store.unregister_buffer(backend.buffer.data_ptr()) == 0
    finally:
        store.close()


# ---------------------------------------------------------------- Mooncake's surface, as engines probe it

def test_surface_engines_touch_exists():
    """Every method / class the three engines call (docs/ENGINES.md), and the conventions they
    rely on that need no daemon."""
    for name in ("setup", "setup_dummy", "close", "put", "get", "put_parts", "put_from",
                 "batch_put_from", "batch_get_into", "batch_put_from_multi_buffers",
                 "batch_get_into_multi_buffers", "is_exist", "batch_is_exist", "get_size",
                 "get_buffer", "batch_get_buffer", "register_buffer", "unregister_buffer",
                 "get_hostname", "remove", "batch_remove", "remove_all", "get_replica_desc",
                 "batch_get_replica_desc"):
        assert callable(getattr(MooncakeDistributedStore, name)), name
    c = ReplicateConfig()
    assert c.replica_num == 1 and c.preferred_segment == "" and list(c.group_ids) == []
    for field in ("with_soft_pin", "with_hard_pin", "preferred_segments",
                  "prefer_alloc_in_same_node", "group_ids", "tenant_id"):
        assert hasattr(c, field), field
    with pytest.raises(RuntimeError):
        MooncakeHostMemAllocator().alloc(0)
