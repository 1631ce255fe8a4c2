// ExtentAllocator: free space of the data region, in whole blocks.
//
// Best fit for one extent; when no single free extent is large enough, the largest free
// extents are combined (up to a limit), so free space is usable even when fragmented.
// Freed extents coalesce with their neighbours.
//
// Not thread-safe: the disk store calls it under its index mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/disk/format.h"

namespace mooncake {

class ExtentAllocator {
  public:
    using Extent = disk_format::Extent;

    ExtentAllocator(uint64_t offset, uint64_t size);  // both block aligned

    // `bytes` rounded up to blocks, in at most `max_extents` pieces; nullopt if that cannot be
    // had (not enough free space, or too fragmented). Allocating 0 bytes gives no extents.
    std::optional<std::vector<Extent>> Allocate(uint64_t bytes, size_t max_extents);
    void Free(const Extent& extent);
    // Recovery: claims an extent known to be in use. False (and nothing claimed) if any part
    // of it is not free or lies outside the region.
    bool Claim(const Extent& extent);

    uint64_t free_bytes() const { return free_bytes_; }
    uint64_t size() const { return size_; }
    size_t fragments() const { return by_offset_.size(); }

  private:
    void Insert(uint64_t offset, uint64_t length);
    void Erase(std::map<uint64_t, uint64_t>::iterator it);

    const uint64_t offset_;
    const uint64_t size_;
    uint64_t free_bytes_ = 0;
    std::map<uint64_t, uint64_t> by_offset_;           // offset -> length
    std::set<std::pair<uint64_t, uint64_t>> by_size_;  // (length, offset)
};

}  // namespace mooncake
