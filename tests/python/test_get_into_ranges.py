"""get_into_ranges against real daemons, every byte checked: ranges of values land where they
are asked, straight from the replica (docs/PYTHON.md: each range read at its offset into the
registered buffer, no copy of the value in this module), from the store's own embedded node
(memcpy out of its segment), from another node over the TCP data channel, and from a
LOCAL_DISK replica. Bytes outside the ranges stay as they were."""
import contextlib
import ctypes
import os
import random

from conftest import Master, make_store
from test_tiers import TIER_FLAGS, disk_store, overflow, wait_cold

SENTINEL = 0xEE


def pool(store, size):
    buf = (ctypes.c_ubyte * size)()
    ctypes.memset(buf, SENTINEL, size)
    ptr = ctypes.addressof(buf)
    assert store.register_buffer(ptr, size) == 0
    return buf, ptr


def plan(rng, values, nbuf, size, per_buf):
    """Random ranges (src overlapping, keys repeated across buffers) of non-overlapping
    destinations: (keys, dsts, srcs, sizes) per buffer, and the expected bytes."""
    names = sorted(values)
    all_keys, all_dst, all_src, all_size, expect = [], [], [], [], []
    for _ in range(nbuf):
        cursor = 0
        keys, dsts, srcs, sizes = [], [], [], []
        want = {}
        for key in rng.sample(names, per_buf):
            v = values[key]
            d, s, n = [], [], []
            for _ in range(rng.randint(1, 4)):
                length = rng.choice([0, 1, 7, 4096, rng.randint(1, len(v))])
                length = min(length, len(v))
                src = rng.randint(0, len(v) - length)
                cursor += rng.randint(0, 64)  # gaps that must stay untouched
                if cursor + length > size:
                    break
                d.append(cursor)
                s.append(src)
                n.append(length)
                want[cursor] = v[src:src + length]
                cursor += length
            keys.append(key)
            dsts.append(d)
            srcs.append(s)
            sizes.append(n)
        all_keys.append(keys)
        all_dst.append(dsts)
        all_src.append(srcs)
        all_size.append(sizes)
        expect.append(want)
    return all_keys, all_dst, all_src, all_size, expect


def check(buf, size, want):
    image = bytearray([SENTINEL]) * size
    for at, data in want.items():
        image[at:at + len(data)] = data
    assert bytes(buf) == bytes(image)


def read_and_check(store, values, rng, nbuf=3, size=4 << 20, per_buf=6):
    pools = [pool(store, size) for _ in range(nbuf)]
    keys, dsts, srcs, sizes, expect = plan(rng, values, nbuf, size, per_buf)
    res = store.get_into_ranges([p for _, p in pools], keys, dsts, srcs, sizes)
    assert res == [[list(n) for n in buf_sizes] for buf_sizes in sizes]
    for (buf, ptr), want in zip(pools, expect):
        check(buf, size, want)
        assert store.unregister_buffer(ptr) == 0


def test_ranges_from_own_segment_and_over_tcp(master):
    writer = make_store(master.address, segment="32MB")
    remote = make_store(master.address, segment=0)  # no segment: reads cross the data channel
    try:
        rng = random.Random(33)
        values = {f"rg/{i}": os.urandom(rng.choice([1, 100, 4096, 65537, 1 << 20]))
                  for i in range(16)}
        for k, v in values.items():
            assert writer.put(k, v) == 0
        for store in (writer, remote):
            for _ in range(3):
                read_and_check(store, values, rng)
        # A missing key and a range past the value fail alone; the others land.
        buf, ptr = pool(remote, 1 << 16)
        v = values["rg/3"]
        res = remote.get_into_ranges(
            [ptr], [["rg/none", "rg/3"]], [[[0], [100, 10]]], [[[0], [len(v), 0]]],
            [[[4], [1, min(5, len(v))]]])
        assert res[0][0][0] < 0 and res[0][1][0] < 0 and res[0][1][1] == min(5, len(v))
        assert bytes(buf[10:10 + min(5, len(v))]) == v[:5]
        assert bytes(buf[0:4]) == bytes([SENTINEL]) * 4
        assert bytes(buf[100:101]) == bytes([SENTINEL])
        assert remote.unregister_buffer(ptr) == 0
    finally:
        remote.close()
        writer.close()


