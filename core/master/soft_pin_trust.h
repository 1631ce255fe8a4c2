// Whether soft pins (retention hints: ReplicateConfig.with_soft_pin / soft_pin_ttl_ms) are worth
// honouring in eviction, decided online on evidence, as the adaptive promotion gate decides its
// arms (core/master/adaptive_policy.h).
//
// A soft pin promises "evicted only after every unpinned object while the pin lasts" (Mooncake's
// contract, core/master/pin_table.h). That is a hint from the engine: right, it keeps blocks that
// are about to be reused; wrong, it keeps dead blocks and pushes out live ones, and a cache that
// trusts wrong hints blindly can lose more than the whole LRU -> Belady gap. So the store runs
// two miniature simulations of its DRAM on a hashed sample of the keys (same sampling as the
// gate): `honour` ranks soft-pinned keys after unpinned ones, `ignore` is a plain LRU. Both see
// the same Puts (with their pins) and reads (a read of a key not in the mini-DRAM brings it in).
//
// The burden of proof is on distrust: pins are honoured (the contract) until `ignore`'s decayed
// lead over `honour`, counted on the sampled reads where exactly one of them hits, passes a sign
// test of leave_z standard deviations of a fair coin (and at least min_lead hits). Pins are
// honoured again as soon as that evidence fades under stay_z deviations. While distrusted, soft
// pins still lapse and show in `stat`, but eviction ranks their objects like any other; the gauge
// soft_pin_trusted says which, and soft_pin_trust_switches_total counts the changes.
//
// A store that never sees a soft pin pays nothing: the simulations start with the first Put
// that carries one (active()).
//
// Thread-safety: every method may be called from any thread (one leaf mutex).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>

#include "core/base/clock.h"
#include "core/base/mutex.h"
#include "core/master/key_sample.h"

namespace mooncake {

class Counter;
class Gauge;
class MetricsRegistry;

class SoftPinTrust {
public:
    struct Options {
        uint64_t target_sample_objects = 4096;  // mini-DRAM objects (sets the sampling rate)
        uint64_t decay_capacities = 32;         // evidence halves every this many x mini capacity accesses
        double leave_z = 3;
        double stay_z = 1;
        double min_lead = 8;
    };
    using CapacityFn = std::function<uint64_t()>;

    SoftPinTrust(MetricsRegistry& registry, CapacityFn capacity_bytes);
    SoftPinTrust(MetricsRegistry& registry, CapacityFn capacity_bytes, Options options);
    ~SoftPinTrust();
    SoftPinTrust(const SoftPinTrust&) = delete;
    SoftPinTrust& operator=(const SoftPinTrust&) = delete;

    // Observers: a Put that ended (`soft_ttl` 0: no soft pin), and a read that found the key.
    void OnPut(uint64_t hash, uint64_t size, Nanos soft_ttl, Nanos now);
    void OnGet(uint64_t hash, uint64_t size, Nanos now);
    // A read key whose soft pin a later block of its prefix extended to `until`
    // (MasterStore::CoverPrefixWithSoftPins): so pinned in the simulation that honours pins.
    void OnCover(uint64_t hash, Nanos until);

    // Whether eviction ranks soft-pinned objects after unpinned ones now.
    bool Trusted() const { return trusted_.load(std::memory_order_relaxed); }
    // Whether any soft pin has been seen (the simulations run).
    bool active() const { return active_.load(std::memory_order_relaxed); }

    // For tests: decayed hits of [honour, ignore] on the sampled reads.
    std::array<double, 2> Scores() const;

private:
    // A mini-DRAM of sampled keys, by bytes. With `honour`, a key whose pin is live is evicted
    // only when no unpinned (or lapsed) key is left; otherwise a plain LRU.
    class Sim {
    public:
        explicit Sim(bool honour) : honour_(honour) {}
        bool Contains(uint64_t hash) const { return where_.count(hash) != 0; }
        // Brings the key in (or touches it), making room first; its pin runs to now + ttl.
        void Access(uint64_t hash, uint64_t size, Nanos ttl, Nanos now, uint64_t capacity);
        // A key it holds stays pinned until at least `until` (honour only).
        void Cover(uint64_t hash, Nanos until);
        void Clear();

    private:
        struct Entry {
            uint64_t hash;
            uint64_t size;
            uint64_t stamp;  // recency
            Nanos pinned_until;
        };
        using List = std::list<Entry>;
        bool EvictOne(Nanos now);

        bool honour_;
        List unpinned_, pinned_;  // most recent first
        std::unordered_map<uint64_t, std::pair<List*, List::iterator>> where_;
        uint64_t used_ = 0;
        uint64_t clock_ = 0;
    };

    void Access(uint64_t hash, uint64_t size, bool put, Nanos ttl, Nanos now) MC_REQUIRES(mu_);
    void StartOver() MC_REQUIRES(mu_);
    void Decide() MC_REQUIRES(mu_);

    Options options_;
    std::atomic<bool> active_{false};
    std::atomic<bool> trusted_{true};

    mutable Mutex mu_;
    // The adaptive gate's sample of keys (KeySample: same mix, same sizing). Contains()
    // lock-free; Observe() and the capacities under mu_.
    KeySample sample_;
    Sim honour_ MC_GUARDED_BY(mu_){true};
    Sim ignore_ MC_GUARDED_BY(mu_){false};
    // The pin each sampled key was put with, for when it comes back into the mini-DRAM (the
    // store keeps an object's pin while it is on LOCAL_DISK). Cleared when it outgrows the sample.
    std::unordered_map<uint64_t, Nanos> ttl_ MC_GUARDED_BY(mu_);
    uint64_t since_decay_ MC_GUARDED_BY(mu_) = 0;
    std::array<double, 2> score_ MC_GUARDED_BY(mu_){};
    double lead_ MC_GUARDED_BY(mu_) = 0;      // decayed hits of ignore - hits of honour
    double disagree_ MC_GUARDED_BY(mu_) = 0;  // decayed reads where exactly one hit

    Gauge* trusted_gauge_ = nullptr;
    Counter* switches_ = nullptr;
    std::array<Counter*, 2> sim_hits_{};
};

}  // namespace mooncake
