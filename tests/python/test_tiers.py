"""Tier behaviour seen through the Python API: offload on eviction into the embedded node's
LOCAL_DISK, reading it back, promotion on hit seen through batch_get_replica_desc, prefetch on
exist (the master knob and ExistOptions), and two processes with embedded nodes."""
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import MOONCAKED, Master, make_store, wait_for
from mooncake_tier.store import ExistOptions

MB = 1 << 20
CTL = os.path.join(os.path.dirname(MOONCAKED), "mooncakectl") if MOONCAKED else ""
TIER_FLAGS = ("--enable_offload", "--offload_on_evict", "--promotion_admission_threshold", "1")


_MASTER_OF = {}  # id(store) -> its master's address, for types()


def desc_types(store, key):
    """Tiers through the Mooncake API: batch_get_replica_desc is a read (lease, recency, an
    admission count), so polling with it promotes the keys it looks at."""
    descs = store.batch_get_replica_desc([key]).get(key, [])
    return ["MEMORY" if d.is_memory_replica() else "LOCAL_DISK" if d.is_local_disk_replica()
            else "OTHER" for d in descs]


def types(store, key):
    """Tiers with COMPLETE replicas, MEMORY first, from `mooncakectl stat`: not an access."""
    address = _MASTER_OF.get(id(store))
    if address is None:
        return desc_types(store, key)
    out = subprocess.run([CTL, "--master", address, "--json", "stat", key],
                         capture_output=True, text=True)
    return json.loads(out.stdout)["tiers"] if out.returncode == 0 else []


def disk_store(master, tmp_path, segment="16MB"):
    store = make_store(master.address, segment=segment, local_buffer="8MB",
                       enable_ssd_offload="true", ssd_offload_path=str(tmp_path / "ssd"),
                       ssd_offload_size="64MB")
    _MASTER_OF[id(store)] = master.address
    return store


def overflow(store, prefix, count=40):
    """Puts count x 1 MiB into a 16 MiB segment; returns {key: value} of the puts that landed."""
    ref = {}
    for i in range(count):
        value = os.urandom(MB)
        if store.put(f"{prefix}{i}", value) == 0:
            ref[f"{prefix}{i}"] = value
    assert ref
    return ref


def cold_keys(store, ref):
    return [k for k in ref if types(store, k) == ["LOCAL_DISK"]]


def wait_cold(store, ref, timeout=30):
    """The LOCAL_DISK-only keys (polled with `mooncakectl stat`, which is not an access)."""
    cold = wait_for(lambda: cold_keys(store, ref), timeout, interval=0.2)
    time.sleep(0.3)  # the puts' 200 ms read leases end, so a promotion may displace those keys
    return cold


@pytest.fixture(scope="module")
def tier_master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("tiers"), *TIER_FLAGS, "--promotion_on_hit")
    yield m
    m.stop()


@pytest.fixture(scope="module")
def offload_master(tmp_path_factory):
    """Offload without promotion: a read of a LOCAL_DISK-only key stays a disk read (with
    promotion on, the access that finds the key cold promotes it in about a millisecond)."""
    m = Master(tmp_path_factory.mktemp("offload"), *TIER_FLAGS, "--promotion_on_hit=false")
    yield m
    m.stop()


def test_eviction_offloads_and_local_disk_reads_back(offload_master, tmp_path):
    s = disk_store(offload_master, tmp_path)
    try:
        small = {f"small{i}": os.urandom(1024) for i in range(8)}
        for k, v in small.items():
            assert s.put(k, v) == 0
        time.sleep(1.5)
        # Below the watermark nothing is written to disk (offload_on_evict).
        assert all(types(s, k) == ["MEMORY"] for k in small)
        ref = overflow(s, "ev")
        assert len(ref) == 40  # eviction with offload makes room: every put lands
        cold = wait_cold(s, ref)
        assert cold, "no LOCAL_DISK-only key after overflowing DRAM"
        before = s.get_offload_rpc_read_count()
        for k in cold[:5]:
            assert s.get(k) == ref[k]
        assert s.get_offload_rpc_read_count() >= before + min(5, len(cold))
    finally:
        s.close()


