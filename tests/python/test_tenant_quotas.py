"""Tenants' quotas as engines meet them (issue 34): two engines set up with their own tenant_id
on one store whose policy file gives each a MEMORY quota. One bursts past its quota: only its
own pages go to LOCAL_DISK, the other's hot pages stay in MEMORY; an engine whose tenant the
policy does not name cannot write. Tiers are read with `mooncakectl --tenant T --json stat`
(not an access), the figures with `mooncakectl tenant ls --json`."""
import json
import os
import subprocess
import time

import pytest

from conftest import MOONCAKED, Standalone, make_store

MB = 1 << 20
CTL = os.path.join(os.path.dirname(MOONCAKED), "mooncakectl") if MOONCAKED else ""
PAGE = 256 * 1024


def ctl(daemon, *args, tenant=None):
    extra = ["--tenant", tenant] if tenant else []
    out = subprocess.run([CTL, "--master", daemon.address, "--json", *extra, *args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def tenant_rows(daemon):
    return {row["tenant"]: row for row in ctl(daemon, "tenant", "ls")["tenants"]}


@pytest.fixture(scope="module")
def quota_daemon(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tenant-quotas")
    policy = tmp / "tenants.policy"
    policy.write_text("steady memory=12MiB\nburst memory=12MiB\n")
    d = Standalone(tmp, dram="32MiB", disk="256MiB",
                   flags=("--tenant_policy_file", str(policy)))
    yield d
    d.stop()


def engine(daemon, tenant):
    """An engine rank that contributes no DRAM of its own (the daemon's is the pool)."""
    return make_store(daemon.address, segment="0", local_buffer="16MB", tenant_id=tenant)


def test_a_bursting_tenant_evicts_only_its_own_pages(quota_daemon):
    steady, burst = engine(quota_daemon, "steady"), engine(quota_daemon, "burst")
    try:
        hot = {f"page-{i}": os.urandom(PAGE) for i in range(24)}  # 6 MiB, half its quota
        for key, value in hot.items():
            assert steady.put(key, value) == 0
        for key, value in hot.items():
            assert steady.get(key) == value
        # The burst writes four times its quota (1.5x all DRAM), the same key names included:
        # by recency alone, the steady pages would be the coldest and go first.
        for i in range(4 * 12 * MB // PAGE):
            assert burst.put(f"page-{i}", bytes([i % 251]) * PAGE) == 0
        for key, value in hot.items():
            assert ctl(quota_daemon, "stat", key, tenant="steady")["tiers"][0] == "MEMORY", key
            assert steady.get(key) == value
        rows = tenant_rows(quota_daemon)
        assert rows["steady"]["quota_evictions"] == 0, rows["steady"]
        assert rows["burst"]["quota_evictions"] > 0, rows["burst"]
        assert rows["burst"]["memory_bytes"] <= rows["burst"]["memory_quota"], rows["burst"]
        # The burst's older pages went to LOCAL_DISK, not away: still readable.
        assert burst.get("page-0") == bytes([0]) * PAGE
    finally:
        time.sleep(0.3)
        steady.remove_all(True)
        burst.remove_all(True)
        steady.close()
        burst.close()


def test_an_engine_of_an_unregistered_tenant_cannot_write(quota_daemon):
    ghost = engine(quota_daemon, "ghost")
    try:
        assert ghost.put("page-0", b"x" * 4096) == -601  # ILLEGAL_CLIENT
        assert ghost.is_exist("page-0") == 0
        assert tenant_rows(quota_daemon)["ghost"]["puts_refused"] >= 1
    finally:
        ghost.close()
