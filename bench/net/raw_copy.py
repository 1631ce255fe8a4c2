#!/usr/bin/env python3
"""The baseline of cli-vs-raw.sh: a raw loopback TCP copy of SIZE bytes, timed in-process.

  raw_copy.py get SIZE   bytes held in memory are sent; the receiver reads them in 1 MiB
                         chunks and drops them (what `mooncakectl get --out /dev/null` does)
  raw_copy.py put FILE   FILE is sent with sendfile; the receiver reads it whole into a buffer
                         of its size, touched before the clock starts (what a put into a
                         prefaulted DRAM segment does: a fresh buffer would charge the raw
                         side a page fault per 4 KiB that the store's segment does not pay)

Prints the seconds from connect to the last byte received. Interpreter start-up is left out,
so the baseline is, if anything, faster than a real program would be.
"""
import os
import socket
import sys
import threading
import time


def main() -> None:
    mode, arg = sys.argv[1], sys.argv[2]
    size = int(arg) if mode == "get" else os.path.getsize(arg)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    payload = os.urandom(1 << 20) * (size >> 20) + os.urandom(size & ((1 << 20) - 1)) \
        if mode == "get" else None
    sink = bytearray(size if mode == "put" else 1 << 20)
    for page in range(0, len(sink), 4096):
        sink[page] = 1
    got = [0]

    def receive() -> None:
        conn, _ = listener.accept()
        view = memoryview(sink)
        while got[0] < size:
            if mode == "put":
                n = conn.recv_into(view[got[0]:], size - got[0])
            else:
                n = conn.recv_into(view, min(len(sink), size - got[0]))
            if n == 0:
                break
            got[0] += n
        conn.close()

    receiver = threading.Thread(target=receive)
    receiver.start()
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as s:
        if mode == "get":
            s.sendall(payload)
        else:
            with open(arg, "rb") as f:
                s.sendfile(f)
        receiver.join()
    elapsed = time.perf_counter() - start
    if got[0] != size:
        sys.exit(f"raw_copy: received {got[0]} of {size} bytes")
    print(f"{elapsed:.6f}")


if __name__ == "__main__":
    main()
