"""Mooncake's session API (its PR #2881) against real daemons (issue 33): what vLLM's Mooncake
store connector takes when the store has all seven methods, and what SGLang's direct linker
loads with. Objects are written layer by layer into put sessions and read back layer by layer
through get sessions into fresh buffers, byte for byte, against a master with embedded nodes
and against a standalone daemon; the error codes are Mooncake's."""
import ctypes
import json
import os
import subprocess

import pytest

from conftest import MOONCAKED, Master, Standalone, make_store, wait_for
from mooncake_tier.store import MooncakeDistributedStore, ReplicateConfig

SESSION_METHODS = (
    "batch_put_session_start",
    "batch_put_from_multi_buffer_ranges",
    "batch_put_session_end",
    "batch_put_session_revoke",
    "batch_get_session_start",
    "batch_get_session_start_with_sources",
    "batch_get_into_multi_buffer_ranges",
    "batch_get_session_end",
)
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
OBJECT_ALREADY_EXISTS = -705


@pytest.fixture(params=["cluster", "standalone"])
def store(request, tmp_path):
    if request.param == "cluster":
        daemon = Master(tmp_path)
        s = make_store(daemon.address, segment="32MB")
    else:
        daemon = Standalone(tmp_path)
        s = MooncakeDistributedStore()
        assert s.setup_dummy(64 << 20, 16 << 20, daemon.address) == 0
    yield s
    s.close()
    daemon.stop()


def registered(store, size, fill=None):
    buf = ctypes.create_string_buffer(size)
    if fill is not None:
        ctypes.memmove(buf, fill, size)
    assert store.register_buffer(ctypes.addressof(buf), size) == 0
    return buf


def layer_call(keys, base, object_size, page, layer):
    """One layer's key-major ranges, as a layer-wise engine builds them: key i's layer slice
    lives at base + i * object_size + layer * page, and at layer * page of its object."""
    ptrs = [[base + i * object_size + layer * page] for i in range(len(keys))]
    sizes = [[page] for _ in keys]
    offsets = [[layer * page] for _ in keys]
    return keys, ptrs, sizes, offsets


def test_the_store_has_every_session_method():
    s = MooncakeDistributedStore()
    assert all(callable(getattr(s, m, None)) for m in SESSION_METHODS)


def test_layer_by_layer_put_and_get_bring_back_every_byte(store):
    keys = [f"lw-{i}" for i in range(64)]
    layers, page = 8, 4096
    object_size = layers * page
    source = os.urandom(len(keys) * object_size)
    src = registered(store, len(source), source)
    dst = registered(store, len(source))
    assert store.batch_put_session_start(keys, [object_size] * len(keys), ReplicateConfig()) == \
        [0] * len(keys)
    assert store.batch_is_exist(keys) == [0] * len(keys)  # nothing readable before the end
    for layer in range(layers):
        got = store.batch_put_from_multi_buffer_ranges(
            *layer_call(keys, ctypes.addressof(src), object_size, page, layer))
        assert got == [page] * len(keys)
    assert store.batch_put_session_end(keys) == [0] * len(keys)
    assert store.batch_is_exist(keys) == [1] * len(keys)
    assert store.batch_get_session_start(keys) == [0] * len(keys)
    for layer in reversed(range(layers)):  # any order, any number of times
        got = store.batch_get_into_multi_buffer_ranges(
            *layer_call(keys, ctypes.addressof(dst), object_size, page, layer))
        assert got == [page] * len(keys)
    assert store.batch_get_session_end(keys) == 0
    assert dst.raw == source
    # The whole object reads back as one value too.
    assert store.get(keys[5]) == source[5 * object_size:6 * object_size]
    assert store.batch_remove(keys, force=True) == [0] * len(keys)


