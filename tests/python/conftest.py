"""Fixtures: real mooncaked masters on free loopback ports, and stores that join them.

The ctest entry (tests/CMakeLists.txt) sets MOONCAKED to <build>/bin/mooncaked and PYTHONPATH
to <build>/python; run by hand the same way:
    MOONCAKED=build/bin/mooncaked PYTHONPATH=build/python python3 -m pytest tests/python
"""
import os
import random
import socket
import subprocess
import time

import pytest

from mooncake_tier.store import MooncakeDistributedStore

MOONCAKED = os.environ.get("MOONCAKED", "")


_issued_ports = set()


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _bind(port):
    """The port bound (the kernel's choice for 0), or 0 if it is taken."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return 0
        return s.getsockname()[1]


def free_port():
    """A loopback port for a daemon about to start, as tests/free_port.h picks them: below the
    ephemeral range (no parallel test's outgoing connection takes it before the daemon binds)
    and never twice in this process (bind to 0 may return a port it just returned)."""
    high = _ephemeral_low()
    if high > 11000:
        for _ in range(1000):
            port = random.randrange(10000, high)
            if port not in _issued_ports and _bind(port) == port:
                _issued_ports.add(port)
                return port
    for _ in range(1000):
        port = _bind(0)
        if port and port not in _issued_ports:
            _issued_ports.add(port)
            return port
    raise RuntimeError("no free loopback port")


def wait_listening(port, proc, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mooncaked exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"mooncaked did not listen on {port}")


def stop_process(proc, log):
    """SIGTERM, then SIGKILL after 20 s; closes its log."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


class Master:
    """A `mooncaked --role master` process; `address` is what setup() takes."""

    def __init__(self, tmp_path, *flags):
        if not MOONCAKED or not os.access(MOONCAKED, os.X_OK):
            raise RuntimeError("set MOONCAKED to <build>/bin/mooncaked")
        self.port = free_port()
        self.metrics_port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log = open(tmp_path / f"master-{self.port}.log", "w")
        self.proc = subprocess.Popen(
            [MOONCAKED, "--role", "master", "--listen", self.address,
             "--metrics_port", str(self.metrics_port), "--default_kv_lease_ttl", "200",
             *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.proc)

    def metric(self, name):
        """Sum of every sample of a Prometheus metric on the master's /metrics."""
        import urllib.request
        text = urllib.request.urlopen(
            f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            metric = line.split("{")[0].split(" ")[0]
            if metric in (name, "mooncake_" + name):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self):
        stop_process(self.proc, self.log)


class Standalone:
    """A `mooncaked --role standalone` process (master and node in one): the store process an
    engine attaches to with setup_dummy(..., address)."""

    def __init__(self, tmp_path, dram="64MiB", lease_ttl_ms=200, disk="256MiB", flags=(),
                 metrics=False):
        """`lease_ttl_ms` None leaves the daemon's default read lease (5 s); `flags` are added;
        `metrics` serves the HTTP port (self.metrics_port)."""
        if not MOONCAKED or not os.access(MOONCAKED, os.X_OK):
            raise RuntimeError("set MOONCAKED to <build>/bin/mooncaked")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.data_port = free_port()  # also names its shared-pool channel
        self.metrics_port = free_port() if metrics else 0
        disk_dir = tmp_path / f"disk-{self.port}"
        disk_dir.mkdir()
        self.log = open(tmp_path / f"standalone-{self.port}.log", "w")
        self.proc = subprocess.Popen(
            [MOONCAKED, "--role", "standalone", "--listen", self.address,
             "--data_port", str(self.data_port), "--metrics_port", str(self.metrics_port),
             "--dram_size", dram, "--disk_dir", str(disk_dir), "--disk_size", disk,
             *([] if lease_ttl_ms is None else ["--default_kv_lease_ttl", str(lease_ttl_ms)]),
             *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        # The node registers with the in-process master before the master listens.
        wait_listening(self.port, self.proc)

    def stop(self):
        stop_process(self.proc, self.log)


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("master"))
    yield m
    m.stop()


def make_store(address, segment="16MB", local_buffer="16MB", **extra):
    store = MooncakeDistributedStore()
    config = {
        "local_hostname": "127.0.0.1",
        "metadata_server": "P2PHANDSHAKE",
        "global_segment_size": segment,
        "local_buffer_size": local_buffer,
        "protocol": "tcp",
        "rdma_devices": "",
        "master_server_addr": address,
    }
    config.update(extra)
    rc = store.setup(config)
    assert rc == 0, f"setup returned {rc}"
    return store


@pytest.fixture
def store(master):
    s = make_store(master.address)
    yield s
    s.close()


def wait_for(cond, timeout, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(interval)
    return cond()
