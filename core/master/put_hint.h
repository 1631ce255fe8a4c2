// PutHint: what an inference engine knows about a KV block when it puts it, passed optionally
// with PutStart. Every field is optional (-1 / false: unknown); the store works without any.
// eviction_policy=hit_density reads it, to give the block a class whose reuse statistics are
// learned online (see core/master/eviction_policy.h); `last_partial` also lists the object at
// the cold end of an LRU order when its put ends (knob partial_tail_cold).
//
// BatchShape: where no engine says so, `last_partial` is inferred from one batched put, for
// free (bench/replay/POLICIES.md, "Issue 37: a batch's partial tail inserted cold").
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

// The sizes of one batched put, in order, seen one at a time (a daemon sees a pipelined
// batch's values as they arrive). An engine that stores a request's KV blocks in one batch
// and whose last chunk holds only the remainder of the input (LMCache) sends values that are
// all one size but the last, which is smaller: that last value is the request's partial tail
// block. Its tokens are continued under a new block id the next turn, so it is read again
// rarely (0.007 on the conversation trace against 0.24-0.31 for a full block's first access).
// Engines that store full pages only (vLLM, SGLang) never send such a batch: nothing changes
// for them. A single put says nothing (there is no "others" to be smaller than).
class BatchShape {
public:
    // The batch's next value.
    void Add(uint64_t size) {
        if (count_ == 1) {
            full_ = last_;
        } else if (count_ > 1 && last_ != full_) {
            uniform_ = false;
        }
        last_ = size;
        ++count_;
    }
    // Whether the value added last is a partial tail: at least two values, all but the last
    // of one size, the last smaller.
    bool LastIsPartialTail() const { return count_ >= 2 && uniform_ && last_ < full_; }
    void Reset() { *this = BatchShape(); }

private:
    uint64_t count_ = 0;
    uint64_t full_ = 0;  // the size of the values before the last (while uniform_)
    uint64_t last_ = 0;
    bool uniform_ = true;
};

}  // namespace mooncake
