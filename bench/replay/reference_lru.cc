#include "bench/replay/reference_lru.h"

#include <algorithm>

#include "core/base/segment_allocator.h"

namespace mooncake::replay {

ReferenceLru::ReferenceLru(uint64_t capacity_bytes, bool promotion, uint32_t threshold,
                           uint64_t window)
    : capacity_(capacity_bytes),
      promotion_(promotion),
      threshold_(std::max<uint32_t>(threshold, 1)),
      window_(window) {}

void ReferenceLru::InsertFront(int64_t block) {
    const uint64_t need = bytes_.at(block);
    if (need > capacity_) {
        on_disk_.insert(block);
        return;
    }
    while (used_ + need > capacity_) {
        int64_t victim = lru_.back();
        lru_.pop_back();
        in_memory_.erase(victim);
        on_disk_.insert(victim);
        used_ -= bytes_.at(victim);
    }
    lru_.push_front(block);
    in_memory_[block] = lru_.begin();
    used_ += need;
}

BlockSource ReferenceLru::Access(int64_t block, uint64_t bytes) {
    ++counts_.references;
    bytes_.try_emplace(block, SegmentAllocator::RoundUp(bytes));
    uint32_t reads = 0;
    if (promotion_) {
        uint32_t& c = reads_[block];
        c = std::min<uint32_t>(c + 1, 255);
        reads = c;
        if (++since_aging_ >= window_) {
            since_aging_ = 0;
            for (auto it = reads_.begin(); it != reads_.end();) {
                it->second >>= 1;
                it = it->second == 0 ? reads_.erase(it) : std::next(it);
            }
        }
    }
    if (auto it = in_memory_.find(block); it != in_memory_.end()) {
        ++counts_.mem_hits;
        lru_.splice(lru_.begin(), lru_, it->second);
        return BlockSource::kMemory;
    }
    if (on_disk_.count(block)) {
        ++counts_.disk_hits;
        if (promotion_ && reads >= threshold_) {
            ++counts_.promotions;
            InsertFront(block);  // the disk copy stays, as in the store
        }
        return BlockSource::kDisk;
    }
    ++counts_.misses;
    InsertFront(block);
    return BlockSource::kMiss;
}

}  // namespace mooncake::replay
