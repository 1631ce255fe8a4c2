// SpillReader: the receiving side of a client's pipelined batch, where the answers of many
// requests arrive back to back on one connection.
//
// Each Read fills exactly the caller's buffers (an answer's header, its message, its payload
// straight in the caller's pieces), and the same readv also takes whatever has arrived past
// them into a small spill buffer: the next answer's header (and, when answers are small, many
// whole answers), which the next Read serves from memory. So a window of N answers costs about
// one readv per large answer and a handful for N small ones, and a large payload is never
// copied through a buffer (only what spilled past its end is). The spill's size is the
// caller's trade: large for small answers (one call takes many), small for large payloads
// (little copied).
//
// Thread-safety: one thread per reader.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <vector>

#include "core/base/status.h"

namespace mooncake::net {

class SpillReader {
public:
    SpillReader(int fd, size_t spill_bytes) : fd_(fd), spill_(spill_bytes) {}

    // Exactly the bytes of `buffers`, in order. A close before any byte of this Read ->
    // kUnavailable; mid-way -> kIoError; a timeout -> kTimeout (as net::RecvAll).
    Status Read(std::span<const iovec> buffers);
    Status Read(void* data, size_t size) {
        iovec one{data, size};
        return Read(std::span<const iovec>(&one, 1));
    }

private:
    const int fd_;
    std::vector<char> spill_;
    size_t begin_ = 0;  // spilled bytes not yet taken: [begin_, end_)
    size_t end_ = 0;
};

}  // namespace mooncake::net
