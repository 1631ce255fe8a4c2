// LruOrder and HitDensityOrder (core/master/eviction_order.h).
#include "core/master/eviction_order.h"

#include <algorithm>
#include <limits>

#include "core/base/segment_allocator.h"

namespace mooncake {
namespace {

// Lists `meta` first in lists[to] (moving it from the list it is in).
void ListFirst(EvictionLists& lists, ObjectMeta& meta, uint8_t to) {
    EvictionHook& hook = meta.eviction;
    auto& list = lists.lists[to];
    if (hook.listed) lists.ListOf(hook).erase(&meta);
    list.push_front(&meta);
    hook.listed = true;
    hook.list = to;
}

// A listed object whose soft pin a round met: set aside (EvictionLists::held), most recently
// set aside first.
void SetAside(EvictionLists& lists, ObjectMeta& meta) {
    EvictionHook& hook = meta.eviction;
    lists.ListOf(hook).erase(&meta);
    lists.held.push_front(&meta);
    hook.list = EvictionLists::kHeld;
}

// Lists an unlisted `meta` last in lists[to].
void ListLast(EvictionLists& lists, ObjectMeta& meta, uint8_t to) {
    EvictionHook& hook = meta.eviction;
    lists.lists[to].push_back(&meta);
    hook.listed = true;
    hook.list = to;
}

// A held object back among the others, at the cold end of its list (by its class: LruOrder
// keeps every object in class 0): it was not read since it was set aside.
void PutBack(EvictionLists& lists, ObjectMeta& meta) {
    lists.held.erase(&meta);
    ListLast(lists, meta, meta.eviction.cls);
}

void Unlist(EvictionLists& lists, ObjectMeta& meta) {
    EvictionHook& hook = meta.eviction;
    if (!hook.listed) return;
    lists.ListOf(hook).erase(&meta);
    hook.listed = false;
}

// Appends the coldest Evictable(now, leases) objects it is shown, about `per_shard` bytes, each
// with its score. Hard-pinned objects are skipped; soft-pinned ones are appended too (up to
// `per_shard` bytes of them), as they rank after the others — unless `honour_soft_pins` is
// false, when they are collected and ranked as any other.
class Collector {
public:
    Collector(const PinTable& pins, size_t shard, uint64_t per_shard, Nanos now, LeaseRule leases,
              bool honour_soft_pins, bool clean_keys, const CandidateFilter& filter,
              std::vector<EvictionCandidate>& out)
        : pins_(pins), shard_(shard), per_shard_(per_shard), now_(now), leases_(leases),
          honour_soft_pins_(honour_soft_pins), clean_keys_(clean_keys), filter_(filter),
          out_(out) {}
    bool Full() const { return collected_ >= per_shard_; }
    bool PinnedFull() const { return pinned_collected_ >= per_shard_; }
    // Its soft pin is live and honoured: it ranks after every object that is not.
    bool SoftPinned(const ObjectMeta& meta) const {
        if (!honour_soft_pins_) return false;
        const ObjectPin* pin = pins_.Find(meta);
        return pin != nullptr && !pin->hard() && pin->soft_until > now_;
    }
    void Offer(const ObjectMeta& meta, double score) {
        static const std::string kNoKey;
        if (!meta.Evictable(now_, leases_)) return;
        if (filter_ && !filter_(meta)) return;
        const ObjectPin* pin = pins_.Find(meta);
        if (pin != nullptr && pin->hard()) return;
        const bool soft_pinned = honour_soft_pins_ && pin != nullptr && pin->soft_until > now_;
        uint64_t bytes = SegmentAllocator::RoundUp(meta.size);
        if (soft_pinned && pinned_collected_ >= per_shard_) return;
        const bool clean = meta.HasComplete(Tier::kLocalDisk) || meta.WrittenAhead();
        out_.push_back({meta.recency, shard_, clean && !clean_keys_ ? kNoKey : *meta.key,
                        meta.generation, bytes, meta.reads(), clean, score, soft_pinned});
        (soft_pinned ? pinned_collected_ : collected_) += bytes;
    }

private:
    const PinTable& pins_;
    size_t shard_;
    uint64_t per_shard_;
    Nanos now_;
    LeaseRule leases_;
    bool honour_soft_pins_;
    bool clean_keys_;
    const CandidateFilter& filter_;
    std::vector<EvictionCandidate>& out_;
    uint64_t collected_ = 0, pinned_collected_ = 0;
};

// Offers `meta`, met in a list, or sets it aside if its soft pin is honoured now.
template <typename Score>
void OfferOrSetAside(EvictionLists& lists, ObjectMeta& meta, Collector& collector, Score score) {
    if (collector.SoftPinned(meta)) {
        SetAside(lists, meta);
        return;
    }
    collector.Offer(meta, score(meta));
}

// One list's cold end, scored by `score(meta)`. Each list, and the held objects, have a
// collector of their own (a copy): `per_shard` bytes each.
template <typename Score>
void CollectList(EvictionLists& lists, EvictionList& list, Collector collector, Score score) {
    for (auto it = list.rbegin(); it != list.rend() && !collector.Full();) {
        ObjectMeta& meta = **it;
        ++it;  // before `meta` may move to the held list
        OfferOrSetAside(lists, meta, collector, score);
    }
}

// The held objects' cold end: each whose pin lapsed (or all, with pins distrusted) goes back
// among the others and is offered as one of them; the live ones are offered as soft-pinned,
// up to `per_shard` bytes. A lapsed object behind those is found by a later round (or, read,
// is listed again): a held pin may outlive its TTL by a few rounds, never the reverse.
template <typename Score>
void CollectHeld(EvictionLists& lists, Collector collector, Score score) {
    for (auto it = lists.held.rbegin(); it != lists.held.rend();) {
        ObjectMeta& meta = **it;
        ++it;
        if (collector.SoftPinned(meta)) {
            if (collector.PinnedFull()) return;
        } else {
            if (collector.Full()) return;
            PutBack(lists, meta);
        }
        collector.Offer(meta, score(meta));
    }
}

// The cold ends of all the lists merged by recency, all scored 0: exactly what one LRU list
// of the same objects would give (HitDensityOrder while recency alone ranks).
void CollectMerged(EvictionLists& lists, Collector collector) {
    using It = EvictionList::ReverseIterator;
    std::array<It, HitDensityEstimator::kClasses> at;
    std::array<It, HitDensityEstimator::kClasses> end;
    for (size_t i = 0; i < lists.lists.size(); ++i) {
        at[i] = lists.lists[i].rbegin();
        end[i] = lists.lists[i].rend();
    }
    while (!collector.Full()) {
        size_t best = lists.lists.size();
        for (size_t i = 0; i < lists.lists.size(); ++i) {
            if (at[i] == end[i]) continue;
            if (best == lists.lists.size() || (*at[i])->recency < (*at[best])->recency) best = i;
        }
        if (best == lists.lists.size()) return;
        ObjectMeta& meta = **at[best];
        ++at[best];  // before `meta` may move to the held list
        OfferOrSetAside(lists, meta, collector, [](const ObjectMeta&) { return 0.0; });
    }
}

class LruOrder final : public EvictionOrder {
public:
    bool EvictsLeastRecent() const override { return true; }
    void OnPut(ObjectMeta&, const PutHint*, Nanos, uint64_t) override {}
    void OnGet(ObjectMeta&, Nanos, uint64_t) override {}
    void OnEvict(const ObjectMeta&, Nanos) override {}
    void Touch(EvictionLists& lists, ObjectMeta& meta) override { ListFirst(lists, meta, 0); }
    void Remove(EvictionLists& lists, ObjectMeta& meta) override { Unlist(lists, meta); }
    bool TouchCold(EvictionLists& lists, ObjectMeta& meta) override {
        if (meta.eviction.listed) return false;
        ListLast(lists, meta, 0);
        return true;
    }

