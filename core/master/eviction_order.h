// The order in which eviction takes MEMORY objects: one interface, two implementations
// (knob `eviction_policy`, read once at start):
//   lru          LruOrder: least recently used first.
//   hit_density  HitDensityOrder: fewest expected hits per unit of DRAM time first
//                (core/master/eviction_policy.h has the estimator and its reasoning).
//   adaptive     HitDensityOrder that ranks by recency alone (exactly LRU) except while the
//                adaptive promotion gate follows its density arm (core/master/adaptive_policy.h);
//                its statistics are kept all along, and the gate simulates with them.
// The engine (core/master/store_eviction.cc) never asks which one it holds: it feeds accesses in,
// keeps membership (an object is listed while it has a COMPLETE MEMORY replica) and asks a
// round for the coldest candidates.
//
// Thread-safety: each shard's EvictionLists and each object's EvictionHook are guarded by the
// shard's mutex; every method that takes them is called with it held. The orders' own
// statistics are lock-free or take their own leaf mutex (HitDensityEstimator).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/master/eviction_list.h"
#include "core/master/eviction_policy.h"
#include "core/master/object.h"
#include "core/master/pin_table.h"
#include "core/master/put_hint.h"

namespace mooncake {

// One shard's MEMORY objects, most recent first in each list. LruOrder uses lists[0];
// HitDensityOrder one list per access class. `pins`: the shard's pinned objects
// (core/master/pin_table.h), which every order ranks the same way (see Colder).
// `held`: objects a round found soft-pinned at a list's cold end, set aside so that the next
// rounds do not walk past them again (with most of DRAM pinned, every round walked the whole
// list). A read lists an object again as usual (Touch); a round that finds a held object's
// pin lapsed, or pins distrusted, puts it back at its list's cold end: it was not read since.
struct EvictionLists {
    static constexpr uint8_t kHeld = 0xff;  // EvictionHook::list of a held object
    std::array<EvictionList, HitDensityEstimator::kClasses> lists;
    EvictionList held;
    PinTable pins;

    EvictionList& ListOf(const EvictionHook& hook) {
        return hook.list == kHeld ? held : lists[hook.list];
    }
};

// An object a round may evict, as seen when collected (re-checked under its shard lock).
struct EvictionCandidate {
    uint64_t recency;
    size_t shard;
    std::string key;
    Generation generation;
    uint64_t bytes;  // its DRAM range
    AccessCount reads;  // its admission count when collected
    bool clean;  // has a LOCAL_DISK copy, or one is written ahead: dropping it loses nothing
    double score = 0;  // HitDensityOrder: expected re-reads per DRAM second (LruOrder: 0)
    bool soft_pinned = false;  // soft pin live when collected: ranked after every unpinned one
};

// Which objects a round may collect (tenants' scopes, a drain's bounds: MasterStore::
// EvictionScope), asked under the object's shard lock; empty: every object.
using CandidateFilter = std::function<bool(const ObjectMeta& meta)>;

class EvictionOrder {
public:
    // `use_density` (kAdaptive only): whether a round starting now ranks by hit density.
    static std::unique_ptr<EvictionOrder> Make(EvictionPolicyKind kind,
                                               std::function<bool()> use_density = {});
    virtual ~EvictionOrder() = default;

    // Whether the order evicts least recently used first (for kAdaptive: whenever the gate
    // does not follow its density arm): the adaptive promotion gate's miniature simulations
    // model that order, so they judge only under one that does.
    virtual bool EvictsLeastRecent() const = 0;
    // Whether it ranks by hit density while the gate follows the density arm (kAdaptive), and
    // the estimator's current score table, which that arm's simulation ranks by.
    virtual bool SwitchesToDensity() const { return false; }
    virtual HitDensityEstimator::Table ScoreTable() const { return {}; }

    // Accesses (shard lock held). A Put is the object's first access.
    virtual void OnPut(ObjectMeta& meta, const PutHint* hint, Nanos now,
                       uint64_t objects_in_memory) = 0;
    virtual void OnGet(ObjectMeta& meta, Nanos now, uint64_t objects_in_memory) = 0;
    virtual void OnEvict(const ObjectMeta& meta, Nanos now) = 0;