def test_promotion_on_hit_seen_through_replica_desc(tier_master, tmp_path):
    s = disk_store(tier_master, tmp_path)
    try:
        ref = overflow(s, "poh")
        cold = wait_cold(s, ref)
        assert cold
        key = cold[0]
        for _ in range(4):  # reads of a LOCAL_DISK-only key clear the admission gates
            assert s.get(key) == ref[key]
        assert wait_for(lambda: "MEMORY" in types(s, key), 15), types(s, key)
        assert desc_types(s, key)[0] == "MEMORY"  # what an engine sees
        before = s.get_offload_rpc_read_count()
        assert s.get(key) == ref[key]
        assert s.get_offload_rpc_read_count() == before  # served from MEMORY now
    finally:
        s.close()


@pytest.fixture(scope="module")
def prefetch_master(tmp_path_factory):
    # The fixed gate without victim comparison: one Exists is one sketch count, and the test is
    # about the knob running the trigger, not about how hot the key must be to displace others
    # (the adaptive gate, fed a second's poll of every key by wait_cold, can settle on "never"
    # and refuse every promotion: seen as a 1-in-4 failure).
    m = Master(tmp_path_factory.mktemp("prefetch"), *TIER_FLAGS, "--promotion_on_hit",
               "--prefetch_on_exist", "--promotion_gate=fixed",
               "--promotion_compare_victims=false")
    yield m
    m.stop()


def test_prefetch_on_exist_knob_promotes_without_a_read(prefetch_master, tmp_path):
    s = disk_store(prefetch_master, tmp_path)
    try:
        ref = overflow(s, "pfx")
        cold = wait_cold(s, ref)
        assert cold
        key = cold[-1]
        counted = prefetch_master.metric("prefetch_on_exist_total")
        assert s.is_exist(key) == 1
        assert prefetch_master.metric("prefetch_on_exist_total") == counted + 1
        assert wait_for(lambda: "MEMORY" in types(s, key), 15), types(s, key)
        assert s.get(key) == ref[key]
    finally:
        s.close()


def test_without_knob_exist_does_not_promote_but_exist_options_do(tmp_path):
    # prefetch_to_memory requests the promotion on the master (past its admission gate), as
    # the knob does for every Exists; a plain Exists is inspection only.
    m = Master(tmp_path, *TIER_FLAGS, "--promotion_on_hit", "--promotion_compare_victims=false")
    s = disk_store(m, tmp_path)
    try:
        ref = overflow(s, "eo")
        cold = wait_cold(s, ref)
        assert len(cold) >= 2
        key, batch_key = cold[0], cold[1]
        counted = m.metric("prefetch_on_exist_total")
        assert s.is_exist(key) == 1
        assert s.batch_is_exist([key]) == [1]
        time.sleep(2)
        assert types(s, key) == ["LOCAL_DISK"]
        assert m.metric("prefetch_on_exist_total") == counted
        opts = ExistOptions()
        opts.prefetch_to_memory = True
        assert s.is_exist(key, opts) == 1
        assert s.batch_is_exist([batch_key, "eo-missing"], opts) == [1, 0]
        assert m.metric("prefetch_on_exist_total") == counted + 2
        assert wait_for(lambda: "MEMORY" in types(s, key), 15), types(s, key)
        assert wait_for(lambda: "MEMORY" in types(s, batch_key), 15), types(s, batch_key)
        assert s.get(key) == ref[key]
        assert s.get(batch_key) == ref[batch_key]
    finally:
        s.close()
        m.stop()


