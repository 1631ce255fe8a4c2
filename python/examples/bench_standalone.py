#!/usr/bin/env python3
"""SGLang-shaped KV page traffic, standalone-storage mode against an embedded node, same bytes,
same run: 16 MiB of pages (64 KiB and 1 MiB pages by default) in host memory, batch_put_from
then batch_get_into into a second allocation, ROUNDS times (keys force-removed between rounds),
every byte compared.

- embedded: setup(global_segment_size=64MB) joined to the daemon's master, writes preferring
  this process's own segment (prefer_alloc_in_same_node): one memcpy each way;
- shared: setup_dummy(pool, 16MB, daemon) with MooncakeHostMemAllocator pools: the daemon maps
  them and copies between its segment and the pool itself (one memcpy each way, in the daemon;
  checked: every transfer is counted by shared_pool_transfer_count);
- tcp: setup_dummy with the same pages in plain anonymous memory (not a shareable pool): the
  bytes go over loopback TCP (what every attached engine did before the pool was shared).

    build/bin/mooncaked --role standalone --listen 127.0.0.1:47351 --metrics_port 0 \
        --dram_size 128MiB --disk_dir /tmp/bench-standalone --disk_size 256MiB &
    MOONCAKE_LOG_LEVEL=warn PYTHONPATH=build/python python3 python/examples/bench_standalone.py \
        127.0.0.1:47351 [PAGE_KIB...]
"""
import ctypes
import mmap
import os
import sys
import time

from mooncake_tier.store import MooncakeDistributedStore, MooncakeHostMemAllocator, ReplicateConfig

TOTAL = 16 << 20
ROUNDS = int(os.environ.get("ROUNDS", "5"))


class SharedPool:
    def __init__(self, size):
        self.alloc = MooncakeHostMemAllocator()
        self.ptr = self.alloc.alloc(size)

    def free(self):
        self.alloc.free(self.ptr)


class PlainMemory:
    def __init__(self, size):
        self.map = mmap.mmap(-1, size)
        self.ptr = ctypes.addressof(ctypes.c_char.from_buffer(self.map))

    def free(self):
        pass  # the mapping stays for the process: a ctypes view may still point into it


def run(store, label, config, page, memory):
    pages = TOTAL // page
    src, dst = memory(TOTAL), memory(TOTAL)
    assert store.register_buffer(src.ptr, TOTAL) == 0 and store.register_buffer(dst.ptr, TOTAL) == 0
    ctypes.memmove(src.ptr, os.urandom(TOTAL), TOTAL)
    keys = [f"bench-{label}-{page}-{i}" for i in range(pages)]
    srcs = [src.ptr + i * page for i in range(pages)]
    dsts = [dst.ptr + i * page for i in range(pages)]
    put_s = get_s = 0.0
    for _ in range(ROUNDS):
        ctypes.memset(dst.ptr, 0, TOTAL)
        t0 = time.perf_counter()
        assert store.batch_put_from(keys, srcs, [page] * pages, config) == [0] * pages
        t1 = time.perf_counter()
        assert store.batch_get_into(keys, dsts, [page] * pages) == [page] * pages
        t2 = time.perf_counter()
        assert ctypes.string_at(dst.ptr, TOTAL) == ctypes.string_at(src.ptr, TOTAL)
        assert store.batch_remove(keys, True) == [0] * pages
        put_s += t1 - t0
        get_s += t2 - t1
    total = ROUNDS * TOTAL
    print(f"  {label:8} batch_put_from {total / put_s / 1e6:6.0f} MB/s   "
          f"batch_get_into {total / get_s / 1e6:6.0f} MB/s")
    store.unregister_buffer(src.ptr)
    store.unregister_buffer(dst.ptr)
    src.free()
    dst.free()
    return put_s, get_s


def bench(daemon, page):
    print(f"pages of {page >> 10} KiB, {TOTAL >> 20} MiB a round, {ROUNDS} rounds:")
    embedded = MooncakeDistributedStore()
    assert embedded.setup({"local_hostname": "127.0.0.1", "global_segment_size": "64MB",
                           "master_server_addr": daemon}) == 0
    local = ReplicateConfig()
    local.prefer_alloc_in_same_node = True
    e_put, e_get = run(embedded, "embedded", local, page, SharedPool)
    embedded.close()
    dummy = MooncakeDistributedStore()
    assert dummy.setup_dummy(TOTAL * 2, 16 << 20, daemon) == 0
    s_put, s_get = run(dummy, "shared", ReplicateConfig(), page, SharedPool)
    shared = dummy.shared_pool_transfer_count()
    assert shared == 2 * ROUNDS * (TOTAL // page), shared  # every page through the pool
    t_put, t_get = run(dummy, "tcp", ReplicateConfig(), page, PlainMemory)
    assert dummy.shared_pool_transfer_count() == shared  # none of these
    dummy.close()
    print(f"  time / embedded: shared put x{s_put / e_put:.2f} get x{s_get / e_get:.2f}; "
          f"tcp put x{t_put / e_put:.2f} get x{t_get / e_get:.2f}")


if __name__ == "__main__":
    daemon = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    for kib in [int(a) for a in sys.argv[2:]] or [64, 1024]:
        bench(daemon, kib << 10)
