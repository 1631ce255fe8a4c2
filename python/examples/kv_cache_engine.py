#!/usr/bin/env python3
"""How an inference engine uses MooncakeDistributedStore: KV-cache blocks keyed by the hash of
their token prefix, saved from and loaded into one registered buffer, with existence checked
first so blocks already in the store are reused instead of recomputed.

    PYTHONPATH=<build>/python python3 python/examples/kv_cache_engine.py 127.0.0.1:50051
"""
import ctypes
import hashlib
import sys

from mooncake_tier.store import MooncakeDistributedStore

BLOCK = 64 * 1024  # bytes of KV cache per block of tokens


def block_keys(tokens, block_tokens=16):
    """One key per full block: the hash of every token up to the block's end."""
    keys, h = [], hashlib.sha256()
    for i in range(0, len(tokens) - len(tokens) % block_tokens, block_tokens):
        h.update(bytes(str(tokens[i:i + block_tokens]), "ascii"))
        keys.append("kv_" + h.hexdigest()[:32])
    return keys


def main(master):
    store = MooncakeDistributedStore()
    # This process contributes 64 MB of DRAM to the cluster (an embedded node); metadata
    # server, protocol and device only mean something to Mooncake's transfer engine.
    rc = store.setup("127.0.0.1", "P2PHANDSHAKE", 64 * 1024 * 1024, 16 * 1024 * 1024, "tcp",
                     "", master)
    if rc != 0:
        sys.exit(f"setup failed: {rc}")
    # The engine's KV pool: registered once, read and written in place.
    pool = (ctypes.c_ubyte * (BLOCK * 8))()
    base = ctypes.addressof(pool)
    store.register_buffer(base, BLOCK * 8)
    try:
        # Request 1: 4 blocks, nothing cached yet -> compute and save them.
        first = block_keys(list(range(64)))
        assert store.batch_is_exist(first) == [0] * 4
        for i in range(4):
            ctypes.memset(base + i * BLOCK, i + 1, BLOCK)  # "compute" block i
        saved = store.batch_put_from(first, [base + i * BLOCK for i in range(4)], [BLOCK] * 4)
        assert saved == [0] * 4, saved

        # Request 2 shares the 64-token prefix and adds 64 more tokens.
        second = block_keys(list(range(128)))
        hits = store.batch_is_exist(second)
        reused = sum(1 for h in hits if h == 1)
        ctypes.memset(base, 0, BLOCK * 8)
        loaded = store.batch_get_into(second[:reused], [base + i * BLOCK for i in range(reused)],
                                      [BLOCK] * reused)
        assert loaded == [BLOCK] * reused, loaded
        assert all(pool[i * BLOCK] == i + 1 for i in range(reused))
        print(f"reused {reused} of {len(second)} blocks")
    finally:
        store.unregister_buffer(base)
        store.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051")
