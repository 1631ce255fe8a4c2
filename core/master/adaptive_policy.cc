#include "core/master/adaptive_policy.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/base/metrics.h"

namespace mooncake {

const char* AdaptivePromotionGate::ArmName(Arm arm) {
    switch (arm) {
        case Arm::kAlways: return "always";
        case Arm::kCompare: return "compare";
        case Arm::kNever: return "never";
        case Arm::kDensity: return "density";
    }
    return "always";
}

AdaptivePromotionGate::AdaptivePromotionGate(MetricsRegistry& registry, CapacityFn capacity_bytes,
                                             AgingsFn agings)
    : AdaptivePromotionGate(registry, std::move(capacity_bytes), std::move(agings), Options{}) {}

AdaptivePromotionGate::AdaptivePromotionGate(MetricsRegistry& registry, CapacityFn capacity_bytes,
                                             AgingsFn agings, Options options)
    : options_(options),
      agings_(std::move(agings)),
      sample_(std::move(capacity_bytes), options.target_sample_objects) {
    current_.store(static_cast<uint8_t>(Arm::kAlways), std::memory_order_relaxed);
    for (int a = 0; a < kArms; ++a) {
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

AdaptivePromotionGate::~AdaptivePromotionGate() = default;

int AdaptivePromotionGate::SampleShift() const { return sample_.shift(); }

void AdaptivePromotionGate::StartOver() {
    // A different sample: the old simulations describe other keys.
    for (Sim& s : sims_) s.Clear();
    density_.Clear();
    score_ = {};
    lead_ = {};
    disagree_ = {};
}

void AdaptivePromotionGate::DensitySim::Touch(uint64_t hash, int cls, Nanos now) {
    auto it = where.at(hash);
    auto& to = lists[static_cast<size_t>(cls)];
    to.splice(to.begin(), lists[it->cls], it);
    it->cls = static_cast<uint8_t>(cls);
    it->last = now;
    it->seq = ++seq;
}

void AdaptivePromotionGate::DensitySim::Insert(uint64_t hash, uint64_t size, int cls, Nanos now,
                                               uint64_t capacity,
                                               const HitDensityEstimator::Table& table) {
    if (size > capacity) return;
    while (used + size > capacity) {
        // The coldest of the lists' cold ends: lowest score, then least recent.
        std::list<Entry>* victim = nullptr;
        double victim_score = 0;
        for (auto& list : lists) {
            if (list.empty()) continue;
            const Entry& e = list.back();
            double score = HitDensityEstimator::Score(table, e.cls, now - e.last);
            if (victim == nullptr || score < victim_score ||
                (score == victim_score && e.seq < victim->back().seq)) {
                victim = &list;
                victim_score = score;
            }
        }
        if (victim == nullptr) break;
        used -= victim->back().size;
        where.erase(victim->back().hash);
        victim->pop_back();
    }
    auto& to = lists[static_cast<size_t>(cls)];
    to.push_front({hash, size, ++seq, now, static_cast<uint8_t>(cls)});
    where[hash] = to.begin();
    used += size;
}

void AdaptivePromotionGate::DensitySim::Clear() {
    for (auto& list : lists) list.clear();
    where.clear();
    used = 0;
}

std::optional<HitDensityEstimator::Table> AdaptivePromotionGate::MaybeFreshTable() {
    if (!options_.density_table) return std::nullopt;
    if (table_tick_.fetch_add(1, std::memory_order_relaxed) % 256 != 0) return std::nullopt;
    return options_.density_table();
}

void AdaptivePromotionGate::OnGet(uint64_t hash, uint64_t size, uint32_t estimate,
                                  uint32_t threshold, int cls, Nanos now) {
    if (!sample_.Contains(hash)) return;
    std::optional<HitDensityEstimator::Table> fresh = MaybeFreshTable();
    MutexLock lock(mu_);
    if (fresh) table_ = *fresh;
    Access(hash, size, /*put=*/false, estimate, threshold, cls, now);
}

void AdaptivePromotionGate::OnPut(uint64_t hash, uint64_t size, uint32_t estimate, int cls,
                                  Nanos now) {
    if (!sample_.Contains(hash)) return;
    std::optional<HitDensityEstimator::Table> fresh = MaybeFreshTable();
    MutexLock lock(mu_);
    if (fresh) table_ = *fresh;
    Access(hash, size, /*put=*/true, estimate, 0, cls, now);
}

void AdaptivePromotionGate::Access(uint64_t hash, uint64_t size, bool put, uint32_t estimate,
                                   uint32_t threshold, int cls, Nanos now) {
    if (sample_.Observe(size)) StartOver();
    const uint64_t sim_capacity = sample_.capacity_bytes();
    const uint64_t cap_objects = sample_.capacity_objects();
    const uint32_t count = estimate;
    const uint64_t agings = agings_ ? agings_() : 0;
    AccessCount reads;
    reads.Set(count, agings);
    const uint32_t need = threshold;
    std::array<bool, kArms> hit{};
    constexpr auto kDensityArm = static_cast<size_t>(Arm::kDensity);
    if (options_.density_table) {
        // Promotes as `always` does; evicts by the store's scores.
        if (density_.Contains(hash)) {
            density_.Touch(hash, cls, now);
            if (!put) {
                hit[kDensityArm] = true;
                score_[kDensityArm] += 1;
                sim_hits_[kDensityArm]->Inc();
            }
        } else if (put || count >= need) {
            density_.Insert(hash, size, cls, now, sim_capacity, table_);
        }
    }
    for (size_t a = 0; a < kArms; ++a) {
        if (a == kDensityArm) continue;
        Sim& sim = sims_[a];
        if (sim.Contains(hash)) {
            sim.Touch(hash, reads);
            if (!put) {
                hit[a] = true;
                score_[a] += 1;
                sim_hits_[a]->Inc();
            }
            continue;
        }
        if (put) {
            sim.Insert(hash, size, reads, sim_capacity);  // a Put always goes to DRAM
            continue;
        }
        // A LOCAL_DISK hit: the arm decides whether it comes back.
        if (count < need) continue;
        bool room = sim.used + size <= sim_capacity;
        bool promote = room;
        if (!room) {
            switch (static_cast<Arm>(a)) {
                case Arm::kAlways: promote = true; break;
                case Arm::kNever: promote = false; break;
                case Arm::kDensity: break;  // simulated above
                case Arm::kCompare: {
                    // The victims this promotion would displace, coldest first.
                    uint32_t victim_max = 0;
                    uint64_t freed = 0;
                    for (auto it = sim.lru.rbegin();
                         it != sim.lru.rend() && sim.used - freed + size > sim_capacity; ++it) {
                        victim_max = std::max(victim_max, it->reads.Read(agings));
                        freed += it->size;
                    }
                    promote = count > victim_max;
                    break;
                }
            }
        }
        if (promote) sim.Insert(hash, size, reads, sim_capacity);
    }
    if (!put) {
        for (size_t a = 0; a < kArms; ++a) {
            for (size_t b = 0; b < kArms; ++b) {
                if (hit[a] == hit[b]) continue;
                lead_[a][b] += hit[a] ? 1 : -1;
                disagree_[a][b] += 1;
            }
        }
    }
    // Old behaviour fades: halve the evidence every decay_capacities x mini capacity accesses.
    if (++since_decay_ >= options_.decay_capacities * cap_objects) {
        since_decay_ = 0;
        for (double& s : score_) s /= 2;
        for (auto& row : lead_) for (double& v : row) v /= 2;
        for (auto& row : disagree_) for (double& v : row) v /= 2;
    }
    // Every read (a handful of comparisons): a small store's evidence must act on the reads
    // that give it.
    if (!put) Decide();
}

void AdaptivePromotionGate::SwitchTo(size_t arm) {
    auto cur = static_cast<size_t>(current_.load(std::memory_order_relaxed));
    if (arm == cur) return;
    current_.store(static_cast<uint8_t>(arm), std::memory_order_relaxed);
    arm_gauge_[cur]->Set(0);
    arm_gauge_[arm]->Set(1);
    switches_->Inc();
}

double AdaptivePromotionGate::Excess(size_t a, size_t b, double z) const {
    // A sign test on the reads where a and b disagree (one hits, the other misses): if they
    // were equally good, the lead would be a fair +-1 walk over `disagree` steps, so a lead
    // past z standard deviations (and at least a floor of hits) is evidence, whatever the hit
    // ratio. Positive: a is ahead of b by that much beyond the bar.
    return lead_[a][b] - std::max(z * std::sqrt(disagree_[a][b]), options_.min_lead);
}

void AdaptivePromotionGate::Decide() {
    constexpr auto kAlwaysArm = static_cast<size_t>(Arm::kAlways);
    const auto cur = static_cast<size_t>(current_.load(std::memory_order_relaxed));
    if (cur != kAlwaysArm &&
        lead_[cur][kAlwaysArm] < options_.stay_z * std::sqrt(disagree_[cur][kAlwaysArm])) {
        // The evidence against promoting has faded: promote again.
        SwitchTo(kAlwaysArm);
        return;
    }
    size_t best = cur;
    double best_excess = 0;
    for (size_t b = 0; b < kArms; ++b) {
        if (b == cur || b == kAlwaysArm) continue;
        // Leaving `always` needs the stronger evidence; between refusing arms, the usual.
        double excess = Excess(b, cur, cur == kAlwaysArm ? options_.leave_z : options_.switch_z);
        if (excess > best_excess) {
            best = b;
            best_excess = excess;
        }
    }
    SwitchTo(best);
}

void AdaptivePromotionGate::CountDecision(Arm arm, bool promoted) {
    decisions_[static_cast<size_t>(arm)][promoted ? 1 : 0]->Inc();
}

std::array<double, AdaptivePromotionGate::kArms> AdaptivePromotionGate::Scores() const {
    MutexLock lock(mu_);
    return score_;
}

}  // namespace mooncake