    class LruRound final : public Round {
    public:
        LruRound(Nanos now, LeaseRule leases, CandidateFilter filter, bool honour_soft_pins)
            : now_(now), leases_(leases), filter_(std::move(filter)),
              honour_soft_pins_(honour_soft_pins) {}
        void Collect(EvictionLists& lists, size_t shard, uint64_t per_shard,
                     std::vector<EvictionCandidate>& out, bool clean_keys) override {
            Collector collector(lists.pins, shard, per_shard, now_, leases_, honour_soft_pins_,
                                clean_keys, filter_, out);
            auto score = [](const ObjectMeta&) { return 0.0; };
            CollectList(lists, lists.lists[0], collector, score);
            CollectHeld(lists, collector, score);
        }

    private:
        Nanos now_;
        LeaseRule leases_;
        CandidateFilter filter_;
        bool honour_soft_pins_;
    };
    std::unique_ptr<Round> StartRound(Nanos now, LeaseRule leases, CandidateFilter filter,
                                      bool honour_soft_pins) override {
        return std::make_unique<LruRound>(now, leases, std::move(filter), honour_soft_pins);
    }
};

// With `use_density` (eviction_policy=adaptive) the ranking applies only while it answers
// true; otherwise recency alone ranks, over the same per-class lists, and the order is LRU.
class HitDensityOrder final : public EvictionOrder {
public:
    explicit HitDensityOrder(std::function<bool()> use_density = {})
        : use_density_(std::move(use_density)) {}
    bool EvictsLeastRecent() const override { return static_cast<bool>(use_density_); }
    bool SwitchesToDensity() const override { return static_cast<bool>(use_density_); }
    HitDensityEstimator::Table ScoreTable() const override { return estimator_.Snapshot(); }
    void OnPut(ObjectMeta& meta, const PutHint* hint, Nanos now,
               uint64_t objects_in_memory) override {
        EvictionHook& h = meta.eviction;
        h.accesses = 1;
        h.cls = static_cast<uint8_t>(HitDensityEstimator::ClassOf(0, hint));
        h.last_access = now;
        estimator_.RecordAccess(h.cls, objects_in_memory);
    }
    void OnGet(ObjectMeta& meta, Nanos now, uint64_t objects_in_memory) override {
        EvictionHook& h = meta.eviction;
        if (h.accesses > 0) estimator_.RecordReuse(h.cls, now - h.last_access);
        h.cls = static_cast<uint8_t>(HitDensityEstimator::ClassOf(h.accesses, nullptr));
        if (h.accesses != std::numeric_limits<uint8_t>::max()) ++h.accesses;
        h.last_access = now;
        estimator_.RecordAccess(h.cls, objects_in_memory);
    }
    void OnEvict(const ObjectMeta& meta, Nanos now) override {
        estimator_.RecordEviction(now - meta.eviction.last_access);
    }
    void Touch(EvictionLists& lists, ObjectMeta& meta) override {
        ListFirst(lists, meta, meta.eviction.cls);
    }
    void Remove(EvictionLists& lists, ObjectMeta& meta) override { Unlist(lists, meta); }
    // Only the adaptive order, so that while it ranks by recency it stays exactly LRU: last in
    // its class list, whose recencies it keeps in order (the cold clock counts down), so the
    // merge takes it first. hit_density ranks it by its class (kPartialLast) instead.
    bool TouchCold(EvictionLists& lists, ObjectMeta& meta) override {
        if (!use_density_ || meta.eviction.listed) return false;
        ListLast(lists, meta, meta.eviction.cls);
        return true;
    }