    // Membership (shard lock held): Touch lists the object as its list's most recent (adding
    // it if unlisted), Remove unlists it.
    virtual void Touch(EvictionLists& lists, ObjectMeta& meta) = 0;
    virtual void Remove(EvictionLists& lists, ObjectMeta& meta) = 0;
    // Lists an unlisted object as its list's least recent (a batch's partial tail whose put
    // ended, core/master/put_hint.h), when the order can rank by recency alone (lru, and
    // adaptive); false when it cannot (hit_density ranks such an object by its own class,
    // kPartialLast, instead): the caller then lists it with Touch.
    virtual bool TouchCold(EvictionLists&, ObjectMeta&) { return false; }

    // One round's view: Collect runs per shard (its lock held) and appends that shard's
    // coldest Evictable(now, leases) objects, about `per_shard` bytes per list, each with its score
    // in this round (LRU: all 0). With per_shard >= the round's target, the globally coldest
    // target bytes are surely among them. Hard-pinned objects are never collected; soft-pinned
    // ones met in a list are set aside (EvictionLists::held), and the held ones are collected
    // (up to `per_shard` bytes more, coldest set aside first) to rank after the unpinned ones.
    // `clean_keys` false leaves the key of a clean candidate (one with a LOCAL_DISK copy) empty,
    // for a round that acts only on the others.
    class Round {
    public:
        virtual ~Round() = default;
        virtual void Collect(EvictionLists& lists, size_t shard, uint64_t per_shard,
                             std::vector<EvictionCandidate>& out, bool clean_keys = true) = 0;
    };
    // Objects `filter` refuses are passed over, and do not count towards `per_shard`. Without
    // `honour_soft_pins` (SoftPinTrust distrusts them) soft-pinned objects rank as any other.
    virtual std::unique_ptr<Round> StartRound(Nanos now, LeaseRule leases,
                                              CandidateFilter filter = {},
                                              bool honour_soft_pins = true) = 0;
};

// The rank of collected candidates (or anything with their pin, score and recency), coldest
// first: unpinned before soft-pinned, then lowest score, then least recent (a strict total
// order, as recency is unique).
template <typename Ranked>
bool Colder(const Ranked& a, const Ranked& b) {
    if (a.soft_pinned != b.soft_pinned) return b.soft_pinned;
    return a.score != b.score ? a.score < b.score : a.recency < b.recency;
}

// Sorts candidates coldest first.
void RankCandidates(std::vector<EvictionCandidate>& candidates);

// Candidates handed out coldest first (the order RankCandidates gives), ranked only as far as
// they are taken: a Put's eviction collects one candidate per shard and usually takes the
// first one or two, so a heap (linear to build, log n per candidate taken) does what a full
// sort did, for less.
// A candidate's rank (what Colder compares) and bytes, small enough to sort or heap where the
// candidates, which carry keys, are too heavy to move around; `index` is its place in them.
struct CandidateRank {
    bool soft_pinned;
    double score;
    uint64_t recency;
    uint64_t bytes;
    uint32_t index;
};
std::vector<CandidateRank> RanksOf(const std::vector<EvictionCandidate>& candidates);

class ColdestFirst {
public:
    explicit ColdestFirst(std::vector<EvictionCandidate> candidates);
    // The next coldest, or nullptr when all were taken. Valid while this object lives.
    EvictionCandidate* Next();

private:
    std::vector<EvictionCandidate> candidates_;
    std::vector<CandidateRank> heap_;  // the candidates not taken yet, coldest on top
};

// The indices (unordered) of the coldest candidates up to and including the one whose bytes,
// added coldest first, reach `bytes` (all of them if they never do): the set a sort's prefix
// would give, found in linear time.
std::vector<uint32_t> SelectColdest(const std::vector<EvictionCandidate>& candidates,
                                    uint64_t bytes);

}  // namespace mooncake