def test_several_ranges_of_one_key_in_one_call(store):
    value = os.urandom(3 * 1000)
    src = registered(store, len(value), value)
    base = ctypes.addressof(src)
    assert store.batch_put_session_start(["parts"], [len(value)]) == [0]
    # The three thirds, given last first, from scattered places.
    got = store.batch_put_from_multi_buffer_ranges(
        ["parts"], [[base + 2000, base, base + 1000]], [[1000, 1000, 1000]],
        [[2000, 0, 1000]])
    assert got == [3000]
    assert store.batch_put_session_end(["parts"]) == [0]
    dst = registered(store, 600)
    got = store.batch_get_into_multi_buffer_ranges(
        ["parts"], [[ctypes.addressof(dst), ctypes.addressof(dst) + 300]], [[300, 300]],
        [[2700, 10]])
    assert got == [600]
    assert dst.raw == value[2700:3000] + value[10:310]


def test_bytes_no_range_gave_read_as_zeros(store):
    # Twice: the second session reuses the first one's buffer, whose bytes lie in its gaps
    # and must not show through.
    for fill, at in ((b"\xaa", (100, 4000)), (b"\x55", (2000, 6000))):
        src = registered(store, 300, fill * 300)
        assert store.batch_put_session_start(["holes"], [8192]) == [0]
        got = store.batch_put_from_multi_buffer_ranges(
            ["holes"], [[ctypes.addressof(src), ctypes.addressof(src) + 100]], [[200, 200]],
            [list(at)])  # two ranges, leaving three gaps
        assert got == [400]
        assert store.batch_put_session_end(["holes"]) == [0]
        expected = bytearray(8192)
        for offset in at:
            expected[offset:offset + 200] = fill * 200
        assert store.get("holes") == bytes(expected)
        assert store.remove("holes", force=True) == 0


def test_session_errors_are_mooncakes_codes(store):
    value = os.urandom(8192)
    src = registered(store, len(value), value)
    base = ctypes.addressof(src)
    assert store.put("there", b"x") == 0
    assert store.batch_put_session_start(["there", "new"], [10, 8192]) == \
        [OBJECT_ALREADY_EXISTS, 0]
    assert store.batch_put_session_start(["new"], [8192]) == [INVALID_PARAMS]  # open already
    # A range past the object, or of a key with no session, takes nothing.
    assert store.batch_put_from_multi_buffer_ranges(
        ["new", "nosession"], [[base], [base]], [[4096], [4096]], [[8000], [0]]) == \
        [INVALID_PARAMS, INVALID_PARAMS]
    assert store.batch_put_from_multi_buffer_ranges(["new"], [[base]], [[100]],
                                                     [[4096, 0]]) == [INVALID_PARAMS]
    # Revoked: the key is free again and nothing of it is readable.
    assert store.batch_put_session_revoke(["new", "nosession"]) == [0, INVALID_PARAMS]
    assert store.is_exist("new") == 0
    assert store.batch_put_session_end(["new"]) == [INVALID_PARAMS]
    assert store.batch_put_session_start(["new"], [8192]) == [0]
    assert store.batch_put_from_multi_buffer_ranges(["new"], [[base]], [[8192]], [[0]]) == [8192]
    assert store.batch_put_session_end(["new"]) == [0]
    assert store.get("new") == value
    # Get sessions: a missing key, and a range read without a session (looked up then).
    assert store.batch_get_session_start(["new", "missing"]) == [0, OBJECT_NOT_FOUND]
    dst = registered(store, 100)
    assert store.batch_get_into_multi_buffer_ranges(
        ["there", "missing"], [[ctypes.addressof(dst)], [ctypes.addressof(dst)]], [[1], [1]],
        [[0], [0]]) == [1, OBJECT_NOT_FOUND]
    assert dst.raw[:1] == b"x"
    assert store.batch_get_into_multi_buffer_ranges(
        ["new"], [[ctypes.addressof(dst)]], [[100]], [[8100]]) == [INVALID_PARAMS]  # past it
    # A buffer that runs past its registered region is refused before a byte moves.
    assert store.batch_get_into_multi_buffer_ranges(
        ["new"], [[ctypes.addressof(dst) + 50]], [[100]], [[0]]) == [INVALID_PARAMS]
    assert store.batch_get_session_end(["new", "missing"]) == 0


