// Draining a node: its MEMORY copies move to other nodes, so the node can leave without
// taking hot data with it (Mooncake's drain jobs). The rules live here; the daemon's
// DrainJobs (daemon/drain_jobs.h) reads each unit's bytes from the node and writes them to
// the target between DrainStart and DrainEnd.
//
// No pin holds the source while its bytes are read: the node checks (key, generation) on
// every read, so a copy evicted or removed meanwhile is not read as another object's bytes;
// the read fails, DrainEnd frees the target, and the next pass finds what became of it.
// LOCAL_DISK records are the node's own and stay with it.
#include <algorithm>

#include "core/base/segment_allocator.h"
#include "core/master/master_store.h"

namespace mooncake {

Status MasterStore::SetSegmentState(NodeId node, SegmentState state) {
    std::shared_ptr<NodeState> n = nodes_.Get(node);
    if (n == nullptr) return Status::UnknownNode("node " + std::to_string(node) + " is not live");
    auto count = [this](SegmentState was, SegmentState now) {
        if ((was == SegmentState::kOk) != (now == SegmentState::kOk)) {
            draining_segments_.fetch_add(now == SegmentState::kOk ? -1 : 1);
        }
    };
    count(n->segment_state.exchange(state), state);
    if (nodes_.Get(node) != n) {
        // It left meanwhile (CleanupNode set it back to OK and counted that, maybe before
        // this change): back to OK, counted once.
        count(n->segment_state.exchange(SegmentState::kOk), SegmentState::kOk);
        return Status::UnknownNode("node " + std::to_string(node) + " left");
    }
    if (state == SegmentState::kOk) dram_.NotifyRoom();  // its room is open to placement again
    return Status::Ok();
}

bool MasterStore::RoomWantedAt(const Replica& r, std::span<const NodeId> on_nodes) const {
    if (!r.IsCompleteMemory()) return false;
    if (!on_nodes.empty() &&
        std::find(on_nodes.begin(), on_nodes.end(), r.node) == on_nodes.end()) {
        return false;
    }
    if (draining_segments_.load() == 0) return true;  // the common case: no lookup
    std::shared_ptr<NodeState> node = nodes_.Get(r.node);
    return node != nullptr && node->segment_state.load() == SegmentState::kOk;
}

CandidateFilter MasterStore::RoundFilter(const EvictionScope& scope) const {
    CandidateFilter tenants = scope.Filter(tenants_);
    if (draining_segments_.load() == 0 && scope.colder_than == 0 && scope.on_nodes.empty()) {
        return tenants;
    }
    return [this, tenants = std::move(tenants), colder = scope.colder_than,
            nodes = scope.on_nodes](const ObjectMeta& meta) {
        if (tenants && !tenants(meta)) return false;
        if (colder != 0 && meta.recency >= colder) return false;
        return meta.IndexOf([&](const Replica& r) { return RoomWantedAt(r, nodes); }) >= 0;
    };
}

std::vector<DrainUnit> MasterStore::DrainUnits(NodeId node) const {
    std::vector<DrainUnit> units;
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        for (const auto& [key, meta] : shard.objects) {
            for (const Replica& r : meta.replicas()) {
                if (r.node != node || !r.IsCompleteMemory()) continue;
                units.push_back({key, meta.generation, r.offset, meta.size, meta.recency});
            }
        }
    }
    // The hottest first: where room is short, they get it (DrainStart evicts only colder).
    std::sort(units.begin(), units.end(),
              [](const DrainUnit& a, const DrainUnit& b) { return a.recency > b.recency; });
    return units;
}

