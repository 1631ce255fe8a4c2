#include "core/adaptive_policy.h"

#include <algorithm>
#include <bit>

#include "core/metrics.h"

namespace mooncake {

// One arm's mini-DRAM: an exact LRU of sampled keys, by bytes.
struct AdaptivePromotionGate::Sim {
    struct Entry {
        uint64_t hash;
        uint64_t size;
    };
    std::list<Entry> lru;  // most recent first
    std::unordered_map<uint64_t, std::list<Entry>::iterator> where;
    uint64_t used = 0;

    bool Contains(uint64_t hash) const { return where.count(hash) != 0; }
    void Touch(uint64_t hash) { lru.splice(lru.begin(), lru, where.at(hash)); }
    void EvictFor(uint64_t size, uint64_t capacity) {
        while (!lru.empty() && used + size > capacity) {
            used -= lru.back().size;
            where.erase(lru.back().hash);
            lru.pop_back();
        }
    }
    void Insert(uint64_t hash, uint64_t size, uint64_t capacity) {
        if (size > capacity) return;
        EvictFor(size, capacity);
        lru.push_front({hash, size});
        where[hash] = lru.begin();
        used += size;
    }
    void Clear() {
        lru.clear();
        where.clear();
        used = 0;
    }
};

const char* AdaptivePromotionGate::ArmName(Arm arm) {
    switch (arm) {
        case Arm::kAlways: return "always";
        case Arm::kCompare: return "compare";
        case Arm::kNever: return "never";
    }
    return "always";
}

AdaptivePromotionGate::AdaptivePromotionGate(MetricsRegistry& registry, CapacityFn capacity_bytes,
                                             EstimateFn estimate)
    : AdaptivePromotionGate(registry, std::move(capacity_bytes), std::move(estimate), Options{}) {}

AdaptivePromotionGate::AdaptivePromotionGate(MetricsRegistry& registry, CapacityFn capacity_bytes,
                                             EstimateFn estimate, Options options)
    : options_(options), capacity_bytes_(std::move(capacity_bytes)), estimate_(std::move(estimate)) {
    for (int a = 0; a < kArms; ++a) {
        sims_[static_cast<size_t>(a)] = new Sim();
        const char* arm = ArmName(static_cast<Arm>(a));
        for (int promoted = 0; promoted < 2; ++promoted) {
            decisions_[static_cast<size_t>(a)][static_cast<size_t>(promoted)] = &registry.GetCounter(
                "promotion_gate_decisions_total",
                "promotions into full DRAM judged by promotion_gate=adaptive, by the arm "
                "followed and the outcome",
                {{"arm", arm}, {"outcome", promoted ? "promoted" : "refused"}});
        }
        sim_hits_[static_cast<size_t>(a)] = &registry.GetCounter(
            "promotion_gate_sim_hits_total",
            "MEMORY hits of each arm's miniature simulation (sampled keys)", {{"arm", arm}});
        arm_gauge_[static_cast<size_t>(a)] = &registry.GetGauge(
            "promotion_gate_arm", "1 for the arm promotion_gate=adaptive follows now",
            {{"arm", arm}});
    }
    arm_gauge_[static_cast<size_t>(Current())]->Set(1);
    switches_ = &registry.GetCounter("promotion_gate_switches_total",
                                     "times promotion_gate=adaptive changed arm");
}

AdaptivePromotionGate::~AdaptivePromotionGate() {
    for (Sim* s : sims_) delete s;
}

int AdaptivePromotionGate::SampleShift() const { return shift_.load(std::memory_order_relaxed); }

bool AdaptivePromotionGate::Sampled(uint64_t hash) const {
    int shift = shift_.load(std::memory_order_relaxed);
    // A different bit mix than the sketch's rows use, so the sample is not a sketch row.
    uint64_t h = (hash ^ (hash >> 29)) * 0xBF58476D1CE4E5B9ull;
    return shift == 0 || (h >> (64 - shift)) == 0;
}

void AdaptivePromotionGate::MaybeResize() {
    uint64_t capacity = capacity_bytes_ ? capacity_bytes_() : 0;
    uint64_t objects = capacity / std::max<uint64_t>(mean_size_, 1);
    int shift = 0;
    while ((objects >> (shift + 1)) >= options_.target_sample_objects && shift < 40) ++shift;
    uint64_t sim_capacity = capacity >> shift;
    if (shift != shift_.load(std::memory_order_relaxed)) {
        // A different sample: the old simulations describe other keys. Start over.
        shift_.store(shift, std::memory_order_relaxed);
        for (Sim* s : sims_) s->Clear();
        score_ = {};
    }
    sim_capacity_ = sim_capacity;
}

void AdaptivePromotionGate::OnGet(uint64_t hash, uint64_t size, uint32_t estimate,
                                  uint32_t threshold) {
    if (!Sampled(hash)) return;
    std::lock_guard lock(mu_);
    Access(hash, size, /*put=*/false, estimate, threshold);
}

void AdaptivePromotionGate::OnPut(uint64_t hash, uint64_t size) {
    if (!Sampled(hash)) return;
    std::lock_guard lock(mu_);
    Access(hash, size, /*put=*/true, 0, 0);
}

void AdaptivePromotionGate::Access(uint64_t hash, uint64_t size, bool put, uint32_t estimate,
                                   uint32_t threshold) {
    if (sampled_ == 0) mean_size_ = std::max<uint64_t>(size, 1);
    mean_size_ = static_cast<uint64_t>(static_cast<int64_t>(mean_size_) +
                                       (static_cast<int64_t>(size) - static_cast<int64_t>(mean_size_)) / 64);
    if (sampled_++ % 4096 == 0) MaybeResize();
    const uint64_t cap_objects = std::max<uint64_t>(sim_capacity_ / std::max<uint64_t>(mean_size_, 1), 1);
    const uint32_t count = estimate;
    const uint32_t need = std::max<uint32_t>(threshold, 1);
    for (int a = 0; a < kArms; ++a) {
        Sim& sim = *sims_[static_cast<size_t>(a)];
        if (sim.Contains(hash)) {
            sim.Touch(hash);
            if (!put) {
                score_[static_cast<size_t>(a)] += 1;
                sim_hits_[static_cast<size_t>(a)]->Inc();
            }
            continue;
        }
        if (put) {
            sim.Insert(hash, size, sim_capacity_);  // a Put always goes to DRAM
            continue;
        }
        // A LOCAL_DISK hit: the arm decides whether it comes back.
        if (count < need) continue;
        bool room = sim.used + size <= sim_capacity_;
        bool promote = room;
        if (!room) {
            switch (static_cast<Arm>(a)) {
                case Arm::kAlways: promote = true; break;
                case Arm::kNever: promote = false; break;
                case Arm::kCompare: {
                    // The victims this promotion would displace, coldest first.
                    uint32_t victim_max = 0;
                    uint64_t freed = 0;
                    for (auto it = sim.lru.rbegin();
                         it != sim.lru.rend() && sim.used - freed + size > sim_capacity_; ++it) {
                        victim_max = std::max(victim_max, estimate_ ? estimate_(it->hash) : 0u);
                        freed += it->size;
                    }
                    promote = count > victim_max;
                    break;
                }
            }
        }
        if (promote) sim.Insert(hash, size, sim_capacity_);
    }
    // Old behaviour fades: halve the scores every decay_capacities x mini capacity accesses.
    if (++since_decay_ >= options_.decay_capacities * cap_objects) {
        since_decay_ = 0;
        for (double& s : score_) s /= 2;
    }
    if (sampled_ % 64 == 0) Decide();
}

void AdaptivePromotionGate::Decide() {
    auto cur = static_cast<size_t>(current_.load(std::memory_order_relaxed));
    size_t best = cur;
    for (size_t a = 0; a < kArms; ++a) {
        if (score_[a] > score_[best]) best = a;
    }
    if (best == cur) return;
    if (score_[best] <= score_[cur] * (1 + options_.switch_margin) + options_.min_lead) return;
    current_.store(static_cast<uint8_t>(best), std::memory_order_relaxed);
    arm_gauge_[cur]->Set(0);
    arm_gauge_[best]->Set(1);
    switches_->Inc();
}

void AdaptivePromotionGate::CountDecision(Arm arm, bool promoted) {
    decisions_[static_cast<size_t>(arm)][promoted ? 1 : 0]->Inc();
}

std::array<double, AdaptivePromotionGate::kArms> AdaptivePromotionGate::Scores() const {
    std::lock_guard lock(mu_);
    return score_;
}

}  // namespace mooncake