def test_a_key_removed_during_a_get_session_is_not_read_stale(store):
    value = os.urandom(4096)
    assert store.put("gone", value) == 0
    assert store.batch_get_session_start(["gone"]) == [0]
    assert store.remove("gone", force=True) == 0
    assert store.put("gone", b"y" * 4096) == 0  # a new incarnation under the same key
    dst = registered(store, 4096)
    got = store.batch_get_into_multi_buffer_ranges(["gone"], [[ctypes.addressof(dst)]],
                                                   [[4096]], [[0]])
    assert got == [4096] and dst.raw == b"y" * 4096  # the session's look was renewed
    assert store.batch_get_session_end(["gone"]) == 0


def test_put_sessions_carry_the_config(tmp_path):
    """group_ids and pins reach the master as with batch_put_from (mooncakectl stat)."""
    m = Master(tmp_path)
    s = make_store(m.address, segment="32MB")
    try:
        c = ReplicateConfig()
        c.group_ids = ["g1", "g2"]
        c.with_hard_pin = True
        assert s.batch_put_session_start(["grouped-1", "grouped-2"], [4096, 4096], c) == [0, 0]
        assert s.batch_put_session_end(["grouped-1", "grouped-2"]) == [0, 0]
        ctl = os.path.join(os.path.dirname(MOONCAKED), "mooncakectl")
        for key, group in (("grouped-1", "g1"), ("grouped-2", "g2")):
            st = json.loads(subprocess.run([ctl, "--master", m.address, "--json", "stat", key],
                                           check=True, capture_output=True, text=True).stdout)
            assert st["group"] == group and st["hard_pinned"]
        c.group_ids = ["only-one"]  # one per key, or the call is refused
        assert s.batch_put_session_start(["g-a", "g-b"], [10, 10], c) == [-600, -600]
    finally:
        s.close()
        m.stop()


def stat(daemon, key):
    ctl = os.path.join(os.path.dirname(MOONCAKED), "mooncakectl")
    return json.loads(subprocess.run([ctl, "--master", daemon.address, "--json", "stat", key],
                                     check=True, capture_output=True, text=True).stdout)


def test_session_start_with_sources_names_the_tier_each_key_is_read_from(tmp_path):
    """SGLang's direct linker asks where a load comes from (for its metrics): "memory",
    "local_disk", or None for a key not found, beside the codes of batch_get_session_start."""
    d = Standalone(tmp_path, dram="4MiB", disk="64MiB")
    s = make_store(d.address, segment=0)
    try:
        keys = [f"src-{i}" for i in range(12)]
        value = {k: (k.encode() * (1 << 20))[:1 << 20] for k in keys}  # 12 MiB over 4 MiB
        for k in keys:
            assert s.put(k, value[k]) == 0

        def tiers(key):  # inspection: not a read, so nothing moves
            return {r["tier"] for r in stat(d, key)["replicas"]}
        on_disk = wait_for(lambda: [k for k in keys if tiers(k) == {"LOCAL_DISK"}], 10)
        assert on_disk, "DRAM pressure moved no key to LOCAL_DISK"
        in_memory = [k for k in keys if "MEMORY" in tiers(k)]
        assert in_memory
        codes, sources = s.batch_get_session_start_with_sources(
            [in_memory[-1], on_disk[0], "src-missing"])
        assert codes == [0, 0, OBJECT_NOT_FOUND]
        assert sources == ["memory", "local_disk", None]
        # The sessions read as batch_get_session_start's do.
        buf = registered(s, 4096)
        assert s.batch_get_into_multi_buffer_ranges(
            [on_disk[0]], [[ctypes.addressof(buf)]], [[4096]], [[0]]) == [4096]
        assert buf.raw == value[on_disk[0]][:4096]
        assert s.batch_get_session_end([in_memory[-1], on_disk[0]]) == 0
    finally:
        s.close()
        d.stop()


def test_close_gives_open_put_sessions_back(tmp_path):
    m = Master(tmp_path)
    a = make_store(m.address, segment=0)
    b = make_store(m.address, segment="32MB")
    try:
        on_b = ReplicateConfig()
        on_b.preferred_segment = b.get_hostname()  # outlives a: only the revoke frees it
        assert a.batch_put_session_start(["open"], [1 << 20], on_b) == [0]
        a.close()  # the session is revoked: the key is free for another writer
        assert b.put("open", b"z") == 0 and b.get("open") == b"z"
    finally:
        b.close()
        m.stop()
