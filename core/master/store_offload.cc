// Offload: MEMORY objects get a LOCAL_DISK copy written by the node that holds them — at
// PutEnd (offload_on_evict off), when evicted (on), or when an operator asks.
#include "core/master/store_internals.h"
#include "core/master/task_delivery.h"

namespace mooncake {

std::vector<OffloadTask> MasterStore::OffloadObjectHeartbeat(NodeId node_id, size_t max,
                                                             Nanos wait) {
    return DeliverTasks<OffloadTask>(
        in_->nodes, in_->table, node_id, TaskQueue::kOffload, max, wait,
        [&](ObjectMeta& meta, const TaskRef& ref) -> std::optional<OffloadTask> {
            const Replica* src = meta.CompleteMemory();
            if (!meta.offload || meta.offload->node != node_id || meta.offload->delivered ||
                src == nullptr) {
                return std::nullopt;
            }
            meta.offload->delivered = true;
            return OffloadTask{ref.key, meta.generation, meta.size, src->offset};
        });
}

namespace {

Result<ObjectMeta*> FindOffload(Shard& shard, NodeId node, std::string_view key,
                                Generation generation)
    MC_REQUIRES(shard.mu) {
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) {
        return Status::NotFound("key " + QuoteKey(key) + " does not exist");
    }
    ObjectMeta& meta = it->second;
    if (meta.generation != generation) {
        return Status::StaleGeneration("generation " + std::to_string(generation) + " of " +
                                       QuoteKey(key) + " is not the current one");
    }
    if (!meta.offload) {
        return Status::NotFound("no offload task for " + QuoteKey(key));
    }
    if (meta.offload->node != node) {
        return Status::IllegalClient("node " + std::to_string(node) +
                                     " does not hold the offload task of " + QuoteKey(key));
    }
    return &meta;
}

}  // namespace

Status MasterStore::NotifyOffloadSuccess(NodeId node_id, std::string_view key,
                                         Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = in_->table.ShardFor(key);
    {
        MutexLock lock(shard.mu);
        Result<ObjectMeta*> found = FindOffload(shard, node_id, key, generation);
        if (!found.ok()) return found.status();
        ObjectMeta& meta = **found;
        if (!meta.HasComplete(Tier::kLocalDisk)) meta.AddDisk(*in_, node_id);
        in_->m.offload_completed.Inc();
        in_->m.offload_bytes.Inc(static_cast<double>(meta.size));
        // Evicted while being written: drop MEMORY now — unless it was read since eviction
        // chose it (hot again: it stays, clean, and the next eviction round that finds it
        // coldest drops it at no cost) or, under lease_blocks_eviction, is leased.
        // The drop comes before OffloadPipeline::End (the source's one pin is this task's), so the
        // task's accounting ends only once its room is free: a waiting Put that sees no
        // offload in flight also sees the room (see AllocateWithEviction).
        if (meta.DropAfterCopy(clock_.Now(), in_->lease_rule())) {
            const int i = meta.IndexOf([](const Replica& r) {
                return r.tier == Tier::kMemory && r.state == ReplicaState::kComplete && r.pins <= 1;
            });
            if (i >= 0) in_->DropReplica(shard, meta, static_cast<size_t>(i));
        }
        in_->offload.End(meta);
    }
    in_->dram.NotifyRoom();
    return Status::Ok();
}

Status MasterStore::NotifyOffloadFailure(NodeId node_id, std::string_view key,
                                         Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = in_->table.ShardFor(key);
    {
        MutexLock lock(shard.mu);
        Result<ObjectMeta*> found = FindOffload(shard, node_id, key, generation);
        if (!found.ok()) {
            if (found.status().Is(StatusCode::kNotFound)) return Status::Ok();  // repeated
            return found.status();
        }
        ObjectMeta& meta = **found;
        in_->offload.End(meta);
        in_->m.offload_failed.Inc();
    }
    in_->dram.NotifyRoom();  // waiting Puts re-evaluate: this DRAM will not free by itself
    return Status::Ok();
}

Result<ManualOutcome> MasterStore::Offload(std::string_view key) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = in_->table.ShardFor(key);
    MutexLock lock(shard.mu);
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) {
        return Status::NotFound("key " + QuoteKey(key) + " does not exist");
    }
    ObjectMeta& meta = it->second;
    if (meta.HasComplete(Tier::kLocalDisk)) return ManualOutcome::kAlreadyThere;
    if (meta.offload) return ManualOutcome::kInFlight;
    const Replica* mem = meta.CompleteMemory();
    if (mem == nullptr) {
        return Status::NotReady("key " + QuoteKey(key) + " is still being written");
    }
    auto node = in_->nodes.Get(mem->node);
    if (!node || !node->has_disk()) {
        return Status::InvalidArgument("the node holding " + QuoteKey(key) +
                                       " has no LOCAL_DISK tier");
    }
    if (in_->offload.QueueFull(node->id)) {
        return Status::Busy("node " + std::to_string(node->id) +
                            " has offload_queue_limit offloads pending; retry later");
    }
    in_->offload.Queue(meta, /*evict_after=*/false);
    return ManualOutcome::kQueued;
}

Result<ManualOutcome> MasterStore::Evict(std::string_view key) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = in_->table.ShardFor(key);
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
        if (meta.CopyInFlight()) in_->offload.EvictWhenCopied(meta);
        return ManualOutcome::kInFlight;
    }
    if (meta.LeaseBlocksEviction(clock_.Now(), in_->lease_rule())) {
        return Status::HasLease("key " + QuoteKey(key) + " is leased by a reader; retry later");
    }
    if (mem->pins > 0) return Status::Busy("key " + QuoteKey(key) + " is pinned by a task");
    auto node = in_->nodes.Get(mem->node);
    if (!meta.HasComplete(Tier::kLocalDisk) && config_.enable_offload() && node &&
        node->has_disk()) {
        if (in_->offload.QueueFull(node->id)) {
            return Status::Busy("node " + std::to_string(node->id) +
                                " has offload_queue_limit offloads pending; retry later");
        }
        in_->offload.Queue(meta, /*evict_after=*/true);  // drop MEMORY once the copy exists
        return ManualOutcome::kQueued;
    }
    const int i = meta.IndexOf([](const Replica& r) { return r.tier == Tier::kMemory; });
    if (i >= 0) in_->DropReplica(shard, meta, static_cast<size_t>(i));
    in_->m.evictions.Inc();
    if (meta.NoReplicas()) in_->DestroyObject(shard, meta);
    return ManualOutcome::kDone;
}

}  // namespace mooncake
