#!/usr/bin/env python3
"""1 MiB put / get_into round trips through MooncakeDistributedStore: an embedded node whose
replicas are in this process (memcpy) against a pure client whose replicas are in that node
(TCP data channel).

    build/bin/mooncaked --role master --listen 127.0.0.1:47341 --metrics_port 0 &
    MOONCAKE_LOG_LEVEL=warn PYTHONPATH=build/python python3 python/examples/bench_put_get.py 127.0.0.1:47341
"""
import ctypes
import os
import sys
import time

from mooncake_tier.store import MooncakeDistributedStore

N = 200
MB = 1 << 20


def run(master, segment, label):
    store = MooncakeDistributedStore()
    rc = store.setup({"local_hostname": "127.0.0.1", "global_segment_size": segment,
                      "local_buffer_size": "64MB", "master_server_addr": master})
    assert rc == 0, rc
    buf = (ctypes.c_ubyte * MB)()
    ptr = ctypes.addressof(buf)
    store.register_buffer(ptr, MB)
    value = os.urandom(MB)
    t0 = time.perf_counter()
    for i in range(N):
        assert store.put(f"{label}{i}", value) == 0
    t1 = time.perf_counter()
    for i in range(N):
        assert store.get_into(f"{label}{i}", ptr, MB) == MB
    t2 = time.perf_counter()
    print(f"{label}: put {N * MB / (t1 - t0) / 1e6:.0f} MB/s ({(t1 - t0) / N * 1e3:.2f} ms/op), "
          f"get_into {N * MB / (t2 - t1) / 1e6:.0f} MB/s ({(t2 - t1) / N * 1e3:.2f} ms/op)")
    return store


if __name__ == "__main__":
    master = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
    embedded = run(master, "512MB", "embedded")
    client = run(master, 0, "client")  # its puts land in the embedded node: TCP both ways
    client.close()
    embedded.close()
