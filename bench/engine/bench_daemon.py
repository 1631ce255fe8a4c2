"""What the engine benchmarks share to run a mooncaked of their own and hand it buffers:
a free loopback port, waiting for the daemon to listen, a standalone daemon for the length of a
`with`, a store connected to it, a registered host buffer, and one scenario run on both paths
(a store's own segment, and over the data channel)."""
import contextlib
import ctypes
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"mooncaked exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"mooncaked did not listen on {port}")


class Pool:
    """A host buffer registered with `store` (as an engine registers its KV pool)."""

    def __init__(self, store, size):
        self.buf = (ctypes.c_ubyte * size)()
        self.ptr = ctypes.addressof(self.buf)
        self.size = size
        assert store.register_buffer(self.ptr, size) == 0


@contextlib.contextmanager
def standalone_daemon(mooncaked, dram_bytes, prefix):
    """A standalone mooncaked on loopback ports with `dram_bytes` of DRAM and 64 MiB of disk in
    a temporary directory; yields its RPC port, and stops it and removes the directory after."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    port = free_port()
    with open(os.path.join(tmp, "mooncaked.log"), "w") as log:
        daemon = subprocess.Popen(
            [mooncaked, "--role", "standalone", "--listen", f"127.0.0.1:{port}",
             "--data_port", str(free_port()), "--metrics_port", "0",
             "--dram_size", f"{dram_bytes >> 20}MiB", "--disk_dir", os.path.join(tmp, "disk"),
             "--disk_size", "64MiB"], stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_listening(port, daemon)
            yield port
        finally:
            daemon.terminate()
            daemon.wait()
            shutil.rmtree(tmp, ignore_errors=True)


def connect(store_class, port, segment_bytes):
    """A store (the module's MooncakeDistributedStore) set up against the daemon at `port`,
    contributing `segment_bytes` of its own DRAM (0: none, every transfer over TCP)."""
    store = store_class()
    rc = store.setup({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
                      "global_segment_size": segment_bytes, "local_buffer_size": 16 << 20,
                      "protocol": "tcp", "rdma_devices": "",
                      "master_server_addr": f"127.0.0.1:{port}"})
    assert rc == 0, f"setup: {rc}"
    return store


def local_and_remote(mooncaked, segment_bytes, prefix, store_class, config_class, scenario):
    """Runs `scenario(name, store, config)` against one standalone daemon on two paths:
    "local", a store contributing `segment_bytes` whose puts prefer its own segment (a memcpy),
    and "remote", a pure client (every byte over the data channel). Returns {name: result}."""
    stores = []
    results = {}
    with standalone_daemon(mooncaked, segment_bytes, prefix) as port:
        try:
            for name, segment in (("local", segment_bytes), ("remote", 0)):
                store = connect(store_class, port, segment)
                stores.append(store)
                config = config_class()
                if segment:
                    config.preferred_segment = store.get_hostname()
                results[name] = scenario(name, store, config)
        finally:
            for store in stores:
                store.close()
    return results
