"""Standalone storage with the pool in shared memory: an engine's MooncakeHostMemAllocator pool,
registered with a store set up by setup_dummy, is handed to the local mooncaked, which maps it
and copies object bytes in and out of it itself (python/src/shared_pool_transport.h,
node/shm_server.h). Real daemons; every byte checked."""
import ctypes
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from conftest import MOONCAKED, Master, Standalone, free_port, stop_process, wait_for, wait_listening
from mooncake_tier.store import MooncakeDistributedStore, MooncakeHostMemAllocator

PAGE = 64 << 10
PAGES = 32
INVALID_PARAMS = -600
POOL_NAME = "mooncake-tier-host-pool"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Standalone(tmp_path_factory.mktemp("shared-pool"))
    yield d
    d.stop()


def pool_mappings(pid):
    with open(f"/proc/{pid}/maps") as f:
        return sum(POOL_NAME in line for line in f)


def fill(ptr, size, seed):
    view = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(ptr))
    view[:] = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    return view.copy()


def bytes_at(ptr, size):
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(ptr)).copy()


def attached(daemon, pool, size):
    store = MooncakeDistributedStore()
    assert store.setup_dummy(size, 16 << 20, daemon.address) == 0
    assert store.register_buffer(pool, size) == 0
    return store


def test_bytes_round_trip_through_the_pool(daemon):
    alloc = MooncakeHostMemAllocator()
    size = 2 * PAGES * PAGE
    pool = alloc.alloc(size)
    store = attached(daemon, pool, size)
    try:
        written = fill(pool, PAGES * PAGE, 1)
        keys = [f"shm-rt-{i}" for i in range(PAGES)]
        src = [pool + i * PAGE for i in range(PAGES)]
        dst = [pool + (PAGES + i) * PAGE for i in range(PAGES)]
        before = store.shared_pool_transfer_count()
        assert store.batch_put_from(keys, src, [PAGE] * PAGES) == [0] * PAGES
        assert store.batch_get_into(keys, dst, [PAGE] * PAGES) == [PAGE] * PAGES
        assert np.array_equal(bytes_at(pool + PAGES * PAGE, PAGES * PAGE), written)
        # Every page went through the pool: no byte crossed a socket.
        assert store.shared_pool_transfer_count() - before == 2 * PAGES
        # The single forms, a 1 MiB value and the multi-buffer forms too.
        big = 1 << 20
        assert store.put_from("shm-rt-big", pool, big) == 0
        ctypes.memset(pool + big, 0, big)
        assert store.get_into("shm-rt-big", pool + big, big) == big
        assert np.array_equal(bytes_at(pool + big, big), written[:big])
        parts = [pool + 3 * PAGE, pool + 7 * PAGE]
        assert store.batch_put_from_multi_buffers(["shm-rt-multi"], [parts],
                                                  [[PAGE, PAGE]]) == [0]
        out = [pool + (PAGES + 1) * PAGE, pool + (PAGES + 5) * PAGE]
        for p in out:
            ctypes.memset(p, 0, PAGE)
        assert store.batch_get_into_multi_buffers(["shm-rt-multi"], [out], [[PAGE, PAGE]]) == \
            [2 * PAGE]
        assert np.array_equal(bytes_at(out[0], PAGE), written[3 * PAGE:4 * PAGE])
        assert np.array_equal(bytes_at(out[1], PAGE), written[7 * PAGE:8 * PAGE])
        assert store.shared_pool_transfer_count() - before == 2 * PAGES + 4
        # A plain put (Python bytes, not pool memory) still works, over TCP.
        assert store.put("shm-rt-bytes", b"x" * 1000) == 0
        assert store.get("shm-rt-bytes") == b"x" * 1000
    finally:
        store.unregister_buffer(pool)
        store.close()
        alloc.free(pool)
    # Unregistered and closed: the daemon holds no mapping of it any more.
    assert wait_for(lambda: pool_mappings(daemon.proc.pid) == 0, 5)