def test_batch_exist_prefetch_warms_never_read_disk_blocks(tmp_path):
    # Mooncake RFC #4271's contract, with its measured setting (promotion on hit off) and the
    # default admission threshold and gate: the prefetching check is the hotness signal, so
    # LOCAL_DISK-only blocks nobody has read yet come to MEMORY before the read that follows.
    m = Master(tmp_path, "--enable_offload", "--offload_on_evict", "--promotion_on_hit=false")
    s = disk_store(m, tmp_path)
    try:
        ref = overflow(s, "bx")
        cold = wait_cold(s, ref)
        assert len(cold) >= 4
        keys = cold[:4]
        opts = ExistOptions()
        opts.prefetch_to_memory = True
        assert s.batch_is_exist(keys + ["bx-missing"], opts) == [1, 1, 1, 1, 0]
        for key in keys:
            assert wait_for(lambda: "MEMORY" in types(s, key), 15), (key, types(s, key))
        before = s.get_offload_rpc_read_count()
        for key in keys:
            assert s.get(key) == ref[key]
        assert s.get_offload_rpc_read_count() == before  # every read served from MEMORY
    finally:
        s.close()
        m.stop()


CHILD = textwrap.dedent("""
    import sys
    from mooncake_tier.store import MooncakeDistributedStore
    s = MooncakeDistributedStore()
    rc = s.setup({"local_hostname": "127.0.0.1", "global_segment_size": "16MB",
                  "local_buffer_size": "16MB", "master_server_addr": sys.argv[1]})
    assert rc == 0, rc
    for i in range(10):
        assert s.put(f"child{i}", bytes([i]) * 100000) == 0
    print("HOST", s.get_hostname(), flush=True)
    sys.stdin.readline()          # the parent reads meanwhile
    assert s.get("parent0") == b"p" * 5000
    s.close()
    print("closed", flush=True)
""")


def test_two_processes_with_embedded_nodes(master):
    child = subprocess.Popen([sys.executable, "-c", CHILD, master.address],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ))
    parent = None
    try:
        line = child.stdout.readline()  # its keys are in (only) its node now
        assert line.startswith("HOST "), line
        child_host = line.split()[1]
        parent = make_store(master.address)
        assert child_host and child_host != parent.get_hostname()
        for i in range(10):
            assert parent.get(f"child{i}") == bytes([i]) * 100000
        assert parent.put("parent0", b"p" * 5000) == 0
        holders_before = {k: [d.node for d in parent.get_replica_desc(k)]
                          for k in [f"child{i}" for i in range(10)] + ["parent0"]}
        assert any(child_host in h for h in holders_before.values())
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "closed"
        assert child.wait(timeout=30) == 0
        # The child's node left: what it held is gone, what the parent's node holds stays.
        parent_host = parent.get_hostname()
        for key in [f"child{i}" for i in range(10)] + ["parent0"]:
            holders = [d.node for d in parent.get_replica_desc(key)]
            assert child_host not in holders
            assert parent.is_exist(key) == (1 if parent_host in holders else 0)
    finally:
        if child.poll() is None:
            child.kill()
        if parent is not None:
            parent.close()


def test_exit_without_close_leaves_the_cluster(master):
    """A process that ends with its store still open (a test class's store, an engine that
    exits) leaves the master at once, not client_live_ttl_sec later."""
    import json
    from conftest import MOONCAKED
    ctl = os.path.join(os.path.dirname(MOONCAKED), "mooncakectl")

    def nodes():
        out = subprocess.run([ctl, "--master", master.address, "--json", "nodes"],
                             capture_output=True, text=True, check=True).stdout
        return [n["name"] for n in json.loads(out)]

    script = textwrap.dedent("""
        import sys
        from mooncake_tier.store import MooncakeDistributedStore
        kept = MooncakeDistributedStore()
        assert kept.setup({"local_hostname": "127.0.0.1", "global_segment_size": "8MB",
                           "master_server_addr": sys.argv[1]}) == 0
        print("HOST", kept.get_hostname(), flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", script, master.address], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    host = out.stdout.split()[1]
    assert host not in nodes()


def test_stores_share_one_ssd_offload_path(tier_master, tmp_path):
    """Two stores of one process on one ssd_offload_path take slots node-0 and node-1; a store
    set up again on the path reopens slot 0 (and recovers what it held)."""
    a = disk_store(tier_master, tmp_path)
    b = disk_store(tier_master, tmp_path)
    try:
        assert sorted(p.name for p in (tmp_path / "ssd").iterdir()) == ["node-0", "node-1"]
    finally:
        b.close()
        a.close()
    c = disk_store(tier_master, tmp_path)
    c.close()
