// KeySample: the hashed sample of keys a miniature simulation of DRAM runs on (Waldspurger et
// al., "Cache Modeling and Optimization using Miniature Simulations", USENIX ATC 2017), and
// the size of that miniature DRAM. The adaptive promotion gate and the soft-pin trust rule
// each hold one; the same mix and the same sizing rule make them simulate the same keys.
//
// A key is sampled when the top `shift` bits of its mixed hash are zero; `shift` is chosen so
// the mini-DRAM holds about `target_objects` objects of the mean sampled size, and is checked
// again every 4096 sampled accesses (nodes join and leave, object sizes drift).
//
// Thread-safety: Contains() and shift() are lock-free (any thread). Observe() and the
// capacity accessors are called by the owner under its own mutex.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>

namespace mooncake {

class KeySample {
public:
    using CapacityFn = std::function<uint64_t()>;  // the store's DRAM capacity, bytes

    KeySample(CapacityFn capacity_bytes, uint64_t target_objects)
        : capacity_bytes_(std::move(capacity_bytes)), target_objects_(target_objects) {}

    // Whether the key whose AdmissionSketch::Hash is `hash` is in the sample.
    bool Contains(uint64_t hash) const {
        const int shift = shift_.load(std::memory_order_relaxed);
        // A different bit mix than the sketch's rows use, so the sample is not a sketch row.
        const uint64_t h = (hash ^ (hash >> 29)) * 0xBF58476D1CE4E5B9ull;
        return shift == 0 || (h >> (64 - shift)) == 0;
    }
    int shift() const { return shift_.load(std::memory_order_relaxed); }

    // One sampled access of `size` bytes. True when the sample changed: what the owner's
    // simulations hold describes other keys, and they must start over.
    bool Observe(uint64_t size) {
        if (observed_ == 0) mean_size_ = std::max<uint64_t>(size, 1);
        mean_size_ = static_cast<uint64_t>(static_cast<int64_t>(mean_size_) +
                                           (static_cast<int64_t>(size) -
                                            static_cast<int64_t>(mean_size_)) / 64);
        return observed_++ % 4096 == 0 && Resize();
    }

    uint64_t capacity_bytes() const { return capacity_; }  // of the mini-DRAM
    // Its capacity in objects of the mean sampled size (at least 1).
    uint64_t capacity_objects() const {
        return std::max<uint64_t>(capacity_ / std::max<uint64_t>(mean_size_, 1), 1);
    }

private:
    bool Resize() {
        const uint64_t capacity = capacity_bytes_ ? capacity_bytes_() : 0;
        const uint64_t objects = capacity / std::max<uint64_t>(mean_size_, 1);
        int shift = 0;
        while ((objects >> (shift + 1)) >= target_objects_ && shift < 40) ++shift;
        const bool changed = shift != shift_.load(std::memory_order_relaxed);
        shift_.store(shift, std::memory_order_relaxed);
        capacity_ = capacity >> shift;
        return changed;
    }

    CapacityFn capacity_bytes_;
    uint64_t target_objects_;
    std::atomic<int> shift_{0};
    uint64_t capacity_ = 0;      // mini-DRAM bytes
    uint64_t mean_size_ = 65536;  // EWMA of sampled object sizes
    uint64_t observed_ = 0;       // sampled accesses
};

}  // namespace mooncake
