// Replies: the answers one data connection sends, held while more requests of a pipelined
// batch are on their way (net/data_protocol.h kFlagMore) and written together.
//
// Without it a batch of N values costs the server N sends; with it, one send per window (the
// request without kFlagMore flushes). A payload is referenced only during Send (a MEMORY one
// lives under the segment range's read lease, which the caller releases right after): up to
// kCopyBytes it is copied into the held bytes, a larger one is written at once, with whatever
// is held in front of it, in one writev. Held bytes are bounded (kMaxHeldBytes), so a client
// that sends a long window while not reading yet has at most that much waiting for it here.
//
// Thread-safety: one thread per Replies (its connection's thread).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"

namespace mooncake {

class Counter;

class Replies {
public:
    // `writes` counts the sends of answers (data_reply_writes_total): fewer than answers
    // when batches are pipelined.
    Replies(int fd, Counter& writes) : fd_(fd), writes_(writes) {}

    // Whether the answers to the request being handled may be held (it carried kFlagMore, or
    // the next request is already buffered). Set before handling each request.
    void set_hold(bool hold) { hold_ = hold; }

    // Answers one request: `status`, and for an OK read its payload (and the tier served, for
    // by-key reads). A not-ok return means the connection broke: stop serving it.
    Status Send(const Status& status, std::span<const std::byte> payload = {},
                std::optional<Tier> served_from = std::nullopt);
    int fd() const { return fd_; }
    // Writes what is held (nothing to do when nothing is).
    Status Flush();

    static constexpr size_t kCopyBytes = 16 * 1024;
    static constexpr size_t kMaxHeldBytes = 64 * 1024;

private:
    const int fd_;
    Counter& writes_;
    bool hold_ = false;
    std::vector<std::byte> held_;
};

}  // namespace mooncake