    // Within a class the score falls with age, so the cold end of every class list holds
    // the lowest `per_shard` bytes of each shard.
    class HitDensityRound final : public Round {
    public:
        // `by_density` false: recency alone (the lists merged).
        HitDensityRound(bool by_density, HitDensityEstimator::Table table, Nanos now,
                        LeaseRule leases, CandidateFilter filter, bool honour_soft_pins)
            : by_density_(by_density), table_(std::move(table)), now_(now), leases_(leases),
              filter_(std::move(filter)), honour_soft_pins_(honour_soft_pins) {}
        void Collect(EvictionLists& lists, size_t shard, uint64_t per_shard,
                     std::vector<EvictionCandidate>& out, bool clean_keys) override {
            Collector collector(lists.pins, shard, per_shard, now_, leases_, honour_soft_pins_,
                                clean_keys, filter_, out);
            if (!by_density_) {
                CollectMerged(lists, collector);
                CollectHeld(lists, collector, [](const ObjectMeta&) { return 0.0; });
                return;
            }
            auto score = [&](const ObjectMeta& meta) {
                return HitDensityEstimator::Score(table_, meta.eviction.cls,
                                                  now_ - meta.eviction.last_access);
            };
            for (EvictionList& list : lists.lists) CollectList(lists, list, collector, score);
            CollectHeld(lists, collector, score);
        }

