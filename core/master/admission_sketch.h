// AdmissionSketch: a count-min sketch of how often each key is read, for promotion admission.
//
// Depth 4, 8-bit saturating counters. "Blocked": the four counters of a key sit in one 64-byte
// cache line (one row per 16-byte quarter), so an increment costs one cache miss, not four.
// Aging: once `window` increments have been seen, every counter is halved — spread over the
// next increments (each halves a small chunk), so no reader ever waits for a full sweep.
//
// The aging count is striped per thread (core/base/thread_stripe.h) and folded into the shared
// count every kFold increments, so concurrent readers do not pass one cache line back and
// forth on every Get; a thread compares the shared count plus its own unfolded share with the
// window, so one thread alone ages at exactly the window, as an exact count would.
//
// Keys the master holds an object for are counted in the object's own AccessCount
// (core/master/access_count.h) through the overloads below; the sketch itself then counts the reads
// of keys that do not exist (misses) and keeps the counts of objects that went (Fold). Every
// read, wherever counted, advances the aging window.
//
// Thread-safety: lock-free; Increment and Estimate may race freely (relaxed atomics; an
// estimate may be off by the increments racing it, and an aging by up to kFold increments per
// other thread, which admission tolerates).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/master/access_count.h"
#include "core/base/thread_stripe.h"

namespace mooncake {

class AdmissionSketch {
public:
    // `width`: counters per row, rounded up to a power of two (at least 64).
    explicit AdmissionSketch(uint64_t width);

    static uint64_t Hash(std::string_view key);

    // Counts one access; returns the key's estimate after it.
    uint32_t Increment(uint64_t hash);
    uint32_t Estimate(uint64_t hash) const;
    // Brings in the line Estimate(hash) and Increment(hash) read (a hint, no effect).
    void Prefetch(uint64_t hash) const { __builtin_prefetch(Line(hash)); }
    // The same for an object's own count (the caller holds what guards `count`). Increment
    // does not advance the aging window: call CountElsewhere once the guard is released.
    uint32_t Increment(AccessCount& count) const { return count.Increment(agings()); }
    uint32_t Estimate(const AccessCount& count) const { return count.Read(agings()); }
    // A new object's count starts from the key's estimate; returns it.
    uint32_t Seed(AccessCount& count, uint64_t hash) const {
        const uint32_t estimate = Estimate(hash);
        count.Set(estimate, agings());
        return estimate;
    }
    // A departing object's count is kept: each of the key's counters is raised to it.
    void Fold(const AccessCount& count, uint64_t hash);
    // A read counted in an object's own count: ages the sketch as Increment(hash) does.
    void CountElsewhere() {
        CountForAging();
        HalveSome();
    }

    // Increments between agings. 0 keeps the current window.
    void set_window(uint64_t window);
    uint64_t window() const { return window_.load(std::memory_order_relaxed); }
    uint64_t width() const { return width_; }
    uint64_t agings() const { return agings_.load(std::memory_order_relaxed); }
    // Halves everything at once (tests; the amortized path is used in service).
    void AgeNow();

private:
    static constexpr int kDepth = 4;
    static constexpr size_t kLine = 64;
    static constexpr size_t kChunk = 256;  // counters halved per increment while aging
    static constexpr uint64_t kFold = 64;  // a stripe's increments moved to since_aging_ at once

    // The key's cache line (lines_ is a power of two).
    std::atomic<uint8_t>* Line(uint64_t hash) const {
        return &counters_[static_cast<size_t>(hash & (lines_ - 1)) * kLine];
    }
    static size_t SlotOf(uint64_t hash, int row);
    void CountForAging();
    void HalveSome();

    struct alignas(64) Stripe {
        std::atomic<uint64_t> unfolded{0};
    };

    uint64_t width_;
    size_t lines_;
    struct FreeCounters {
        void operator()(std::atomic<uint8_t>* p) const;
    };
    // lines_ * 64, on huge pages where the kernel gives them: every miss and every Put touches
    // one random line, and with 4 KiB pages each of those would also take a TLB entry the
    // object table's lookups need.
    std::unique_ptr<std::atomic<uint8_t>[], FreeCounters> counters_;
    std::atomic<uint64_t> window_;
    std::atomic<uint64_t> since_aging_{0};  // folded increments since the last aging
    std::array<Stripe, kThreadStripes> stripes_;
    std::atomic<size_t> aging_cursor_;  // == total counters when no aging is in progress
    std::atomic<uint64_t> agings_{0};
};

}  // namespace mooncake