RANK = textwrap.dedent("""
    import ctypes, sys, time
    import numpy as np
    from mooncake_tier.store import MooncakeDistributedStore, MooncakeHostMemAllocator
    address, rank, ranks, page, pages = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \\
        int(sys.argv[4]), int(sys.argv[5])
    size = (ranks + 1) * pages * page
    alloc = MooncakeHostMemAllocator()
    pool = alloc.alloc(size)
    store = MooncakeDistributedStore()
    assert store.setup_dummy(size, 16 << 20, address) == 0
    assert store.register_buffer(pool, size) == 0
    def page_of(r, i):
        return np.random.default_rng(1000 * r + i).integers(0, 256, page, dtype=np.uint8)
    for i in range(pages):
        ctypes.memmove(pool + i * page, page_of(rank, i).tobytes(), page)
    keys = [f"tp-{rank}-{i}" for i in range(pages)]
    assert store.batch_put_from(keys, [pool + i * page for i in range(pages)],
                                [page] * pages) == [0] * pages
    print("put", flush=True)
    # Every rank's pages, read back into this rank's pool once the other ranks wrote them.
    for r in range(ranks):
        others = [f"tp-{r}-{i}" for i in range(pages)]
        deadline = time.monotonic() + 30
        while store.batch_is_exist(others) != [1] * pages:
            assert time.monotonic() < deadline, "rank %d never wrote" % r
            time.sleep(0.05)
        base = pool + (r + 1) * pages * page
        assert store.batch_get_into(others, [base + i * page for i in range(pages)],
                                    [page] * pages) == [page] * pages
        for i in range(pages):
            got = np.ctypeslib.as_array((ctypes.c_uint8 * page).from_address(base + i * page))
            assert np.array_equal(got, page_of(r, i)), (r, i)
    print("transfers", store.shared_pool_transfer_count(), flush=True)
    if len(sys.argv) > 6:  # hold the pool until told to go
        sys.stdin.readline()
    store.close()
""")


def run_rank(daemon, rank, ranks, hold=False):
    return subprocess.Popen(
        [sys.executable, "-c", RANK, daemon.address, str(rank), str(ranks), str(PAGE),
         str(PAGES)] + (["hold"] if hold else []),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ.copy())


def test_two_tp_ranks_share_one_daemon(daemon):
    ranks = [run_rank(daemon, r, 2, hold=True) for r in range(2)]
    try:
        for p in ranks:
            assert p.stdout.readline().strip() == "put"
        transfers = [p.stdout.readline().split() for p in ranks]
        # Each rank wrote its pages and read both ranks' pages through its own pool.
        assert transfers == [["transfers", str(3 * PAGES)]] * 2
        assert pool_mappings(daemon.proc.pid) >= 2  # both pools mapped at once
    finally:
        for p in ranks:
            p.stdin.write("go\n")
            p.stdin.flush()
    for p in ranks:
        assert p.wait(30) == 0
    assert wait_for(lambda: pool_mappings(daemon.proc.pid) == 0, 5)


def test_client_dying_with_its_pool_registered(daemon):
    rank = run_rank(daemon, 7, 1, hold=True)
    assert rank.stdout.readline().strip() == "put"
    assert rank.stdout.readline().split()[0] == "transfers"
    assert wait_for(lambda: pool_mappings(daemon.proc.pid) >= 1, 5)
    rank.send_signal(signal.SIGKILL)  # no close, no unregister
    rank.wait(10)
    # The daemon drops the dead process's mapping and keeps serving its objects.
    assert wait_for(lambda: pool_mappings(daemon.proc.pid) == 0, 5)
    alloc = MooncakeHostMemAllocator()
    pool = alloc.alloc(PAGE)
    store = attached(daemon, pool, PAGE)
    try:
        assert store.get_into("tp-7-3", pool, PAGE) == PAGE
        want = np.random.default_rng(7003).integers(0, 256, PAGE, dtype=np.uint8)
        assert np.array_equal(bytes_at(pool, PAGE), want)
    finally:
        store.close()
        alloc.free(pool)


def test_out_of_range_pointer_is_refused(daemon):
    alloc = MooncakeHostMemAllocator()
    size = 4 * PAGE
    pool = alloc.alloc(size)
    store = MooncakeDistributedStore()
    assert store.setup_dummy(size, 16 << 20, daemon.address) == 0
    # The last page is not registered: a guard that must stay untouched.
    assert store.register_buffer(pool, 3 * PAGE) == 0
    try:
        fill(pool, 3 * PAGE, 5)
        assert store.put_from("shm-oor", pool, PAGE) == 0
        assert store.put_from("shm-oor-2", pool + 2 * PAGE, 2 * PAGE) == INVALID_PARAMS
        assert store.get_into("shm-oor", pool + 2 * PAGE + 1, PAGE) == INVALID_PARAMS
        assert store.batch_get_into(["shm-oor"], [pool + 3 * PAGE - 10], [PAGE]) == \
            [INVALID_PARAMS]
        assert bytes_at(pool + 3 * PAGE, PAGE).sum() == 0
    finally:
        store.close()
        alloc.free(pool)


