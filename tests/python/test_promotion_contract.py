"""The RFC's promise through the Python module, as an engine sees it: with default knobs (only
offload and promotion_on_hit named), LOCAL_DISK-only keys read promotion_admission_threshold
times are in MEMORY within a second, the keys nobody reads stay on LOCAL_DISK, a batch read
brings its blocks back together, and `mooncakectl stat` says why. Tiers are read with
`mooncakectl --json stat`, which is not an access (a Python read would count toward
promotion)."""
import json
import os
import subprocess
import time

import pytest

from conftest import MOONCAKED, Master, make_store, wait_for

MB = 1 << 20
CTL = os.path.join(os.path.dirname(MOONCAKED), "mooncakectl") if MOONCAKED else ""
SCALE = int(os.environ.get("MOONCAKE_TEST_TIME_SCALE", "1") or 1)


def ctl(master, *args):
    out = subprocess.run([CTL, "--master", master.address, "--json", *args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def tiers(master, key):
    return ctl(master, "stat", key)["tiers"]


@pytest.fixture(scope="module")
def rfc_master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("rfc"), "--enable_offload", "--offload_on_evict",
               "--promotion_on_hit")
    yield m
    m.stop()


@pytest.fixture
def full_store(rfc_master, tmp_path):
    """A 16 MiB segment over a LOCAL_DISK, overflowed with 40 values of 1 MiB."""
    store = make_store(rfc_master.address, segment="16MB", local_buffer="8MB",
                       enable_ssd_offload="true", ssd_offload_path=str(tmp_path / "ssd"),
                       ssd_offload_size="128MB")
    prefix = f"rfc-{os.getpid()}-{time.monotonic_ns()}/"
    values = {}
    for i in range(40):
        values[f"{prefix}{i:02d}"] = os.urandom(MB)
        assert store.put(f"{prefix}{i:02d}", values[f"{prefix}{i:02d}"]) == 0
    time.sleep(0.3)  # the master's 200 ms read leases of the puts' checks lapse
    yield store, rfc_master, prefix, values
    store.close()


def disk_only(master, prefix):
    return [o["key"] for o in ctl(master, "ls", "--prefix", prefix, "--limit", "1000")
            if o["tiers"] == ["LOCAL_DISK"]]


def test_hot_disk_keys_are_in_memory_within_a_second(full_store):
    store, master, prefix, values = full_store
    cold = wait_for(lambda: disk_only(master, prefix) if len(disk_only(master, prefix)) >= 15
                    else None, 10)
    assert cold and len(cold) >= 15, cold
    hot, rest = cold[:5], cold[5:]
    threshold = ctl(master, "tune", "get", "promotion_admission_threshold")[
        "promotion_admission_threshold"]
    for _ in range(threshold + 1):
        for key in hot:
            assert store.get(key) == values[key]
    deadline = time.monotonic() + 1.0 * SCALE
    for key in hot:
        while tiers(master, key)[0] != "MEMORY":
            assert time.monotonic() < deadline, (key, ctl(master, "stat", key))
            time.sleep(0.02)
    for key in rest:
        assert tiers(master, key) == ["LOCAL_DISK"], key
    decision = ctl(master, "stat", hot[0])["last_promotion"]
    assert decision["outcome"] == "completed" and decision["refused"] is False
    assert decision["reads"] >= decision["threshold"] == threshold
    for key in hot:
        assert store.get(key) == values[key]


def test_a_batch_read_brings_its_blocks_back_together(full_store):
    store, master, prefix, values = full_store
    cold = wait_for(lambda: disk_only(master, prefix) if len(disk_only(master, prefix)) >= 15
                    else None, 10)
    request = sorted(cold)[:6]  # a request's blocks, in prefix order
    for _ in range(2):
        got = store.get_batch(request)
        assert got == [values[k] for k in request]
    deadline = time.monotonic() + 1.0 * SCALE
    for key in request:
        while tiers(master, key)[0] != "MEMORY":
            assert time.monotonic() < deadline, (key, ctl(master, "stat", key))
            time.sleep(0.02)


def test_attempts_are_the_sum_of_their_outcomes(rfc_master):
    text = subprocess.run([CTL, "--master", rfc_master.address, "metrics"], check=True,
                          capture_output=True, text=True).stdout  # one scrape
    values = {}
    for line in text.splitlines():
        if not line.startswith("#") and " " in line:
            name, value = line.rsplit(" ", 1)
            values[name.removeprefix("mooncake_")] = float(value)
    outcomes = values["promotion_queued_total"] + values["promotion_deduplicated_total"]
    for reason in ("admission_gated", "watermark_gated", "no_room", "victims_hotter",
                   "gate_refused", "queue_full", "stale"):
        outcomes += values[f'promotion_failed_total{{reason="{reason}"}}']
    assert values["promotion_attempts_total"] > 0
    assert values["promotion_attempts_total"] == outcomes