@contextlib.contextmanager
def cold_values(tmp_path, prefix):
    """A store with a disk tier (promotion on hit off) and {key: value} of its LOCAL_DISK-only
    keys after overflowing its DRAM."""
    m = Master(tmp_path, *TIER_FLAGS, "--promotion_on_hit=false")
    try:
        s = disk_store(m, tmp_path)
        try:
            ref = overflow(s, prefix)
            cold = wait_cold(s, ref)
            assert cold, "no LOCAL_DISK-only key after overflowing DRAM"
            yield s, {k: ref[k] for k in cold}
        finally:
            s.close()
    finally:
        m.stop()


def test_ranges_from_local_disk(tmp_path):
    with cold_values(tmp_path, "rgd") as (s, cold):
        rng = random.Random(7)
        values = dict(list(cold.items())[:6])
        before = s.get_offload_rpc_read_count()
        read_and_check(s, values, rng, nbuf=2, per_buf=len(values))
        assert s.get_offload_rpc_read_count() > before  # served by the disk tier


def test_scattered_ranges_of_a_disk_copy_cost_one_disk_read(tmp_path):
    """A LOCAL_DISK copy is read whole at the node (its checksum covers the whole value): a
    key's scattered ranges with small gaps between them are one read of it, not one each;
    ranges far apart (a gap larger than what is asked) stay separate reads."""
    with cold_values(tmp_path, "rgs") as (s, cold):
        key, value = next(iter(cold.items()))
        size = 1 << 20
        buf, ptr = pool(s, size)
        # Eight 4 KiB parts every 8 KiB (gaps of 4 KiB), given out of order.
        srcs = [j * 8192 for j in (3, 0, 7, 5, 1, 6, 2, 4)]
        dsts = [100 + j * 5000 for j in range(len(srcs))]
        before = s.get_offload_rpc_read_count()
        res = s.get_into_ranges([ptr], [[key]], [[dsts]], [[srcs]], [[[4096] * 8]])
        assert res == [[[4096] * 8]]
        assert s.get_offload_rpc_read_count() - before == 1
        check(buf, size, {d: value[o:o + 4096] for d, o in zip(dsts, srcs)})
        # Two small parts at the ends of a 1 MiB value: two reads, no 1 MiB gap moved.
        ctypes.memset(buf, SENTINEL, size)
        before = s.get_offload_rpc_read_count()
        ends = [0, len(value) - 16]
        res = s.get_into_ranges([ptr], [[key]], [[[0, 64]]], [[ends]], [[[16, 16]]])
        assert res == [[[16, 16]]]
        assert s.get_offload_rpc_read_count() - before == 2
        check(buf, size, {0: value[:16], 64: value[-16:]})
        assert s.unregister_buffer(ptr) == 0


def test_adjacent_ranges_in_any_order_land_in_their_places(master):
    """A key's ranges that follow one another in the value go as one read (vectored into
    their places): given shuffled, with a repeated and an overlapping range among them."""
    writer = make_store(master.address, segment="32MB")
    remote = make_store(master.address, segment=0)
    try:
        value = os.urandom(8 * 4096 + 100)
        assert writer.put("rg-adj", value) == 0
        parts = [(j * 4096, 4096) for j in range(8)] + [(8 * 4096, 100)]
        parts += [(4096, 4096), (4096 + 10, 50)]  # again, and inside another
        rng = random.Random(5)
        rng.shuffle(parts)
        for store in (writer, remote):
            size = 1 << 17
            buf, ptr = pool(store, size)
            dsts, want, at = [], {}, 0
            for src, n in parts:
                at += 64  # scattered: a gap before each
                dsts.append(at)
                want[at] = value[src:src + n]
                at += n
            res = store.get_into_ranges([ptr], [["rg-adj"]], [[dsts]],
                                        [[[s for s, _ in parts]]], [[[n for _, n in parts]]])
            assert res == [[[n for _, n in parts]]]
            check(buf, size, want)
            assert store.unregister_buffer(ptr) == 0
    finally:
        remote.close()
        writer.close()