def test_a_cluster_node_on_this_host_maps_the_pool(tmp_path):
    """Attached to a cluster's master: the objects live on a node daemon of this host, which
    maps the pool as a standalone does."""
    master = Master(tmp_path)
    port, data_port = free_port(), free_port()
    log = open(tmp_path / "node.log", "w")
    node = subprocess.Popen(
        [MOONCAKED, "--role", "node", "--listen", f"127.0.0.1:{port}", "--master",
         master.address, "--data_port", str(data_port), "--metrics_port", "0",
         "--dram_size", "64MiB"], stdout=log, stderr=subprocess.STDOUT)
    alloc = MooncakeHostMemAllocator()
    size = 2 * PAGES * PAGE
    pool = alloc.alloc(size)
    store = None
    try:
        wait_listening(port, node)
        store = MooncakeDistributedStore()
        assert store.setup_dummy(size, 16 << 20, master.address) == 0
        assert store.register_buffer(pool, size) == 0
        written = fill(pool, PAGES * PAGE, 11)
        keys = [f"shm-node-{i}" for i in range(PAGES)]
        deadline = time.monotonic() + 20  # the node registers with the master meanwhile
        while store.batch_put_from(keys, [pool + i * PAGE for i in range(PAGES)],
                                   [PAGE] * PAGES) != [0] * PAGES:
            assert time.monotonic() < deadline, "the node never took a put"
            time.sleep(0.2)
        dst = pool + PAGES * PAGE
        assert store.batch_get_into(keys, [dst + i * PAGE for i in range(PAGES)],
                                    [PAGE] * PAGES) == [PAGE] * PAGES
        assert np.array_equal(bytes_at(dst, PAGES * PAGE), written)
        assert store.shared_pool_transfer_count() >= 2 * PAGES
        assert pool_mappings(node.pid) >= 1
    finally:
        if store is not None:
            store.close()
        alloc.free(pool)
        stop_process(node, log)
        master.stop()


# ---- the daemon's own checks, asked directly (net/shm_channel.h's wire format)

HEADER = struct.Struct("<IHBBIIQQQQ")  # magic version op tier key_len pieces gen off len pool
MAGIC, HELLO, ADD_POOL, WRITE, READ = 0x4D48534D, 1, 2, 3, 4


def ask(sock, op, key=b"", pieces=(), fds=(), generation=0, offset=0, length=0, pool=0):
    msg = HEADER.pack(MAGIC, 1, op, 0, len(key), len(pieces), generation, offset, length, pool)
    msg += key + b"".join(struct.pack("<QQQ", *p) for p in pieces)
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i" * len(fds), *fds))] if fds \
        else []
    sock.sendmsg([msg], anc)
    answer = sock.recv(8192)
    _, _, status, length = struct.unpack_from("<IHHI", answer)
    return status, answer[16:16 + length].decode()