Result<DrainStep> MasterStore::DrainStart(NodeId from, const DrainUnit& unit,
                                          std::span<const NodeId> targets) {
    MC_RETURN_IF_ERROR(ValidateKey(unit.key));
    Shard& shard = table_.ShardFor(unit.key);
    uint64_t recency = 0;
    std::vector<NodeId> avoid;  // where the copy may not go (its holders, this one included)
    {
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(unit.key);
        if (it == shard.objects.end() || it->second.generation != unit.generation) {
            return DrainStep{};  // removed (or put again): nothing of it is left to move
        }
        ObjectMeta& meta = it->second;
        recency = meta.recency;
        const int here = meta.IndexOf([&](const Replica& r) {
            return r.node == from && r.IsCompleteMemory() && r.offset == unit.offset;
        });
        if (here < 0) return DrainStep{};  // evicted or dropped since listed
        const bool elsewhere = meta.IndexOf([&](const Replica& r) {
            return r.node != from && RoomWantedAt(r, {});
        }) >= 0;
        if (elsewhere) {
            // A node that takes data has the bytes in MEMORY: this copy just goes (unless an
            // offload is reading it).
            if (meta.SourcePinned(meta.replicas()[here])) {
                return Status::Busy("the copy of " + QuoteKey(unit.key) +
                                    " here is an offload's source");
            }
            DropReplica(shard, meta, static_cast<size_t>(here));
            RecountHardPin(shard, meta);
            return DrainStep{};
        }
        // An offload reads the object's first MEMORY copy: it is not displaced (DrainEnd
        // puts the new copy first) until the offload ends.
        if (meta.offload) {
            return Status::Busy("an offload of " + QuoteKey(unit.key) + " is in flight");
        }
        // Anywhere but the draining node and the nodes holding a copy already (and, when
        // targets are named, only there): placement skips draining nodes by itself.
        for (const Replica& r : meta.replicas()) {
            if (r.tier == Tier::kMemory) avoid.push_back(r.node);
        }
    }
    if (!targets.empty()) {
        for (const auto& node : nodes_.All()) {
            if (std::find(targets.begin(), targets.end(), node->id) == targets.end()) {
                avoid.push_back(node->id);
            }
        }
    }
    std::optional<DramPool::Allocation> target = dram_.TryAllocate(unit.size, kNoNode, avoid);
    if (!target && nodes_.AnyReporting()) {
        // As DramPool::Allocate: no eviction while a node that registered again is still
        // reporting what its segment holds (it could take what was just reported back).
        // Its segment opens at its next heartbeat; the unit waits for a later pass.
        return nodes_.StillReporting();
    }
    if (!target) {
        // Room made as a Put makes it, but only by evicting data colder than this object:
        // a drain does not push out what is read more than what it moves.
        EvictionScope scope = RoomScope(TenantOfKey(unit.key));
        scope.colder_than = std::max<uint64_t>(recency, 1);
        scope.on_nodes.assign(targets.begin(), targets.end());  // room only where it can go
        EvictColdest(SegmentAllocator::RoundUp(unit.size), scope);
        target = dram_.TryAllocate(unit.size, kNoNode, avoid);
    }
    if (!target) {
        return Status::NoSpace("no node " + std::string(targets.empty() ? "" : "of the targets ") +
                               "has room for " + QuoteKey(unit.key) + " (" + FormatSize(unit.size) +
                               ")");
    }
    DrainStep step;
    step.kind = DrainStep::kCopy;
    step.target = {
        Tier::kMemory, ReplicaState::kProcessing, target->node, target->offset, unit.size, 0};
    return step;
}

Status MasterStore::DrainEnd(NodeId from, const DrainUnit& unit, const DrainStep& step,
                             bool copied) {
    if (step.kind != DrainStep::kCopy) return Status::Ok();
    auto free_target = [&] { dram_.Free(step.target.node, step.target.offset, unit.size); };
    if (!copied) {
        free_target();
        return Status::Ok();
    }
    Shard& shard = table_.ShardFor(unit.key);
    {
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(unit.key);
        const bool same = it != shard.objects.end() && it->second.generation == unit.generation;
        if (same && nodes_.Get(step.target.node) == nullptr) {
            return Status::Unavailable("the node the copy of " + QuoteKey(unit.key) +
                                       " went to left");
        }
        if (same) {
            ObjectMeta& meta = it->second;
            // An offload started meanwhile reads the first MEMORY copy: the new one goes
            // after it, and the copy here stays until a later pass (DrainStart: Busy).
            meta.AddMemory(*this, step.target.node, step.target.offset,
                           /*first=*/!meta.offload);
            // Evicted to disk while copied: back in the eviction order. Else it keeps its
            // place (a move is not an access).
            if (!meta.eviction.listed) LruTouch(shard, meta);
            const int here = meta.IndexOf(
                [&](const Replica& r) { return r.node == from && r.IsCompleteMemory(); });
            if (here >= 0 && meta.offload) {
                RecountHardPin(shard, meta);
                return Status::Busy("the copy of " + QuoteKey(unit.key) +
                                    " stays until its offload ends");
            }
            if (here >= 0) DropReplica(shard, meta, static_cast<size_t>(here));
            RecountHardPin(shard, meta);
            return Status::Ok();
        }
    }
    free_target();
    return Status::NotFound("key " + QuoteKey(unit.key) + " changed while its copy was made");
}

}  // namespace mooncake
