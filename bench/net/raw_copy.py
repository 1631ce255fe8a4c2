#!/usr/bin/env python3
"""The baseline of cli-vs-raw.sh: a raw loopback TCP copy of FILE's bytes, timed in-process.

  raw_copy.py put|get FILE

FILE (in the page cache) is sent with sendfile, and the receiver reads 1 MiB chunks into one
reused buffer and drops them: the fastest loopback copy of those bytes there is, and both
directions of a store transfer are held to it. (Sending from user memory costs a second copy,
~3x slower here; a receiver that kept the bytes in a fresh 256 MiB buffer, as the store's node
keeps them in its segment, ran 3-4x slower too.) Prints the seconds from connect to the last
byte received; interpreter start-up is left out, so the baseline is, if anything, faster than a
real program would be.
"""
import os
import socket
import sys
import threading
import time


def main() -> None:
    arg = sys.argv[2]  # argv[1], put or get, names the row: the copy is the same
    size = os.path.getsize(arg)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    sink = bytearray(1 << 20)
    got = [0]

    def receive() -> None:
        conn, _ = listener.accept()
        view = memoryview(sink)
        while got[0] < size:
            n = conn.recv_into(view, min(len(sink), size - got[0]))
            if n == 0:
                break
            got[0] += n
        conn.close()

    receiver = threading.Thread(target=receive)
    receiver.start()
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as s:
        with open(arg, "rb") as f:
            s.sendfile(f)
        receiver.join()
    elapsed = time.perf_counter() - start
    if got[0] != size:
        sys.exit(f"raw_copy: received {got[0]} of {size} bytes")
    print(f"{elapsed:.6f}")


if __name__ == "__main__":
    main()