def memfd(size, sealed=True):
    fd = os.memfd_create("not-a-pool", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if sealed:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd


def test_daemon_checks_every_piece_against_the_pool(daemon):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(f"\0mooncake-tier-shm.{daemon.data_port}")
    try:
        assert ask(s, HELLO) == (0, "")
        unsealed = memfd(PAGE, sealed=False)
        status, why = ask(s, ADD_POOL, fds=[unsealed], length=PAGE, pool=1)
        assert status == 4 and "F_SEAL_SHRINK" in why  # InvalidArgument: could SIGBUS us
        fd = memfd(PAGE)
        assert ask(s, ADD_POOL, fds=[fd], length=PAGE, pool=2) == (0, "")
        status, why = ask(s, ADD_POOL, fds=[memfd(PAGE)], length=2 * PAGE, pool=3)
        assert status == 4 and "not inside" in why  # larger than the file
        # A piece past the end of the pool, or naming a pool not handed here, before a byte.
        status, why = ask(s, READ, key=b"k", pieces=[(2, PAGE - 10, 20)], generation=1,
                          length=20)
        assert status == 4 and "outside the pool" in why
        status, why = ask(s, WRITE, key=b"k", pieces=[(9, 0, 20)], generation=1, length=20)
        assert status == 4 and "no pool 9" in why
        status, why = ask(s, WRITE, key=b"k", pieces=[(2, 0, 20)], generation=1, length=21)
        assert status == 4 and "pieces of 20 bytes" in why
        for f in (unsealed, fd):
            os.close(f)
    finally:
        s.close()
    # A pool is usable only on the connection that handed it.
    t = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    t.connect(f"\0mooncake-tier-shm.{daemon.data_port}")
    try:
        assert ask(t, HELLO) == (0, "")
        status, why = ask(t, READ, key=b"k", pieces=[(2, 0, 20)], generation=1, length=20)
        assert status == 4 and "no pool 2" in why
    finally:
        t.close()


# ---- a daemon that is not on this host

def _ip(*args):
    return subprocess.run(["ip", *args], capture_output=True, text=True)


@pytest.fixture
def remote_daemon(tmp_path, monkeypatch):
    """A standalone in another network namespace, reached over a veth pair: its address is not
    one of this namespace's, so it cannot map our pools (and its channel is out of reach)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 for a network namespace")
    ns = f"mct-shm-{os.getpid()}"
    host_if, ns_if = f"mcs{os.getpid() % 10000}a", f"mcs{os.getpid() % 10000}b"
    octet = 10 + os.getpid() % 200
    here, there = f"10.{octet}.77.1", f"10.{octet}.77.2"
    if _ip("netns", "add", ns).returncode != 0:
        pytest.skip("cannot create a network namespace here")
    proc = log = None
    try:
        for cmd in (["link", "add", host_if, "type", "veth", "peer", "name", ns_if],
                    ["link", "set", ns_if, "netns", ns],
                    ["addr", "add", f"{here}/24", "dev", host_if],
                    ["link", "set", host_if, "up"],
                    ["-n", ns, "addr", "add", f"{there}/24", "dev", ns_if],
                    ["-n", ns, "link", "set", ns_if, "up"],
                    ["-n", ns, "link", "set", "lo", "up"]):
            r = _ip(*cmd)
            assert r.returncode == 0, (cmd, r.stderr)
        port = free_port()
        # Beyond loopback a daemon needs a token; this process's stores send it.
        (tmp_path / "token").write_text("shm-remote-token\n")
        monkeypatch.setenv("MOONCAKE_AUTH_TOKEN", "shm-remote-token")
        log = open(tmp_path / "remote.log", "w")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, MOONCAKED, "--role", "standalone", "--listen",
             f"{there}:{port}", "--metrics_port", "0", "--dram_size", "64MiB",
             "--auth_token_file", str(tmp_path / "token")],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection((there, port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "no remote daemon"
                time.sleep(0.1)
        yield f"{there}:{port}"
    finally:
        if proc is not None:
            stop_process(proc, log)
        _ip("link", "del", host_if)
        _ip("netns", "del", ns)


def test_non_local_daemon_falls_back_to_tcp(remote_daemon, capfd):
    alloc = MooncakeHostMemAllocator()
    size = 2 * PAGES * PAGE
    pool = alloc.alloc(size)
    store = attached(type("D", (), {"address": remote_daemon})(), pool, size)
    try:
        written = fill(pool, PAGES * PAGE, 9)
        keys = [f"shm-remote-{i}" for i in range(PAGES)]
        assert store.batch_put_from(keys, [pool + i * PAGE for i in range(PAGES)],
                                    [PAGE] * PAGES) == [0] * PAGES
        dst = pool + PAGES * PAGE
        assert store.batch_get_into(keys, [dst + i * PAGE for i in range(PAGES)],
                                    [PAGE] * PAGES) == [PAGE] * PAGES
        assert np.array_equal(bytes_at(dst, PAGES * PAGE), written)
        assert store.shared_pool_transfer_count() == 0  # every byte went over TCP
    finally:
        store.close()
        alloc.free(pool)
    err = capfd.readouterr().err + capfd.readouterr().out
    assert err.count("is not on this host") == 1, err
