// SegmentAllocator: hands out ranges of one node's DRAM segment.
//
// Granularity (knob dram_alloc_granularity, a power of two from 8 B to 4 KiB, default 64 B):
//   values under 4 KiB   take whole granules, aligned to one: 20,000 values of 7-11 bytes
//                        take 1.25 MiB at 64 B, where 4 KiB units took 80 MiB;
//   values of 4 KiB up   take whole 4 KiB blocks at 4 KiB-aligned offsets, so the node's
//                        O_DIRECT I/O (offload writes, disk reads) moves their whole blocks
//                        straight from and to the segment. A small value is always staged
//                        through a one-block bounce buffer by DiskStore, aligned or not.
// The trade-off: a smaller granule wastes less DRAM per small value but leaves smaller free
// holes (more free extents: ~100 bytes of master memory each, and more fragmentation under
// churn); 64 B is one cache line, so values never share one and copies stay line-aligned.
// The granularity is process-wide, set once when the master starts (SetGranularity): every
// live range was cut with it, so it is not runtime-tunable.
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
    explicit SegmentAllocator(uint64_t capacity);  // rounded down to 4 KiB

    // The granule, rounded up to a power of two within [kMinGranularity, kSegmentAlignment].
    static void SetGranularity(uint64_t bytes);
    static uint64_t granularity();
    static constexpr uint64_t kMinGranularity = 8;
    // The unit (and alignment) of a range for `size`: the granule under 4 KiB, else 4 KiB.
    static uint64_t UnitFor(uint64_t size);
    // The bytes a range for `size` takes: whole units (a zero-byte value takes one).
    static uint64_t RoundUp(uint64_t size);

    // Offset of a range of RoundUp(size) bytes aligned to UnitFor(size), or nullopt when no
    // free extent holds one.
    std::optional<uint64_t> Allocate(uint64_t size);
    // Claims exactly [offset, offset + RoundUp(size)) if all of it is free and `offset` is
    // aligned to UnitFor(size) (a range a node reports holding after the master restarted);
    // false otherwise, nothing changed.
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
    // Takes [offset, offset + need) out of the free extent (start, length) that covers it.
    void Carve(uint64_t start, uint64_t length, uint64_t offset, uint64_t need);

    uint64_t capacity_;
    uint64_t used_ = 0;
    std::map<uint64_t, uint64_t> by_offset_;       // offset -> length
    std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (length, offset)
};

}  // namespace mooncake
