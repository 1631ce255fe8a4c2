// BufferedReader: the receiving side of one connection, for a server that reads a request as
// several small fields (a header, then a key, then a client id) followed by a payload.
//
// Each small field read straight from the socket costs a system call, and on a virtual machine
// a call costs about a microsecond: as much as the rest of a small request's handling. This
// reader takes whatever has arrived in one recv (a whole request's fields, usually, since a
// client sends them in one write) and serves the fields from that; a large read (a payload)
// takes the buffered bytes first and then goes straight from the socket into the destination,
// so a payload is never copied through the buffer.
//
// Thread-safety: one thread per reader (one connection's thread).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "core/base/status.h"

namespace mooncake::net {

class BufferedReader {
public:
    explicit BufferedReader(int fd) : fd_(fd) {}

    // Waits for the next request's first bytes, up to `idle` (checked at each socket timeout,
    // SO_RCVTIMEO), unless some are buffered already. kTimeout when `idle` passed with none;
    // kUnavailable when the peer closed the connection (or it was shut down).
    Status WaitForData(std::chrono::milliseconds idle);
    // Exactly `size` bytes (errors as net::RecvAll).
    Status RecvAll(void* data, size_t size);
    // Reads and drops `size` bytes.
    Status Discard(uint64_t size);
    size_t buffered() const { return end_ - begin_; }

private:
    // One recv into the empty buffer: at least one byte, as many as have arrived.
    Status Fill();

    // Reads of at least this size skip the buffer (what is buffered is taken first).
    static constexpr size_t kDirectBytes = 2048;

    const int fd_;
    std::array<char, 8192> buffer_;
    size_t begin_ = 0;
    size_t end_ = 0;
};

}  // namespace mooncake::net
