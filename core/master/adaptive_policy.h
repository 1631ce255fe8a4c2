// The adaptive promotion gate (knob promotion_gate=adaptive): decides online how a promotion
// into full DRAM is judged, by running miniature simulations of the same cache on a hashed
// sample of the keys (as in Waldspurger et al., "Cache Modeling and Optimization using
// Miniature Simulations", USENIX ATC 2017) — one per way of deciding — and following the one
// that shows itself best:
//
//   always   promote every candidate past the admission threshold, displacing the LRU victim
//            (what reference-lru does, and the RFC's contract: the gate's starting arm)
//   compare  promote only a candidate read more often than the victims it would displace
//            (promotion_compare_victims=true; resists loops and scans)
//   never    do not displace anything for a promotion (the no-promotion cache; best when
//            everything that comes back would push out something about to be read)
//   density  promote as `always`, but evict by hit density (core/master/eviction_policy.h)
//            instead of recency; simulated only under eviction_policy=adaptive, whose order
//            ranks by the estimator's scores exactly while the gate follows this arm
//
// Every simulation but density's is an exact LRU over the sampled keys with DRAM scaled by the
// sampling rate; it sees the admission count the real gate sees with every access (and remembers it
// with each sampled key, aging it as the store's counts age, for the comparison's victims) and
// the same admission threshold, on the same sequence (a Put inserts; a Get of a key not in the
// mini-DRAM is a LOCAL_DISK hit that may promote). The density arm's simulation keeps one LRU
// list per access class and evicts the cold end with the lowest score in the store's own
// score table (each entry remembers its class and last access, as the store's objects do).
//
// The burden of proof is on refusing. The gate follows `always` until a refusing arm's
// (decayed) lead over it, counted on the sampled reads where exactly one of the two hits,
// passes a sign test of leave_z standard deviations of a fair coin (and at least min_lead
// hits): statistically significant evidence, on this workload, that promoting loses hits.
// It follows a refusing arm only while that evidence holds (its lead over `always` stays
// above stay_z deviations), and goes back to `always` as soon as it fades; between the two
// refusing arms it moves on the same sign test at switch_z. The density arm is chosen by the
// same rule: it too must beat `always` at leave_z (and min_lead) before the store follows it,
// and is left as soon as its lead falls under stay_z (it and the refusing arms trade places
// at switch_z, as those do between themselves). A fresh or quiet store, with no
// evidence, promotes and evicts by recency. The eviction order the other arms model is LRU:
// the store uses the gate only with eviction_policy=lru or adaptive (with hit_density it keeps
// promotion_compare_victims), so gate, comparison and order agree.
//
// Thread-safety: every method may be called from any thread (one mutex, a leaf: the gate never
// takes a store lock; the store calls OnGet after releasing the key's shard lock, OnPut under it).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/base/clock.h"
#include "core/base/mutex.h"
#include "core/master/access_count.h"
#include "core/master/eviction_policy.h"
#include "core/master/key_sample.h"

namespace mooncake {

class MetricsRegistry;
class Counter;
class Gauge;

class AdaptivePromotionGate {
public:
    enum class Arm : uint8_t { kAlways = 0, kCompare = 1, kNever = 2, kDensity = 3 };
    static constexpr int kArms = 4;
    static const char* ArmName(Arm arm);

    struct Options {
        // The mini-DRAM holds about this many objects (the sampling rate follows from it).
        uint64_t target_sample_objects = 4096;
        // Mini-DRAM hits are halved every this many sampled accesses x mini capacity objects.
        // Long: an arm's hits come in bursts (on a loop, `never` hits only while the loop
        // passes its frozen part), and a short memory flaps between arms, each switch
        // paying for the other arm's promotions.
        uint64_t decay_capacities = 32;
        // Leave `always` for a refusing arm when that arm's lead over `always`, counted on the
        // sampled reads where exactly one of the two hits, exceeds leave_z standard deviations
        // of a fair coin over those reads, and min_lead hits. Return to `always` when the
        // lead falls under stay_z deviations. Move between the refusing arms at switch_z.
        double leave_z = 3;
        double stay_z = 1;
        double switch_z = 2;
        double min_lead = 8;
        // The store's hit-density score table (EvictionOrder::ScoreTable), read every few
        // hundred sampled accesses; empty: the density arm is not simulated (never followed).
        std::function<HitDensityEstimator::Table()> density_table;
    };

    // `capacity_bytes` reads the store's DRAM capacity (asked again every few thousand
    // sampled accesses, so the sample follows nodes joining or leaving); `agings` reads how
    // many times the admission counts have been halved (AdmissionSketch::agings), so the
    // counts remembered for the comparison arm's victims age with the store's.
    using CapacityFn = std::function<uint64_t()>;
    using AgingsFn = std::function<uint64_t()>;
    AdaptivePromotionGate(MetricsRegistry& registry, CapacityFn capacity_bytes, AgingsFn agings);
    AdaptivePromotionGate(MetricsRegistry& registry, CapacityFn capacity_bytes, AgingsFn agings,
                          Options options);
    ~AdaptivePromotionGate();
    AdaptivePromotionGate(const AdaptivePromotionGate&) = delete;
    AdaptivePromotionGate& operator=(const AdaptivePromotionGate&) = delete;

