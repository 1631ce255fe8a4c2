"""What the engine benchmarks share to run a mooncaked of their own and hand it buffers:
a free loopback port, waiting for the daemon to listen, and a registered host buffer."""
import ctypes
import socket
import sys
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
