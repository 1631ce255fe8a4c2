"""ReplicateConfig's pins honoured through the module against a real daemon (issue 33):
with_soft_pin / soft_pin_ttl_ms and with_hard_pin reach the master, `mooncakectl stat` shows
them, a soft-pinned object outlives colder unpinned ones, a hard-pinned one is never evicted,
and a hard pin past hard_pin_max_ratio is refused with Mooncake's no-space code (-200)."""
import ctypes
import json
import os
import subprocess

import pytest

from conftest import MOONCAKED, Master, make_store
from mooncake_tier.store import ReplicateConfig

CTL = os.path.join(os.path.dirname(MOONCAKED), "mooncakectl") if MOONCAKED else ""
NO_AVAILABLE_HANDLE = -200


def stat(master, key):
    out = subprocess.run([CTL, "--master", master.address, "--json", "stat", key],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def exists(master, key):
    out = subprocess.run([CTL, "--master", master.address, "--json", "stat", key],
                         capture_output=True, text=True)
    return out.returncode == 0


@pytest.fixture
def small(tmp_path):
    # No offload: an evicted object is gone, which the test can see.
    m = Master(tmp_path, "--enable_offload=false", "--hard_pin_max_ratio", "0.25")
    s = make_store(m.address, segment="4MB")
    yield m, s
    s.close()
    m.stop()


def test_pins_reach_the_master_and_show_in_stat(small):
    m, s = small
    soft = ReplicateConfig()
    soft.with_soft_pin = True
    soft.soft_pin_ttl_ms = 600000
    assert s.put("soft", b"s" * 1000, soft) == 0
    hard = ReplicateConfig()
    hard.with_hard_pin = True
    assert s.put_batch(["hard1", "hard2"], [b"h" * 4096, b"h" * 4096], hard) == 0
    assert s.put("plain", b"p") == 0
    st = stat(m, "soft")
    assert st["soft_pinned"] and not st["hard_pinned"]
    assert 500000 < st["soft_pin_ms_remaining"] <= 600000
    for key in ("hard1", "hard2"):
        st = stat(m, key)
        assert st["hard_pinned"] and not st["soft_pinned"]
    st = stat(m, "plain")
    assert not st["soft_pinned"] and not st["hard_pinned"] and st["soft_pin_ms_remaining"] == 0
    assert m.metric("hard_pinned_bytes") == 2 * 4096
    table = subprocess.run([CTL, "--master", m.address, "stat", "soft"], check=True,
                           capture_output=True, text=True).stdout
    assert "soft," in table and "remaining" in table


def test_soft_pinned_outlives_and_hard_pinned_survives_eviction(small):
    m, s = small
    block = 256 * 1024  # 16 of them fill the 4 MB segment
    soft = ReplicateConfig()
    soft.with_soft_pin = True
    hard = ReplicateConfig()
    hard.with_hard_pin = True
    assert s.put("pinned-soft", b"s" * block, soft) == 0  # the coldest of all
    assert s.put("pinned-hard", b"h" * block, hard) == 0
    for i in range(40):  # 2.5 segments of unpinned writes
        assert s.put(f"cold-{i}", b"c" * block) == 0
    assert exists(m, "pinned-soft") and exists(m, "pinned-hard")
    assert not exists(m, "cold-0")
    assert s.get("pinned-soft") == b"s" * block
    assert s.get("pinned-hard") == b"h" * block


def test_hard_pin_past_the_cap_is_refused(small):
    m, s = small
    hard = ReplicateConfig()
    hard.with_hard_pin = True
    block = 512 * 1024  # the cap is 1 MB (0.25 of 4 MB): two fit
    assert s.put("h1", b"1" * block, hard) == 0
    assert s.put("h2", b"2" * block, hard) == 0
    assert s.put("h3", b"3" * block, hard) == NO_AVAILABLE_HANDLE
    assert not exists(m, "h3")
    assert s.put("h3", b"3" * block) == 0  # unpinned, it fits


@pytest.mark.parametrize("mode", ["cluster", "standalone"])
def test_a_batch_read_lends_the_last_blocks_soft_pin_to_its_prefix(tmp_path, mode):
    """A batch read is a request's prefix in order: the live soft pin of its last block keeps
    the blocks before it pinned as long, against a master and against a standalone daemon
    (tests/integration/prefix_cover_test.cc covers the daemon's pipelined by-key reads)."""
    from conftest import Standalone
    daemon = Master(tmp_path) if mode == "cluster" else Standalone(tmp_path)
    s = make_store(daemon.address, segment="4MB" if mode == "cluster" else 0)
    ptr = 0
    try:
        soft = ReplicateConfig()
        soft.with_soft_pin = True
        soft.soft_pin_ttl_ms = 600000
        assert s.put("prefix/0", b"a" * 4096) == 0
        assert s.put("prefix/1", b"b" * 4096) == 0
        assert s.put("prefix/2", b"c" * 4096, soft) == 0
        assert not stat(daemon, "prefix/0")["soft_pinned"]
        # The engines' zero-copy batch read.
        buf = ctypes.create_string_buffer(3 * 4096)
        ptr = ctypes.addressof(buf)
        assert s.register_buffer(ptr, 3 * 4096) == 0
        got = s.batch_get_into(["prefix/0", "prefix/1", "prefix/2"],
                               [ptr, ptr + 4096, ptr + 8192], [4096] * 3)
        assert got == [4096] * 3 and buf.raw[::4096] == b"abc"
        for key in ("prefix/0", "prefix/1"):
            st = stat(daemon, key)
            assert st["soft_pinned"], (key, st)
            assert 500000 < st["soft_pin_ms_remaining"] <= 600000
        # A batch of unpinned blocks lends nothing.
        assert s.put("other/0", b"x" * 4096) == 0 and s.put("other/1", b"y" * 4096) == 0
        s.batch_get_buffer(["other/0", "other/1"])
        assert not stat(daemon, "other/0")["soft_pinned"]
    finally:
        s.unregister_buffer(ptr)
        s.close()
        daemon.stop()
