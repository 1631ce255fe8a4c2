// PutHint: what an inference engine knows about a KV block when it puts it, passed optionally
// with PutStart. Every field is optional (-1 / false: unknown); the store works without any.
// Only eviction_policy=hit_density reads it, to give the block a class whose reuse statistics
// are learned online (see core/master/eviction_policy.h).
#pragma once

#include <cstdint>

namespace mooncake {

struct PutHint {
    int32_t position = -1;           // block index in its request (0 = first)
    int32_t request_blocks = -1;     // blocks in the request's input
    int32_t prefix_hit_blocks = -1;  // leading blocks of the request the store already had
    bool last_partial = false;       // the request's last block, not full (input % block != 0)

    bool HasRequest() const { return request_blocks > 0 && prefix_hit_blocks >= 0; }
};

}  // namespace mooncake
