// BufferedReader: the receiving side of one connection, for a server that reads a request as
// several small fields (a header, then a key, then a client id) followed by a payload.
//
// Each small field read straight from the socket costs a system call, and on a virtual machine
// a call costs about a microsecond: as much as the rest of a small request's handling. This
// reader takes whatever has arrived in one recv (a whole request's fields, usually, since a
// client sends them in one write) and serves the fields from that; a large payload takes the
// buffered bytes first and then goes straight from the socket into the destination, so it is
// not copied through the buffer. Small payloads are: while the payloads coming in are small
// (a batch of 4 KiB pages), one recv takes up to a whole window of requests (256 KiB) and each
// payload is copied out of it, since copying 4 KiB costs a fraction of a recv's system call.
// After a large payload the reader goes back to small recvs, so the next large payload is not
// pulled through the buffer.
//
// Thread-safety: one thread per reader (one connection's thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/base/status.h"

namespace mooncake::net {

class BufferedReader {
public:
    explicit BufferedReader(int fd) : fd_(fd) {}

    // Waits for the next request's first bytes, up to `idle` (checked at each socket timeout,
    // SO_RCVTIMEO), unless some are buffered already. kTimeout when `idle` passed with none;
    // kUnavailable when the peer closed the connection (or it was shut down).
    Status WaitForData(std::chrono::milliseconds idle);
    // Exactly `size` bytes of a request's fields (errors as net::RecvAll).
    Status RecvAll(void* data, size_t size);
    // Exactly `size` bytes of a request's payload: as RecvAll, and the payload's size chooses
    // how much the next recvs take (see the top of the file).
    Status RecvPayload(void* data, size_t size);
    // Reads and drops `size` bytes.
    Status Discard(uint64_t size);
    size_t buffered() const { return end_ - begin_; }

private:
    // One recv into the empty buffer: at least one byte, as many as have arrived (up to
    // fill_limit_).
    Status Fill();
    // The buffered bytes, then the socket's, into data[0, size): straight from the socket
    // once at least `direct` bytes are left.
    Status Read(void* data, size_t size, size_t direct);

    // Field reads of at least this size skip the buffer (what is buffered is taken first).
    static constexpr size_t kDirectBytes = 2048;
    // Payloads below this size are copied through the buffer, and make the next recvs large.
    static constexpr size_t kSmallPayloadBytes = 16 * 1024;
    static constexpr size_t kFieldFillBytes = 8192;
    static constexpr size_t kBufferBytes = 256 * 1024;

    const int fd_;
    // kFieldFillBytes until the first small payload, then kBufferBytes: a connection that
    // only moves large values (or only reads) never holds the large buffer.
    std::unique_ptr<char[]> buffer_ = std::make_unique_for_overwrite<char[]>(kFieldFillBytes);
    size_t capacity_ = kFieldFillBytes;
    size_t fill_limit_ = kFieldFillBytes;
    size_t begin_ = 0;
    size_t end_ = 0;
};

}  // namespace mooncake::net