    private:
        bool by_density_;
        HitDensityEstimator::Table table_;
        Nanos now_;
        LeaseRule leases_;
        CandidateFilter filter_;
        bool honour_soft_pins_;
    };
    std::unique_ptr<Round> StartRound(Nanos now, LeaseRule leases, CandidateFilter filter,
                                      bool honour_soft_pins) override {
        const bool by_density = !use_density_ || use_density_();
        return std::make_unique<HitDensityRound>(
            by_density, by_density ? estimator_.Snapshot() : HitDensityEstimator::Table{}, now,
            leases, std::move(filter), honour_soft_pins);
    }

private:
    std::function<bool()> use_density_;
    HitDensityEstimator estimator_;
};

}  // namespace

std::vector<CandidateRank> RanksOf(const std::vector<EvictionCandidate>& candidates) {
    std::vector<CandidateRank> r;
    r.reserve(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
        const EvictionCandidate& c = candidates[i];
        r.push_back({c.soft_pinned, c.score, c.recency, c.bytes, static_cast<uint32_t>(i)});
    }
    return r;
}

void RankCandidates(std::vector<EvictionCandidate>& candidates) {
    // Sorted as small copies of the rank, then moved into place once: the candidates carry
    // keys, and a sort moving them (a Put into a full DRAM ranks one per shard every time)
    // spent more on the moves than on the comparisons. Colder is a strict total order
    // (recency is unique), so the order is the one sorting the candidates themselves gives.
    std::vector<CandidateRank> r = RanksOf(candidates);
    std::sort(r.begin(), r.end(), Colder<CandidateRank>);
    std::vector<EvictionCandidate> ranked;
    ranked.reserve(candidates.size());
    for (const CandidateRank& rank : r) ranked.push_back(std::move(candidates[rank.index]));
    candidates = std::move(ranked);
}

namespace {
// std's heaps keep the greatest on top: ordered by "warmer", the coldest is the greatest.
bool Warmer(const CandidateRank& a, const CandidateRank& b) { return Colder(b, a); }
}  // namespace

ColdestFirst::ColdestFirst(std::vector<EvictionCandidate> candidates)
    : candidates_(std::move(candidates)), heap_(RanksOf(candidates_)) {
    std::make_heap(heap_.begin(), heap_.end(), Warmer);
}

EvictionCandidate* ColdestFirst::Next() {
    if (heap_.empty()) return nullptr;
    std::pop_heap(heap_.begin(), heap_.end(), Warmer);
    const uint32_t index = heap_.back().index;
    heap_.pop_back();
    return &candidates_[index];
}

std::vector<uint32_t> SelectColdest(const std::vector<EvictionCandidate>& candidates,
                                    uint64_t bytes) {
    // A quickselect weighted by bytes, over small copies of the rank (the candidates carry
    // keys, too heavy to move around). Invariant: [0, lo) is taken (colder than everything
    // in [lo, end)), `need` is what it still lacks, and [lo, hi) holds at least `need`.
    std::vector<CandidateRank> r = RanksOf(candidates);
    const size_t taken = [&] {
        size_t lo = 0, hi = r.size();
        uint64_t need = bytes;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            std::nth_element(r.begin() + static_cast<ptrdiff_t>(lo),
                             r.begin() + static_cast<ptrdiff_t>(mid),
                             r.begin() + static_cast<ptrdiff_t>(hi), Colder<CandidateRank>);
            uint64_t left = 0;  // [lo, mid): all colder than r[mid]
            for (size_t i = lo; i < mid; ++i) left += r[i].bytes;
            if (left >= need) {
                hi = mid;  // the candidate that reaches `bytes` is among them
                continue;
            }
            need -= left;
            if (r[mid].bytes >= need) return mid + 1;
            need -= r[mid].bytes;
            lo = mid + 1;
        }
        return lo;
    }();
    std::vector<uint32_t> out;
    out.reserve(taken);
    for (size_t i = 0; i < taken; ++i) out.push_back(r[i].index);
    return out;
}

std::unique_ptr<EvictionOrder> EvictionOrder::Make(EvictionPolicyKind kind,
                                                   std::function<bool()> use_density) {
    if (kind == EvictionPolicyKind::kHitDensity) return std::make_unique<HitDensityOrder>();
    if (kind == EvictionPolicyKind::kAdaptive) {
        if (!use_density) use_density = [] { return false; };
        return std::make_unique<HitDensityOrder>(std::move(use_density));
    }
    return std::make_unique<LruOrder>();
}

}  // namespace mooncake
