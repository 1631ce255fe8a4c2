#!/usr/bin/env python3
"""SGLang-shaped KV page traffic, standalone-storage mode against an embedded node, same bytes,
same run: 64 pages of 256 KiB in MooncakeHostMemAllocator memory, batch_put_from then
batch_get_into into a second allocation, ROUNDS times (keys force-removed between rounds).

- embedded: setup(global_segment_size=64MB) joined to the daemon's master, writes preferring
  this process's own segment (prefer_alloc_in_same_node): one memcpy each way;
- dummy: setup_dummy(pool, 16MB, daemon): the bytes go over loopback TCP into the daemon's
  segment and back (what an attached engine does here, see docs/PYTHON.md).

    build/bin/mooncaked --role standalone --listen 127.0.0.1:47351 --metrics_port 0 \
        --dram_size 128MiB --disk_dir /tmp/bench-standalone --disk_size 256MiB &
    MOONCAKE_LOG_LEVEL=warn PYTHONPATH=build/python python3 python/examples/bench_standalone.py 127.0.0.1:47351
"""
import ctypes
import os
import sys
import time

from mooncake_tier.store import MooncakeDistributedStore, MooncakeHostMemAllocator, ReplicateConfig

PAGE = 256 << 10
PAGES = 64
ROUNDS = 5


def run(store, label, config):
    alloc = MooncakeHostMemAllocator()
    size = PAGE * PAGES
    src, dst = alloc.alloc(size), alloc.alloc(size)
    assert store.register_buffer(src, size) == 0 and store.register_buffer(dst, size) == 0
    ctypes.memmove(src, os.urandom(size), size)
    keys = [f"bench-{label}-{i}" for i in range(PAGES)]
    srcs = [src + i * PAGE for i in range(PAGES)]
    dsts = [dst + i * PAGE for i in range(PAGES)]
    put_s = get_s = 0.0
    for _ in range(ROUNDS):
        ctypes.memset(dst, 0, size)
        t0 = time.perf_counter()
        assert store.batch_put_from(keys, srcs, [PAGE] * PAGES, config) == [0] * PAGES
        t1 = time.perf_counter()
        assert store.batch_get_into(keys, dsts, [PAGE] * PAGES) == [PAGE] * PAGES
        t2 = time.perf_counter()
        assert ctypes.string_at(dst, size) == ctypes.string_at(src, size)
        assert store.batch_remove(keys, True) == [0] * PAGES
        put_s += t1 - t0
        get_s += t2 - t1
    total = ROUNDS * size
    print(f"{label}: batch_put_from {total / put_s / 1e6:.0f} MB/s, "
          f"batch_get_into {total / get_s / 1e6:.0f} MB/s")
    alloc.free(src)
    alloc.free(dst)
    return put_s, get_s


if __name__ == "__main__":
    daemon = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    embedded = MooncakeDistributedStore()
    assert embedded.setup({"local_hostname": "127.0.0.1", "global_segment_size": "64MB",
                           "master_server_addr": daemon}) == 0
    local = ReplicateConfig()
    local.prefer_alloc_in_same_node = True
    e_put, e_get = run(embedded, "embedded", local)
    embedded.close()
    dummy = MooncakeDistributedStore()
    assert dummy.setup_dummy(PAGE * PAGES * 2, 16 << 20, daemon) == 0
    d_put, d_get = run(dummy, "dummy", ReplicateConfig())
    dummy.close()
    print(f"dummy / embedded time: put x{d_put / e_put:.2f}, get x{d_get / e_get:.2f}")
