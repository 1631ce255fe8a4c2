#include "core/disk/extent_allocator.h"

#include "core/disk/device.h"

namespace mooncake {

ExtentAllocator::ExtentAllocator(uint64_t offset, uint64_t size) : offset_(offset), size_(size) {
    if (size > 0) Insert(offset, size);
}

void ExtentAllocator::Insert(uint64_t offset, uint64_t length) {
    by_offset_.emplace(offset, length);
    by_size_.emplace(length, offset);
    free_bytes_ += length;
}

void ExtentAllocator::Erase(std::map<uint64_t, uint64_t>::iterator it) {
    by_size_.erase({it->second, it->first});
    free_bytes_ -= it->second;
    by_offset_.erase(it);
}

std::optional<std::vector<ExtentAllocator::Extent>> ExtentAllocator::Allocate(uint64_t bytes,
                                                                              size_t max_extents) {
    std::vector<Extent> out;
    uint64_t need = AlignUp(bytes);
    if (need == 0) return out;
    if (need > free_bytes_ || max_extents == 0) return std::nullopt;
    auto fit = by_size_.lower_bound({need, 0});
    if (fit != by_size_.end()) {
        auto [length, offset] = *fit;
        Erase(by_offset_.find(offset));
        if (length > need) Insert(offset + need, length - need);
        out.push_back({offset, need});
        return out;
    }
    // Fragmented: largest pieces first, so the fewest extents cover it.
    uint64_t covered = 0;
    std::vector<std::pair<uint64_t, uint64_t>> chosen;
    for (auto it = by_size_.rbegin(); it != by_size_.rend() && covered < need; ++it) {
        if (chosen.size() == max_extents) return std::nullopt;
        chosen.push_back(*it);
        covered += it->first;
    }
    if (covered < need) return std::nullopt;
    uint64_t left = need;
    for (auto [length, offset] : chosen) {
        Erase(by_offset_.find(offset));
        uint64_t take = std::min(length, left);
        if (length > take) Insert(offset + take, length - take);
        out.push_back({offset, take});
        left -= take;
    }
    return out;
}

void ExtentAllocator::Free(const Extent& extent) {
    uint64_t offset = extent.offset;
    uint64_t length = extent.length;
    if (length == 0) return;
    auto next = by_offset_.lower_bound(offset);
    if (next != by_offset_.end() && offset + length == next->first) {
        length += next->second;
        Erase(next);
    }
    auto after = by_offset_.lower_bound(offset);
    if (after != by_offset_.begin()) {
        auto prev = std::prev(after);
        if (prev->first + prev->second == offset) {
            offset = prev->first;
            length += prev->second;
            Erase(prev);
        }
    }
    Insert(offset, length);
}

bool ExtentAllocator::Claim(const Extent& extent) {
    if (extent.length == 0) return true;
    if (!IsAligned(extent.offset) || !IsAligned(extent.length) || extent.offset < offset_ ||
        extent.offset + extent.length > offset_ + size_ ||
        extent.offset + extent.length < extent.offset) {
        return false;
    }
    auto it = by_offset_.upper_bound(extent.offset);
    if (it == by_offset_.begin()) return false;
    --it;
    auto [start, length] = *it;
    if (start + length < extent.offset + extent.length) return false;
    Erase(it);
    if (extent.offset > start) Insert(start, extent.offset - start);
    uint64_t end = extent.offset + extent.length;
    if (start + length > end) Insert(end, start + length - end);
    return true;
}

}  // namespace mooncake
