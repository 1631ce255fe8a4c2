#include "core/base/segment_allocator.h"

#include <atomic>
#include <cassert>

#include "core/base/types.h"

namespace mooncake {
namespace {

std::atomic<uint64_t> g_granularity{64};

uint64_t AlignUp(uint64_t value, uint64_t unit) { return (value + unit - 1) / unit * unit; }

// Candidates looked at in size order before jumping to extents surely large enough.
constexpr int kAlignedFitProbes = 16;

}  // namespace

void SegmentAllocator::SetGranularity(uint64_t bytes) {
    uint64_t g = kMinGranularity;
    while (g < bytes && g < kSegmentAlignment) g *= 2;
    g_granularity.store(g, std::memory_order_relaxed);
}

uint64_t SegmentAllocator::granularity() { return g_granularity.load(std::memory_order_relaxed); }

uint64_t SegmentAllocator::UnitFor(uint64_t size) {
    return size >= kSegmentAlignment ? kSegmentAlignment : granularity();
}

SegmentAllocator::SegmentAllocator(uint64_t capacity)
    : capacity_(capacity / kSegmentAlignment * kSegmentAlignment) {
    if (capacity_ > 0) InsertFree(0, capacity_);
}

uint64_t SegmentAllocator::RoundUp(uint64_t size) {
    return AlignUp(size == 0 ? 1 : size, UnitFor(size));
}

std::optional<uint64_t> SegmentAllocator::Allocate(uint64_t size) {
    const uint64_t need = RoundUp(size);
    const uint64_t align = UnitFor(size);
    // Best fit whose aligned start still leaves `need` bytes. Extents start on granule
    // boundaries, so one of at least need + align - granule bytes always fits: after a few
    // probes, jump there.
    auto fits = [&](uint64_t length, uint64_t offset) {
        return length >= AlignUp(offset, align) - offset + need;
    };
    auto fit = by_size_.lower_bound({need, 0});
    for (int probes = 0; fit != by_size_.end() && !fits(fit->first, fit->second); ++probes) {
        if (probes == kAlignedFitProbes) {
            fit = by_size_.lower_bound({need + align - granularity(), 0});
        } else {
            ++fit;
        }
    }
    if (fit == by_size_.end()) return std::nullopt;
    const auto [length, start] = *fit;
    const uint64_t offset = AlignUp(start, align);
    Carve(start, length, offset, need);
    return offset;
}

bool SegmentAllocator::AllocateAt(uint64_t offset, uint64_t size) {
    const uint64_t need = RoundUp(size);
    if (offset % UnitFor(size) != 0 || offset > capacity_ || need > capacity_ - offset) {
        return false;
    }
    // The free extent starting at or before `offset` must cover the whole range.
    auto it = by_offset_.upper_bound(offset);
    if (it == by_offset_.begin()) return false;
    --it;
    auto [start, length] = *it;
    if (start + length < offset + need) return false;
    Carve(start, length, offset, need);
    return true;
}

void SegmentAllocator::Carve(uint64_t start, uint64_t length, uint64_t offset, uint64_t need) {
    EraseFree(by_offset_.find(start));
    if (offset > start) InsertFree(start, offset - start);
    if (start + length > offset + need) InsertFree(offset + need, start + length - offset - need);
    used_ += need;
}

void SegmentAllocator::Free(uint64_t offset, uint64_t size) {
    uint64_t length = RoundUp(size);
    assert(offset % UnitFor(size) == 0 && offset + length <= capacity_);
    assert(used_ >= length);
    used_ -= length;
    // Coalesce with the free extent after and the one before.
    auto next = by_offset_.lower_bound(offset);
    assert(next == by_offset_.end() || next->first >= offset + length);
    if (next != by_offset_.end() && next->first == offset + length) {
        length += next->second;
        EraseFree(next);
    }
    auto after = by_offset_.lower_bound(offset);
    if (after != by_offset_.begin()) {
        auto prev = std::prev(after);
        assert(prev->first + prev->second <= offset);
        if (prev->first + prev->second == offset) {
            offset = prev->first;
            length += prev->second;
            EraseFree(prev);
        }
    }
    InsertFree(offset, length);
}

uint64_t SegmentAllocator::largest_free_extent() const {
    return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

double SegmentAllocator::fragmentation() const {
    uint64_t free = free_bytes();
    if (free == 0) return 0.0;
    return 1.0 - static_cast<double>(largest_free_extent()) / static_cast<double>(free);
}

void SegmentAllocator::InsertFree(uint64_t offset, uint64_t length) {
    by_offset_.emplace(offset, length);
    by_size_.emplace(length, offset);
}

void SegmentAllocator::EraseFree(std::map<uint64_t, uint64_t>::iterator it) {
    by_size_.erase({it->second, it->first});
    by_offset_.erase(it);
}

}  // namespace mooncake
