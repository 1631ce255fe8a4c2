// ReferenceLru: an exact LRU of MEMORY objects over an unbounded LOCAL_DISK, computed on the
// side as a yardstick for the real store's replay. DRAM is counted in bytes as the store's
// allocator takes them (SegmentAllocator::RoundUp), each block the size it was first put
// with, so a request's smaller partial tail takes what it takes in the store. With promotion, a
// disk hit whose read count reaches the admission threshold moves the object into MEMORY at once
// ("instant promotion"). Counts are exact (no sketch error) and age like the store's sketch:
// every `window` reads, all counts are halved.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <unordered_set>

#include "bench/replay/request_metrics.h"

namespace mooncake::replay {

struct SimCounts {
    uint64_t references = 0;
    uint64_t mem_hits = 0;
    uint64_t disk_hits = 0;
    uint64_t misses = 0;
    uint64_t promotions = 0;
};

class ReferenceLru {
public:
    ReferenceLru(uint64_t capacity_bytes, bool promotion, uint32_t threshold, uint64_t window);
    // Where the block was found (a miss is then put into MEMORY with `bytes`).
    BlockSource Access(int64_t block, uint64_t bytes);
    const SimCounts& counts() const { return counts_; }

private:
    void InsertFront(int64_t block);

    uint64_t capacity_;  // bytes
    uint64_t used_ = 0;
    std::unordered_map<int64_t, uint64_t> bytes_;  // each block's DRAM footprint, from its put
    bool promotion_;
    uint32_t threshold_;
    uint64_t window_;
    uint64_t since_aging_ = 0;
    std::list<int64_t> lru_;  // most recent first
    std::unordered_map<int64_t, std::list<int64_t>::iterator> in_memory_;
    std::unordered_set<int64_t> on_disk_;
    std::unordered_map<int64_t, uint32_t> reads_;
    SimCounts counts_;
};

}  // namespace mooncake::replay