    // Observers: every Get that found the key (any tier), with its admission count after
    // counting this read and the admission threshold (PromotionPipeline::AdmissionThreshold);
    // every Put, with the new object's count. `cls` and `now`: the access's hit-density class
    // and time (EvictionHook::cls, last_access), for the density arm.
    void OnGet(uint64_t hash, uint64_t size, uint32_t estimate, uint32_t threshold, int cls = 0,
               Nanos now = Nanos{0});
    void OnPut(uint64_t hash, uint64_t size, uint32_t estimate, int cls = 0, Nanos now = Nanos{0});

    // The arm a promotion into full DRAM follows now.
    Arm Current() const { return static_cast<Arm>(current_.load(std::memory_order_relaxed)); }
    // Counts one gate decision taken by the arm (promotion_gate_decisions_total).
    void CountDecision(Arm arm, bool promoted);

    // For tests and the metrics: decayed mini-DRAM hits of each arm, and the sampling shift
    // (a key is sampled when its hash's top `shift` bits are zero).
    std::array<double, kArms> Scores() const;
    int SampleShift() const;

private:
    // One arm's mini-DRAM: an exact LRU of sampled keys, by bytes.
    struct Sim {
        struct Entry {
            uint64_t hash;
            uint64_t size;
            AccessCount reads;  // its admission count at its last access
        };
        std::list<Entry> lru;  // most recent first
        std::unordered_map<uint64_t, std::list<Entry>::iterator> where;
        uint64_t used = 0;

        bool Contains(uint64_t hash) const { return where.count(hash) != 0; }
        void Touch(uint64_t hash, AccessCount reads) {
            auto it = where.at(hash);
            it->reads = reads;
            lru.splice(lru.begin(), lru, it);
        }
        void EvictFor(uint64_t size, uint64_t capacity) {
            while (!lru.empty() && used + size > capacity) {
                used -= lru.back().size;
                where.erase(lru.back().hash);
                lru.pop_back();
            }
        }
        void Insert(uint64_t hash, uint64_t size, AccessCount reads, uint64_t capacity) {
            if (size > capacity) return;
            EvictFor(size, capacity);
            lru.push_front({hash, size, reads});
            where[hash] = lru.begin();
            used += size;
        }
        void Clear() {
            lru.clear();
            where.clear();
            used = 0;
        }
    };

    // The density arm's mini-DRAM: one LRU list per access class, by bytes; evicts the cold
    // end with the lowest score (ties: least recent), as HitDensityOrder does.
    struct DensitySim {
        struct Entry {
            uint64_t hash;
            uint64_t size;
            uint64_t seq;  // recency
            Nanos last;
            uint8_t cls;
        };
        std::array<std::list<Entry>, HitDensityEstimator::kClasses> lists;  // most recent first
        std::unordered_map<uint64_t, std::list<Entry>::iterator> where;
        uint64_t used = 0;
        uint64_t seq = 0;

        bool Contains(uint64_t hash) const { return where.count(hash) != 0; }
        void Touch(uint64_t hash, int cls, Nanos now);
        void Insert(uint64_t hash, uint64_t size, int cls, Nanos now, uint64_t capacity,
                    const HitDensityEstimator::Table& table);
        void Clear();
    };

    void StartOver() MC_REQUIRES(mu_);
    // A fresh score table outside the lock, every few hundred sampled accesses.
    std::optional<HitDensityEstimator::Table> MaybeFreshTable();
    void Access(uint64_t hash, uint64_t size, bool put, uint32_t estimate, uint32_t threshold,
                int cls, Nanos now) MC_REQUIRES(mu_);
    void Decide() MC_REQUIRES(mu_);
    double Excess(size_t a, size_t b, double z) const MC_REQUIRES(mu_);
    void SwitchTo(size_t arm) MC_REQUIRES(mu_);

    Options options_;
    AgingsFn agings_;
    std::atomic<uint8_t> current_{0};  // an Arm; kAlways until evidence says otherwise

    mutable Mutex mu_;
    // Contains() lock-free; Observe() and the capacities under mu_.
    KeySample sample_;
    uint64_t since_decay_ MC_GUARDED_BY(mu_) = 0;
    std::array<Sim, kArms> sims_ MC_GUARDED_BY(mu_){};  // [kDensity] unused: density_
    DensitySim density_ MC_GUARDED_BY(mu_);
    HitDensityEstimator::Table table_ MC_GUARDED_BY(mu_);
    std::atomic<uint64_t> table_tick_{0};
    std::array<double, kArms> score_ MC_GUARDED_BY(mu_){};
    // [a][b]: decayed (hits of a - hits of b), and reads where exactly one of a, b hit.
    std::array<std::array<double, kArms>, kArms> lead_ MC_GUARDED_BY(mu_){};
    std::array<std::array<double, kArms>, kArms> disagree_ MC_GUARDED_BY(mu_){};

    std::array<std::array<Counter*, 2>, kArms> decisions_{};  // [arm][promoted]
    std::array<Counter*, kArms> sim_hits_{};
    std::array<Gauge*, kArms> arm_gauge_{};
    Counter* switches_ = nullptr;
};

}  // namespace mooncake
