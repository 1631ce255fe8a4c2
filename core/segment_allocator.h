// SegmentAllocator: hands out 4 KiB-aligned ranges of one node's DRAM segment.
//
// Best fit over free extents, coalescing neighbours on free: under churn of mixed sizes this
// keeps fragmentation bounded (the unit tests measure it) and an allocation is O(log n).
// Not thread-safe: the owner (one per node segment) serializes calls with its own mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace mooncake {

class SegmentAllocator {
public:
    explicit SegmentAllocator(uint64_t capacity);  // rounded down to the alignment

    static uint64_t RoundUp(uint64_t size);  // to 4 KiB

    // Offset of a range of RoundUp(size) bytes, or nullopt when no free extent is large enough.
    std::optional<uint64_t> Allocate(uint64_t size);
    // Claims exactly [offset, offset + RoundUp(size)) if all of it is free (a range a node
    // reports holding after the master restarted); false otherwise, nothing changed.
    bool AllocateAt(uint64_t offset, uint64_t size);
    // `size` as passed to Allocate. Freeing a range that is not allocated is a bug (asserts).
    void Free(uint64_t offset, uint64_t size);

    uint64_t capacity() const { return capacity_; }
    uint64_t used() const { return used_; }
    uint64_t free_bytes() const { return capacity_ - used_; }
    uint64_t largest_free_extent() const;
    size_t free_extent_count() const { return by_offset_.size(); }
    // 1 - largest_free / free: 0 when the free space is one extent, near 1 when it is dust.
    double fragmentation() const;

private:
    void InsertFree(uint64_t offset, uint64_t length);
    void EraseFree(std::map<uint64_t, uint64_t>::iterator it);

    uint64_t capacity_;
    uint64_t used_ = 0;
    std::map<uint64_t, uint64_t> by_offset_;       // offset -> length
    std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (length, offset)
};

}  // namespace mooncake
