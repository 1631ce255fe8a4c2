#include "core/segment_allocator.h"

#include <cassert>

#include "core/types.h"

namespace mooncake {

SegmentAllocator::SegmentAllocator(uint64_t capacity)
    : capacity_(capacity / kSegmentAlignment * kSegmentAlignment) {
    if (capacity_ > 0) InsertFree(0, capacity_);
}

uint64_t SegmentAllocator::RoundUp(uint64_t size) {
    return (size + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
}

std::optional<uint64_t> SegmentAllocator::Allocate(uint64_t size) {
    uint64_t need = RoundUp(size == 0 ? 1 : size);
    auto fit = by_size_.lower_bound({need, 0});
    if (fit == by_size_.end()) return std::nullopt;
    auto [length, offset] = *fit;
    EraseFree(by_offset_.find(offset));
    if (length > need) InsertFree(offset + need, length - need);
    used_ += need;
    return offset;
}

bool SegmentAllocator::AllocateAt(uint64_t offset, uint64_t size) {
    uint64_t need = RoundUp(size == 0 ? 1 : size);
    if (offset % kSegmentAlignment != 0 || offset > capacity_ || need > capacity_ - offset) {
        return false;
    }
    // The free extent starting at or before `offset` must cover the whole range.
    auto it = by_offset_.upper_bound(offset);
    if (it == by_offset_.begin()) return false;
    --it;
    auto [start, length] = *it;
    if (start + length < offset + need) return false;
    EraseFree(it);
    if (offset > start) InsertFree(start, offset - start);
    if (start + length > offset + need) InsertFree(offset + need, start + length - offset - need);
    used_ += need;
    return true;
}

void SegmentAllocator::Free(uint64_t offset, uint64_t size) {
    uint64_t length = RoundUp(size == 0 ? 1 : size);
    assert(offset % kSegmentAlignment == 0 && offset + length <= capacity_);
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
