// ReadWithOneRelook: the retry rule every reader of a key follows (the client's Get, GetInto
// and GetTo, and a standalone daemon's by-key read), kept in one place.
//
// A replica can vanish between the lookup and the read (eviction of an unleased copy, a node
// leaving): its node then refuses the read, and one fresh lookup is worth it. A copy that
// failed its checksum is dropped by its node and the key removed by the master, so the second
// look finds the key gone: the reader is told why ("corrupt"), not "not found".
#pragma once

#include "core/base/status.h"

namespace mooncake::net {

// `attempt(round, stop)` does one lookup and read (round 0, then 1) and returns the read's
// status. It sets `stop` for an answer a second look cannot change (the lookup failed, the
// caller's buffer is too small, the destination cannot start over).
template <typename Attempt>
Status ReadWithOneRelook(Attempt attempt) {
    Status last;
    Status corruption;
    for (int round = 0; round < 2; ++round) {
        bool stop = false;
        last = attempt(round, stop);
        if (last.ok() || stop) break;
        if (last.Is(StatusCode::kCorruption)) corruption = last;
    }
    return !corruption.ok() && !last.ok() ? corruption : last;
}

}  // namespace mooncake::net
