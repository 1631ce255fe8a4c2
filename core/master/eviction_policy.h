// The hit-density estimator behind eviction_policy=hit_density (HitDensityOrder in
// core/master/eviction_order.h). Knob `eviction_policy`:
//   lru          — least recently used first (the default).
//   hit_density  — evict the object with the fewest expected hits per unit of DRAM time.
//   adaptive     — LRU, switching to the hit-density ranking while the adaptive promotion
//                  gate follows its `density` arm (core/master/adaptive_policy.h): the
//                  statistics are kept all along, the ranking is used only on evidence.
//
// hit_density, in short: every access (a Put, or a Get from any tier) gets a *class* from what
// is known at that moment — how often the object was accessed before, and for a Put the
// engine's optional PutHint (is it the request's last partial block; is the request a first
// turn or a continuation; how many new blocks it brings). The master keeps metadata of objects
// that live only on LOCAL_DISK, so every re-access yields an uncensored reuse gap: per class,
// a decayed histogram of reuse gaps (log-spaced age buckets) and a count of accesses give the
// probability of being re-read at each age. From it, for every (class, age bucket):
//
//   score = P(re-read within the next T | not re-read so far)
//           / E[DRAM time spent until that re-read or T, whichever first]
//
// with T the cache's own time scale (a moving average of the age of evicted objects). The
// MEMORY objects of a shard sit in one LRU list per class; eviction compares the cold ends of
// all lists and takes the lowest scores first (ties: least recently used).
//
// Thread-safety: counters are relaxed atomics (a racing decay may lose an increment, which
// only perturbs an estimate); the score table is rebuilt every few thousand accesses under
// a mutex and read through Snapshot().
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <mutex>
#include <string_view>

#include "core/base/clock.h"
#include "core/base/mutex.h"
#include "core/master/put_hint.h"

namespace mooncake {

enum class EvictionPolicyKind { kLru, kHitDensity, kAdaptive };
// "lru" | "hit_density" | "adaptive"; anything else is LRU (the knob table rejects other values).
EvictionPolicyKind ParseEvictionPolicy(std::string_view name);

class HitDensityEstimator {
public:
    static constexpr int kClasses = 11;
    static constexpr int kAgeBuckets = 64;
    // Classes.
    static constexpr int kPartialLast = 0;  // first access of a request's last partial block
    static constexpr int kNoHint = 1;       // first access, no hint
    static constexpr int kFirstSmall = 2;   // first turn (prefix hit <= 1 block), <= 32 blocks
    static constexpr int kFirstLarge = 3;   // first turn, > 32 blocks
    static constexpr int kCont = 4;         // continuation, +0..3 by its new blocks (<=2,8,32,more)
    static constexpr int kReread1 = 8;      // second access; 9 third; 10 fourth and later

    // The class of an access, given the accesses before it and, for a Put, the hint.
    static int ClassOf(uint32_t prior_accesses, const PutHint* hint);
    // floor(4 log2(1 + age in s)), at most kAgeBuckets - 1.
    static int AgeBucket(Nanos age);
    static Nanos BucketStart(int bucket);

    HitDensityEstimator();

    void RecordAccess(int cls, uint64_t objects_in_memory);
    void RecordReuse(int cls, Nanos gap);
    void RecordEviction(Nanos age);

    struct Table {
        bool ready = false;
        std::array<std::array<double, kAgeBuckets>, kClasses> score{};
    };
    Table Snapshot() const;
    static double Score(const Table& table, int cls, Nanos age);
    Nanos Horizon() const;
    // Rebuilds the table now (tests; normally every kRebuildEvery accesses).
    void Rebuild();

private:
    static constexpr uint64_t kRebuildEvery = 2048;
    static constexpr double kMinSamples = 32;  // below this a class borrows the pooled estimate

    std::array<std::array<std::atomic<uint64_t>, kAgeBuckets>, kClasses> reuses_{};
    std::array<std::atomic<uint64_t>, kClasses> accesses_{};
    std::atomic<uint64_t> ticks_{0};
    std::atomic<uint64_t> since_decay_{0};
    std::atomic<int64_t> horizon_ns_{0};  // EWMA of eviction ages; 0: none yet

    mutable Mutex table_mu_;
    Table table_ MC_GUARDED_BY(table_mu_);
    Mutex rebuild_mu_;  // one periodic rebuild at a time; the others skip theirs
};

}  // namespace mooncake
