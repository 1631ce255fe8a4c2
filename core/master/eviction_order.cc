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
    if (hook.listed) lists.lists[hook.list].erase(&meta);
    list.push_front(&meta);
    hook.listed = true;
    hook.list = to;
}

void Unlist(EvictionLists& lists, ObjectMeta& meta) {
    EvictionHook& hook = meta.eviction;
    if (!hook.listed) return;
    lists.lists[hook.list].erase(&meta);
    hook.listed = false;
}

// Appends the coldest Evictable(now, leases) objects of `list`, about `per_shard` bytes, scored by
// `score(meta)`. Hard-pinned objects are skipped; soft-pinned ones are appended too (up to
// `per_shard` bytes of them) while the unpinned ones fall short, as they rank after those —
// unless `honour_soft_pins` is false, when they are collected and ranked as any other.
template <typename Score>
void CollectList(const EvictionList& list, const PinTable& pins, size_t shard,
                 uint64_t per_shard, Nanos now, LeaseRule leases, bool honour_soft_pins,
                 Score score, bool clean_keys, const CandidateFilter& filter,
                 std::vector<EvictionCandidate>& out) {
    static const std::string kNoKey;
    uint64_t collected = 0, pinned_collected = 0;
    for (auto it = list.rbegin(); it != list.rend() && collected < per_shard; ++it) {
        const ObjectMeta& meta = **it;
        if (!meta.Evictable(now, leases)) continue;
        if (filter && !filter(*meta.key)) continue;
        const ObjectPin* pin = pins.Find(meta);
        if (pin != nullptr && pin->hard()) continue;
        const bool soft_pinned = honour_soft_pins && pin != nullptr && pin->soft_until > now;
        uint64_t bytes = SegmentAllocator::RoundUp(meta.size);
        if (soft_pinned && pinned_collected >= per_shard) continue;
        const bool clean = meta.HasComplete(Tier::kLocalDisk) || meta.WrittenAhead();
        out.push_back({meta.recency, shard, clean && !clean_keys ? kNoKey : *meta.key,
                       meta.generation, bytes, meta.reads(), clean, score(meta), soft_pinned});
        (soft_pinned ? pinned_collected : collected) += bytes;
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

    class LruRound final : public Round {
    public:
        LruRound(Nanos now, LeaseRule leases, CandidateFilter filter, bool honour_soft_pins)
            : now_(now), leases_(leases), filter_(std::move(filter)),
              honour_soft_pins_(honour_soft_pins) {}
        void Collect(const EvictionLists& lists, size_t shard, uint64_t per_shard,
                     std::vector<EvictionCandidate>& out, bool clean_keys) override {
            CollectList(lists.lists[0], lists.pins, shard, per_shard, now_, leases_,
                        honour_soft_pins_, [](const ObjectMeta&) { return 0.0; }, clean_keys,
                        filter_, out);
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

class HitDensityOrder final : public EvictionOrder {
public:
    bool EvictsLeastRecent() const override { return false; }
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

    // Within a class the score falls with age, so the cold end of every class list holds
    // the lowest `per_shard` bytes of each shard.
    class HitDensityRound final : public Round {
    public:
        HitDensityRound(HitDensityEstimator::Table table, Nanos now, LeaseRule leases,
                        CandidateFilter filter, bool honour_soft_pins)
            : table_(std::move(table)), now_(now), leases_(leases), filter_(std::move(filter)),
              honour_soft_pins_(honour_soft_pins) {}
        void Collect(const EvictionLists& lists, size_t shard, uint64_t per_shard,
                     std::vector<EvictionCandidate>& out, bool clean_keys) override {
            auto score = [&](const ObjectMeta& meta) {
                return HitDensityEstimator::Score(table_, meta.eviction.cls,
                                                  now_ - meta.eviction.last_access);
            };
            for (const EvictionList& list : lists.lists) {
                CollectList(list, lists.pins, shard, per_shard, now_, leases_,
                            honour_soft_pins_, score, clean_keys, filter_, out);
            }
        }

    private:
        HitDensityEstimator::Table table_;
        Nanos now_;
        LeaseRule leases_;
        CandidateFilter filter_;
        bool honour_soft_pins_;
    };
    std::unique_ptr<Round> StartRound(Nanos now, LeaseRule leases, CandidateFilter filter,
                                      bool honour_soft_pins) override {
        return std::make_unique<HitDensityRound>(estimator_.Snapshot(), now, leases,
                                                 std::move(filter), honour_soft_pins);
    }

private:
    HitDensityEstimator estimator_;
};

}  // namespace

void RankCandidates(std::vector<EvictionCandidate>& candidates) {
    std::sort(candidates.begin(), candidates.end(), Colder<EvictionCandidate>);
}

std::vector<uint32_t> SelectColdest(const std::vector<EvictionCandidate>& candidates,
                                    uint64_t bytes) {
    // A quickselect weighted by bytes, over small copies of the rank (the candidates carry
    // keys, too heavy to move around). Invariant: [0, lo) is taken (colder than everything
    // in [lo, end)), `need` is what it still lacks, and [lo, hi) holds at least `need`.
    struct Rank {
        bool soft_pinned;
        double score;
        uint64_t recency;
        uint64_t bytes;
        uint32_t index;
    };
    std::vector<Rank> r;
    r.reserve(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
        const EvictionCandidate& c = candidates[i];
        r.push_back({c.soft_pinned, c.score, c.recency, c.bytes, static_cast<uint32_t>(i)});
    }
    const size_t taken = [&] {
        size_t lo = 0, hi = r.size();
        uint64_t need = bytes;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            std::nth_element(r.begin() + static_cast<ptrdiff_t>(lo),
                             r.begin() + static_cast<ptrdiff_t>(mid),
                             r.begin() + static_cast<ptrdiff_t>(hi), Colder<Rank>);
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

std::unique_ptr<EvictionOrder> EvictionOrder::Make(EvictionPolicyKind kind) {
    if (kind == EvictionPolicyKind::kHitDensity) return std::make_unique<HitDensityOrder>();
    return std::make_unique<LruOrder>();
}

}  // namespace mooncake
