// DiskReadSink: what a node's byte channels (node/data_server.h, node/shm_server.h) offer
// after they read a LOCAL_DISK object whole for a reader. A promotion of that very object
// waiting on this node for a worker takes the bytes and is done without reading the disk a
// second time (Node::TakeDiskRead): a read that comes while its block's promotion is queued
// (an engine's batch_get shortly after its prefetching batch_is_exist) no longer doubles the
// disk's load, and the promotion ends as soon as the read does.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/base/types.h"

namespace mooncake {

class AlignedBuffer;

class DiskReadSink {
public:
    virtual ~DiskReadSink() = default;
    // `buffer` holds the `size` bytes of (key, generation) as the disk store verified them;
    // the reader is done with it. Returns true when it was taken (moved from).
    virtual bool TakeDiskRead(std::string_view key, Generation generation, AlignedBuffer& buffer,
                              uint64_t size) = 0;
};

}  // namespace mooncake
