// Eviction: least recently used first, never a leased or pinned object.
//
// Each shard keeps its own LRU list; a global recency counter orders them against each other.
// An eviction round collects, from each shard's cold end, candidates worth `target` bytes —
// the globally oldest `target` bytes are always among them — then evicts in global order,
// re-checking each under its shard lock. So eviction is exact LRU without a global lock on
// the Get path.
#include <algorithm>

#include "core/store_internals.h"

namespace mooncake {
namespace {

struct Candidate {
    uint64_t recency;
    size_t shard;
    std::string key;
    Generation generation;
    uint64_t bytes;
    uint64_t hash;
};

bool Evictable(const ObjectMeta& meta, Nanos now) {
    const Replica* mem = meta.Find(Tier::kMemory, ReplicaState::kComplete);
    return mem != nullptr && mem->pins == 0 && !meta.offload && !meta.Leased(now);
}

// Up to `target` bytes of the coldest evictable objects of every shard, coldest first.
std::vector<Candidate> CollectCandidates(StoreInternals& in, uint64_t target) {
    std::vector<Candidate> out;
    Nanos now = in.clock.Now();
    for (size_t s = 0; s < StoreInternals::kShardCount; ++s) {
        Shard& shard = in.shards[s];
        std::lock_guard lock(shard.mu);
        uint64_t collected = 0;
        for (auto it = shard.lru.rbegin(); it != shard.lru.rend() && collected < target; ++it) {
            const ObjectMeta& meta = **it;
            if (!Evictable(meta, now)) continue;
            uint64_t bytes = SegmentAllocator::RoundUp(meta.size);
            out.push_back({meta.recency, s, *meta.key, meta.generation, bytes, meta.hash});
            collected += bytes;
        }
    }
    std::sort(out.begin(), out.end(),
              [](const Candidate& a, const Candidate& b) { return a.recency < b.recency; });
    return out;
}

}  // namespace

StoreInternals::EvictResult StoreInternals::Evict(uint64_t target) {
    std::lock_guard evict_lock(eviction_mu);
    EvictResult result;
    const bool offload = config.enable_offload();
    for (const Candidate& c : CollectCandidates(*this, target)) {
        if (result.freed + result.pending >= target) break;
        Shard& shard = shards[c.shard];
        std::lock_guard lock(shard.mu);
        auto it = shard.objects.find(c.key);
        if (it == shard.objects.end()) continue;
        ObjectMeta& meta = it->second;
        // Read since collected, or a new incarnation: not the victim we chose.
        if (meta.generation != c.generation || meta.recency != c.recency) continue;
        if (!Evictable(meta, clock.Now())) continue;
        const Replica* mem = meta.Find(Tier::kMemory, ReplicaState::kComplete);
        auto node = GetNode(mem->node);
        bool keep_on_disk = offload && node && node->has_disk() &&
                            !meta.HasComplete(Tier::kLocalDisk);
        m.evictions.Inc();
        m.evicted_bytes.Inc(static_cast<double>(c.bytes));
        ++result.victims;
        if (keep_on_disk) {
            // Offload first; the MEMORY copy stays readable until the disk copy exists.
            QueueOffload(meta, /*evict_after=*/true);
            result.pending += c.bytes;
            continue;
        }
        for (size_t i = 0; i < meta.replicas.size(); ++i) {
            if (meta.replicas[i].tier == Tier::kMemory &&
                meta.replicas[i].state == ReplicaState::kComplete) {
                DropReplica(shard, meta, i);
                break;
            }
        }
        result.freed += c.bytes;
        if (meta.replicas.empty()) {
            // Its last copy: the object goes, so a later Put of the key succeeds.
            DestroyObject(shard, meta);
        }
    }
    return result;
}

StoreInternals::VictimInfo StoreInternals::PeekVictims(uint64_t size) {
    VictimInfo info;
    uint64_t need = SegmentAllocator::RoundUp(size);
    uint64_t covered = 0;
    for (const Candidate& c : CollectCandidates(*this, need)) {
        info.found = true;
        info.max_estimate = std::max(info.max_estimate, sketch.Estimate(c.hash));
        covered += c.bytes;
        if (covered >= need) break;
    }
    if (covered < need) info.found = false;
    return info;
}

size_t MasterStore::RunWatermarkEviction() {
    uint64_t capacity = in_->DramCapacity();
    if (capacity == 0) return 0;
    uint64_t used = in_->DramUsed();
    double high = config_.eviction_high_watermark_ratio();
    if (static_cast<double>(used) <= high * static_cast<double>(capacity)) return 0;
    // Free about eviction_ratio of capacity, counting DRAM already on its way out.
    uint64_t target = static_cast<uint64_t>(config_.eviction_ratio() *
                                            static_cast<double>(capacity));
    uint64_t pending = in_->evict_pending_bytes.load();
    if (target <= pending) return 0;
    return in_->Evict(target - pending).victims;
}

}  // namespace mooncake
