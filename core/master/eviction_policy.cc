#include "core/master/eviction_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mooncake {

EvictionPolicyKind ParseEvictionPolicy(std::string_view name) {
    if (name == "hit_density") return EvictionPolicyKind::kHitDensity;
    if (name == "adaptive") return EvictionPolicyKind::kAdaptive;
    return EvictionPolicyKind::kLru;
}

int HitDensityEstimator::ClassOf(uint32_t prior_accesses, const PutHint* hint) {
    if (prior_accesses >= 1) return kReread1 + static_cast<int>(std::min<uint32_t>(prior_accesses, 3) - 1);
    if (hint == nullptr) return kNoHint;
    if (hint->last_partial) return kPartialLast;
    if (!hint->HasRequest()) return kNoHint;
    // A prefix hit of at most one block is a shared system prompt at most: a first turn.
    if (hint->prefix_hit_blocks <= 1) {
        return hint->request_blocks <= 32 ? kFirstSmall : kFirstLarge;
    }
    int32_t fresh = std::max(0, hint->request_blocks - hint->prefix_hit_blocks);
    int bucket = fresh <= 2 ? 0 : fresh <= 8 ? 1 : fresh <= 32 ? 2 : 3;
    return kCont + bucket;
}

int HitDensityEstimator::AgeBucket(Nanos age) {
    double seconds = std::max(0.0, std::chrono::duration<double>(age).count());
    int b = static_cast<int>(4.0 * std::log2(1.0 + seconds));
    return std::clamp(b, 0, kAgeBuckets - 1);
}

Nanos HitDensityEstimator::BucketStart(int bucket) {
    double seconds = std::exp2(static_cast<double>(bucket) / 4.0) - 1.0;
    return std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(seconds));
}

HitDensityEstimator::HitDensityEstimator() = default;

void HitDensityEstimator::RecordAccess(int cls, uint64_t objects_in_memory) {
    accesses_[static_cast<size_t>(cls)].fetch_add(1, std::memory_order_relaxed);
    // Halve every count once 16 x the objects in DRAM accesses have been seen: old behaviour
    // fades, while the window stays long against the cache's own time scale (gaps of accesses
    // not yet re-read are still pending, so a short window would under-count long gaps).
    uint64_t window = 16 * std::max<uint64_t>(objects_in_memory, 4096);
    if (since_decay_.fetch_add(1, std::memory_order_relaxed) + 1 >= window) {
        since_decay_.store(0, std::memory_order_relaxed);
        for (auto& row : reuses_) {
            for (auto& c : row) c.store(c.load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
        }
        for (auto& c : accesses_) c.store(c.load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
    }
    if (ticks_.fetch_add(1, std::memory_order_relaxed) % kRebuildEvery == 0) {
        if (rebuild_mu_.try_lock()) {
            Rebuild();
            rebuild_mu_.unlock();
        }
    }
}

void HitDensityEstimator::RecordReuse(int cls, Nanos gap) {
    reuses_[static_cast<size_t>(cls)][static_cast<size_t>(AgeBucket(gap))].fetch_add(
        1, std::memory_order_relaxed);
}

void HitDensityEstimator::RecordEviction(Nanos age) {
    // EWMA with weight 1/1024; a racing update loses one sample at worst.
    int64_t sample = std::max<int64_t>(age.count(), 0);
    int64_t cur = horizon_ns_.load(std::memory_order_relaxed);
    int64_t next = cur == 0 ? sample : cur + (sample - cur) / 1024;
    horizon_ns_.store(std::max<int64_t>(next, 1), std::memory_order_relaxed);
}

Nanos HitDensityEstimator::Horizon() const {
    int64_t h = horizon_ns_.load(std::memory_order_relaxed);
    // Before any eviction the ranking does not matter; a minute is a neutral default.
    if (h == 0) return std::chrono::seconds(60);
    return std::max<Nanos>(Nanos(h), std::chrono::seconds(1));
}

namespace {

// score[i] for one class from its reuse histogram and access count: expected re-reads in
// (age, age + T] per second of DRAM time, for an object that reached the start of bucket i.
void ScoreRow(const std::array<double, HitDensityEstimator::kAgeBuckets>& reuses, double total,
              double horizon_s, std::array<double, HitDensityEstimator::kAgeBuckets>& out) {
    constexpr int kB = HitDensityEstimator::kAgeBuckets;
    double reused = 0;
    for (double r : reuses) reused += r;
    double never = std::max(0.0, total - reused);
    for (int i = 0; i < kB; ++i) {
        double age = std::chrono::duration<double>(HitDensityEstimator::BucketStart(i)).count();
        double hits = 0;
        double occupancy = never * horizon_s;
        for (int j = i; j < kB; ++j) {
            double lo = std::chrono::duration<double>(HitDensityEstimator::BucketStart(j)).count();
            double hi = std::chrono::duration<double>(HitDensityEstimator::BucketStart(j + 1)).count();
            double wait = (lo + hi) / 2 - age;
            if (wait <= horizon_s) {
                hits += reuses[static_cast<size_t>(j)];
                occupancy += std::max(wait, 0.0) * reuses[static_cast<size_t>(j)];
            } else {
                occupancy += horizon_s * reuses[static_cast<size_t>(j)];
            }
        }
        out[static_cast<size_t>(i)] = occupancy > 0 ? hits / occupancy : 0.0;
    }
}

}  // namespace

void HitDensityEstimator::Rebuild() {
    Table fresh;
    double horizon_s = std::chrono::duration<double>(Horizon()).count();
    std::array<double, kAgeBuckets> pooled{};
    double pooled_total = 0;
    std::array<std::array<double, kAgeBuckets>, kClasses> hist{};
    std::array<double, kClasses> totals{};
    for (int c = 0; c < kClasses; ++c) {
        for (int b = 0; b < kAgeBuckets; ++b) {
            double v = static_cast<double>(
                reuses_[static_cast<size_t>(c)][static_cast<size_t>(b)].load(std::memory_order_relaxed));
            hist[static_cast<size_t>(c)][static_cast<size_t>(b)] = v;
            pooled[static_cast<size_t>(b)] += v;
        }
        totals[static_cast<size_t>(c)] =
            static_cast<double>(accesses_[static_cast<size_t>(c)].load(std::memory_order_relaxed));
        pooled_total += totals[static_cast<size_t>(c)];
    }
    std::array<double, kAgeBuckets> pooled_row{};
    ScoreRow(pooled, pooled_total, horizon_s, pooled_row);
    for (int c = 0; c < kClasses; ++c) {
        auto& row = fresh.score[static_cast<size_t>(c)];
        if (totals[static_cast<size_t>(c)] < kMinSamples) {
            row = pooled_row;  // too little evidence: behave like the average object (LRU-like)
        } else {
            ScoreRow(hist[static_cast<size_t>(c)], totals[static_cast<size_t>(c)], horizon_s, row);
        }
    }
    fresh.ready = pooled_total >= kMinSamples;
    MutexLock lock(table_mu_);
    table_ = fresh;
}

HitDensityEstimator::Table HitDensityEstimator::Snapshot() const {
    MutexLock lock(table_mu_);
    return table_;
}

double HitDensityEstimator::Score(const Table& table, int cls, Nanos age) {
    if (!table.ready) return 0.0;  // no statistics yet: every object equal, recency decides
    return table.score[static_cast<size_t>(cls)][static_cast<size_t>(AgeBucket(age))];
}

}  // namespace mooncake
