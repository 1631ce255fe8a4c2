// Eviction: coldest first in the eviction order (core/master/eviction_order.h: LRU or hit density),
// never a pinned object (nor a leased one under lease_blocks_eviction: core/master/object.h LeaseRule).
//
// Each shard keeps its own lists; a global recency counter orders them against each other.
// An eviction round collects, from each shard's cold end, candidates worth `target` bytes —
// the globally coldest `target` bytes are always among them — then evicts in global order,
// re-checking each under its shard lock. So eviction is exact without a global lock on the
// Get path.
#include <algorithm>

#include "core/master/master_store.h"

namespace mooncake {
namespace {

using Candidate = EvictionCandidate;

// Up to `per_shard` bytes of the coldest evictable objects of every shard (per eviction list),
// unordered, in `round`.
std::vector<Candidate> Collect(ObjectTable& table, EvictionOrder::Round& round,
                               uint64_t per_shard, bool clean_keys) {
    std::vector<Candidate> out;
    // At least one per shard with anything to evict (a Put's own room is one object's).
    out.reserve(ObjectTable::kShardCount);
    for (size_t s = 0; s < ObjectTable::kShardCount; ++s) {
        Shard& shard = table.shard(s);
        MutexLock lock(shard.mu);
        round.Collect(shard.eviction_lists, s, per_shard, out, clean_keys);
    }
    return out;
}

}  // namespace

ColdestFirst MasterStore::CollectCandidates(uint64_t per_shard, const CandidateFilter& filter) {
    std::unique_ptr<EvictionOrder::Round> round =
        order_->StartRound(clock_.Now(), lease_rule(), filter, HonourSoftPins());
    return ColdestFirst(Collect(table_, *round, per_shard, /*clean_keys=*/true));
}

MasterStore::EvictResult MasterStore::EvictColdest(uint64_t target, const EvictionScope& scope) {
    MutexLock evict_lock(eviction_mu_);
    EvictResult result;
    const bool offload_enabled = config_.enable_offload();
    const LeaseRule leases = lease_rule();
    const CandidateFilter filter = RoundFilter(scope);
    ColdestFirst candidates = CollectCandidates(target, filter);
    while (const Candidate* next = candidates.Next()) {
        const Candidate& c = *next;
        if (result.freed + result.pending >= target) break;
        std::vector<std::string> group;
        {
            Shard& shard = table_.shard(c.shard);
            MutexLock lock(shard.mu);
            auto it = shard.objects.find(c.key);
            if (it == shard.objects.end()) continue;
            ObjectMeta& meta = it->second;
            // Read since collected, or a new incarnation: not the victim we chose.
            if (meta.generation != c.generation || meta.recency != c.recency) continue;
            if (!meta.Evictable(clock_.Now(), leases)) continue;
            if (filter && !filter(meta)) continue;  // copies or segments changed since
            group = groups_.Others(c.key);  // before the victim may go (and leave its group)
            if (!EvictVictim(shard, meta, c.bytes, offload_enabled, result, scope.on_nodes)) {
                continue;
            }
        }
        EvictGroupMembers(group, offload_enabled, filter, result);
    }
    return result;
}

bool MasterStore::EvictVictim(Shard& shard, ObjectMeta& meta, uint64_t bytes,
                              bool offload_enabled, EvictResult& result,
                              std::span<const NodeId> on_nodes) {
    if (meta.MemoryCopies() > 1) {
        // One of several copies (PutConfig::replicas) goes on its own, now: the others keep
        // the bytes, so no disk copy is needed, and the object stays listed where it was.
        // Never a task's source, and only where room is wanted (RoomWantedAt).
        int last = -1;
        for (size_t i = 0; i < meta.replicas().size(); ++i) {
            const Replica& r = meta.replicas()[i];
            if (RoomWantedAt(r, on_nodes) && !meta.SourcePinned(r)) last = static_cast<int>(i);
        }
        if (last < 0) return false;
        DropReplica(shard, meta, static_cast<size_t>(last));
        metrics_.evictions.Inc();
        metrics_.evicted_bytes.Inc(static_cast<double>(bytes));
        ++result.victims;
        result.freed += bytes;
        return true;
    }
    // The watermark round's copy is on its way already: MEMORY goes when it lands. (Was:
    // such objects were not evictable, so Puts evicted warmer ones whose copies queued
    // behind the whole round's: every Put stalled until the round was written, ~1 s in
    // lockstep; bench/results/engine.md.)
    const bool copy_coming = meta.WrittenAhead();
    const Replica* mem = meta.CompleteMemory();
    auto node = nodes_.Get(mem->node);
    bool keep_on_disk = !copy_coming && offload_enabled && node && node->has_disk() &&
                        !meta.HasComplete(Tier::kLocalDisk);
    // The node's offload queue is at offload_queue_limit: this one cannot go yet.
    if (keep_on_disk && offload_.QueueFull(mem->node)) return false;
    metrics_.evictions.Inc();
    metrics_.evicted_bytes.Inc(static_cast<double>(bytes));
    order_->OnEvict(meta, clock_.Now());
    ++result.victims;
    if (copy_coming) {
        offload_.EvictWhenCopied(meta);
        result.pending += bytes;
        return true;
    }
    if (keep_on_disk) {
        // Offload first; the MEMORY copy stays readable until the disk copy exists.
        offload_.Queue(meta, /*evict_after=*/true);
        result.pending += bytes;
        return true;
    }
    DropReplica(shard, meta,
                static_cast<size_t>(meta.IndexOf([](const Replica& r) { return r.IsCompleteMemory(); })));
    result.freed += bytes;
    if (meta.NoReplicas()) {
        // Its last copy: the object goes, so a later Put of the key succeeds.
        DestroyObject(shard, meta);
    }
    return true;
}

void MasterStore::EvictGroupMembers(const std::vector<std::string>& members,
                                    bool offload_enabled, const CandidateFilter& filter,
                                    EvictResult& result) {
    const LeaseRule leases = lease_rule();
    for (const std::string& key : members) {
        Shard& shard = table_.ShardFor(key);
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(key);
        if (it == shard.objects.end()) continue;
        ObjectMeta& meta = it->second;
        // The same safety as any victim; a pinned member keeps its pin's promise.
        const Nanos now = clock_.Now();
        if (!meta.Evictable(now, leases) || (filter && !filter(meta)) ||
            shard.eviction_lists.pins.HardPinned(meta) ||
            (HonourSoftPins() && shard.eviction_lists.pins.SoftPinned(meta, now))) {
            continue;
        }
        if (EvictVictim(shard, meta, SegmentAllocator::RoundUp(meta.size), offload_enabled,
                        result)) {
            metrics_.group_evictions.Inc();
        }
    }
}

VictimInfo MasterStore::PeekVictims(uint64_t size) {
    VictimInfo info;
    uint64_t need = SegmentAllocator::RoundUp(size);
    uint64_t covered = 0;
    ColdestFirst candidates = CollectCandidates(need);
    while (const Candidate* next = candidates.Next()) {
        const Candidate& c = *next;
        info.found = true;
        info.max_estimate = std::max(info.max_estimate, sketch_.Estimate(c.reads));
        covered += c.bytes;
        if (covered >= need) break;
    }
    if (covered < need) info.found = false;
    return info;
}

size_t MasterStore::Clean(uint64_t target) {
    MutexLock evict_lock(eviction_mu_);
    const uint64_t covered = offload_.clean_pending_bytes();
    if (covered >= target) return 0;
    const uint64_t allocated = dram_.allocated_bytes();
    const Nanos now = clock_.Now();
    if (!clean_gate_.held_back && target == clean_gate_.target &&
        allocated - clean_gate_.allocated_mark < target / 16 && now < clean_gate_.next_due) {
        return 0;
    }
    clean_gate_ = {target, allocated, now + std::chrono::seconds(1), /*held_back=*/false};
    // Keys spread evenly over shards, so twice each shard's fair share of the cold end covers
    // the global cold end closely enough — cleaning need not be exact, and this keeps a round
    // cheap however large the cache is. Plus one block of slack, so a small share still
    // reaches past the shard's coldest object.
    uint64_t per_shard = 2 * target / ObjectTable::kShardCount + kSegmentAlignment;
    // A round collects ~2 x offload_clean_ratio of DRAM's objects: the coldest `target` bytes
    // among them are selected (linear), not sorted, and only the few without a LOCAL_DISK
    // copy are ranked and carry their keys.
    std::unique_ptr<EvictionOrder::Round> round =
        order_->StartRound(now, lease_rule(), {}, HonourSoftPins());
    std::vector<Candidate> collected = Collect(table_, *round, per_shard, /*clean_keys=*/false);
    std::vector<Candidate> candidates;
    // Copies in flight (`covered`) are among the collected as clean: the coldest `target`
    // bytes are what must be clean.
    for (uint32_t i : SelectColdest(collected, target)) {
        if (!collected[i].clean) candidates.push_back(std::move(collected[i]));
    }
    RankCandidates(candidates);
    size_t queued = 0;
    for (const Candidate& c : candidates) {
        Shard& shard = table_.shard(c.shard);
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(c.key);
        if (it == shard.objects.end()) continue;
        ObjectMeta& meta = it->second;
        if (meta.generation != c.generation || meta.offload ||
            meta.HasComplete(Tier::kLocalDisk)) {
            continue;
        }
        const Replica* mem = meta.CompleteMemory();
        auto node = mem ? nodes_.Get(mem->node) : nullptr;
        if (!node || !node->has_disk()) continue;
        if (offload_.QueueFull(node->id)) {
            clean_gate_.held_back = true;  // try again next tick
            continue;
        }
        offload_.Queue(meta, /*evict_after=*/false);
        offload_.MarkCleaning(meta, c.bytes);
        ++queued;
    }
    return queued;
}

size_t MasterStore::RunWatermarkEviction() {
    uint64_t capacity = dram_.Capacity();
    if (capacity == 0) return 0;
    uint64_t used = dram_.Used();
    double high = config_.eviction_high_watermark_ratio();
    if (static_cast<double>(used) <= high * static_cast<double>(capacity)) return 0;
    auto share = [&](double ratio) {
        return static_cast<uint64_t>(ratio * static_cast<double>(capacity));
    };
    if (config_.eviction_watermark_drop()) {
        // Free about eviction_ratio of capacity now, counting DRAM already on its way out.
        uint64_t target = share(config_.eviction_ratio());
        uint64_t pending = dram_.evict_pending_bytes();
        if (target <= pending) return 0;
        // Tenants within their MEMORY quotas keep their objects (store_tenants.cc).
        return EvictColdest(target - pending, RoomScope("")).victims;
    }
    // DRAM you pay for is DRAM you use: keep it full, but make sure the coldest
    // offload_clean_ratio of it has LOCAL_DISK copies, so an allocation can drop them at once
    // instead of waiting for a disk write. Without offload, dropping is instant already.
    // The share is a trade: bursts of Puts larger than it make promotions wait for offloads
    // (the timed replay at 5x with one-exchange Puts: promotion p99 25-86 ms at 0.05, 8-22 ms
    // at 0.2; bench/results/replay-timed.md), and a round walks about twice the share of
    // DRAM's objects, though only when new data took a sixteenth of the share since the last
    // one (see Clean).
    if (!config_.enable_offload() || !config_.offload_on_evict()) return 0;
    // At most a quarter of the disks: a share the disks cannot hold beside their other records
    // would churn, each copy written ahead evicting another record of a full disk (maybe the
    // only copy of a colder object) and the round never reaching its share.
    return Clean(
        std::min(share(config_.offload_clean_ratio()), nodes_.DiskCapacity() / 4));
}

// A manual evict (mooncakectl evict): MEMORY goes now, or once a disk copy lands.
Result<ManualOutcome> MasterStore::Evict(std::string_view key) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = table_.ShardFor(key);
    MutexLock lock(shard.mu);
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) {
        return Status::NotFound("key " + QuoteKey(key) + " does not exist");
    }
    ObjectMeta& meta = it->second;
    const Replica* mem = meta.CompleteMemory();
    if (mem == nullptr) {
        if (meta.Find(Tier::kMemory, ReplicaState::kProcessing)) {
            return Status::NotReady("key " + QuoteKey(key) + " is still being written");
        }
        return ManualOutcome::kAlreadyThere;
    }
    if (shard.eviction_lists.pins.HardPinned(meta)) {
        return Status::InvalidArgument("key " + QuoteKey(key) + " is hard-pinned: never evicted");
    }
    if (meta.offload) {
        // A disk copy is being written (at PutEnd, manual, watermark clean): make the evict
        // happen when it lands, as for an offload-on-evict. (Was: "in flight" answered but
        // MEMORY never dropped; EvictionTest.ManualEvictDuringAPutEndOffloadDropsMemory...)
        if (meta.CopyInFlight()) offload_.EvictWhenCopied(meta);
        return ManualOutcome::kInFlight;
    }
    if (meta.LeaseBlocksEviction(clock_.Now(), lease_rule())) {
        return Status::HasLease("key " + QuoteKey(key) + " is leased by a reader; retry later");
    }
    auto node = nodes_.Get(mem->node);
    if (!meta.HasComplete(Tier::kLocalDisk) && config_.enable_offload() && node &&
        node->has_disk()) {
        if (offload_.QueueFull(node->id)) {
            return Status::Busy("node " + std::to_string(node->id) +
                                " has offload_queue_limit offloads pending; retry later");
        }
        offload_.Queue(meta, /*evict_after=*/true);  // drop MEMORY once the copy exists
        return ManualOutcome::kQueued;
    }
    DropMemoryCopies(shard, meta);  // every copy: the key leaves MEMORY
    metrics_.evictions.Inc();
    if (meta.NoReplicas()) DestroyObject(shard, meta);
    return ManualOutcome::kDone;
}

}  // namespace mooncake
