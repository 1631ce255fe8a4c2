// MasterStore's promotion calls: the holder node's protocol, the reaper, manual promote and
// the periodic retry / proactive steps. The rules and the state are the PromotionPipeline's
// (core/master/promotion_pipeline.h); what is here is the glue to the shard locks and to DRAM.
#include "core/master/store_internals.h"

namespace mooncake {

size_t MasterStore::RetryRefusedCandidates() { return in_->promotion.RetryRefused(); }

size_t MasterStore::ProactivePromotionScan() { return in_->promotion.ProactiveScan(); }

std::vector<PromotionTask> MasterStore::PromotionObjectHeartbeat(NodeId node_id, size_t max,
                                                                 Nanos wait) {
    PromotionPipeline& promotion = in_->promotion;
    return in_->DrainQueue<PromotionTask>(
        node_id, TaskQueue::kPromotion, max, wait,
        [&](ObjectMeta& meta, const TaskRef& ref) { return promotion.Deliver(meta, ref, node_id); });
}

Result<ReplicaDesc> MasterStore::PromotionAllocStart(NodeId node, std::string_view key,
                                                     Generation generation, uint64_t size) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    StoreInternals& in = *in_;
    if (!in.nodes.Get(node)) return Status::UnknownNode("node " + std::to_string(node));
    Shard& shard = in.table.ShardFor(key);
    {
        MutexLock lock(shard.mu);
        Result<ObjectMeta*> found = PromotionPipeline::Find(shard, node, key, generation);
        if (!found.ok()) return found.status();
        ObjectMeta& meta = **found;
        if (size != meta.size) {
            return Status::InvalidArgument("size " + std::to_string(size) + " does not match " +
                                           QuoteKey(key) + " (" + std::to_string(meta.size) + ")");
        }
        if (meta.promotion->staging) {  // a retried call: hand back the same range
            const Replica& s = *meta.promotion->staging;
            return ReplicaDesc{s.tier, s.state, s.node, s.offset, meta.size, 0};
        }
    }
    // Allocation may evict, which takes other shards' locks: not under ours.
    Result<DramPool::Allocation> alloc = in.AllocateWithEviction(size, node, Nanos(0));
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = PromotionPipeline::Find(shard, node, key, generation);
    if (!found.ok() || (*found)->promotion->staging) {
        // Cancelled meanwhile (or a racing duplicate call won): give the DRAM back.
        if (alloc.ok()) in.dram.Free(alloc->node, alloc->offset, size);
        if (!found.ok()) return found.status();
        const Replica& s = *(*found)->promotion->staging;
        return ReplicaDesc{s.tier, s.state, s.node, s.offset, size, 0};
    }
    ObjectMeta& meta = **found;
    if (!alloc.ok() && in.dram.evict_pending_bytes() > 0) {
        // Eviction is offloading colder objects to make room: the task stays; retry shortly.
        return Status::NotReady("DRAM for " + QuoteKey(key) +
                                " is being freed by offloads in flight; retry");
    }
    if (!alloc.ok()) {
        in.promotion.Fail(meta, PromotionOutcome::kAllocFailed);
        return alloc.status();
    }
    in.promotion.Stage(meta, alloc->node, alloc->offset);
    return ReplicaDesc{Tier::kMemory, ReplicaState::kProcessing, alloc->node, alloc->offset, size,
                       0};
}

Status MasterStore::NotifyPromotionSuccess(NodeId node, std::string_view key,
                                           Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    StoreInternals& in = *in_;
    Shard& shard = in.table.ShardFor(key);
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = PromotionPipeline::Find(shard, node, key, generation);
    if (!found.ok()) return found.status();
    ObjectMeta& meta = **found;
    if (!meta.promotion->staging) {
        return Status::NotReady("promotion of " + QuoteKey(key) + " has no DRAM allocated yet");
    }
    const Replica committed = in.promotion.Commit(meta);
    meta.AddMemory(in, committed.node, committed.offset, /*first=*/true);
    in.LruTouch(shard, meta);
    if (config_.promotion_drop_source()) {
        const int i = meta.IndexOf(
            [](const Replica& r) { return r.tier == Tier::kLocalDisk && r.pins == 0; });
        if (i >= 0) in.DropReplica(shard, meta, static_cast<size_t>(i));
    }
    return Status::Ok();
}

Status MasterStore::NotifyPromotionFailure(NodeId node, std::string_view key,
                                           Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = in_->table.ShardFor(key);
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = PromotionPipeline::Find(shard, node, key, generation);
    if (!found.ok()) {
        // Already ended (a repeated report, or cancelled meanwhile): nothing left to undo.
        if (found.status().Is(StatusCode::kNotFound)) return Status::Ok();
        return found.status();
    }
    in_->promotion.Fail(**found, PromotionOutcome::kIoFailed);
    return Status::Ok();
}

Result<ManualOutcome> MasterStore::Promote(std::string_view key, bool force) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Generation generation;
    uint64_t size;
    uint32_t estimate;
    {
        Shard& shard = in_->table.ShardFor(key);
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(std::string(key));
        if (it == shard.objects.end()) {
            return Status::NotFound("key " + QuoteKey(key) + " does not exist");
        }
        ObjectMeta& meta = it->second;
        if (meta.HasComplete(Tier::kMemory)) return ManualOutcome::kAlreadyThere;
        if (meta.promotion) return ManualOutcome::kInFlight;
        if (!meta.HasComplete(Tier::kLocalDisk)) {
            return Status::NotReady("key " + QuoteKey(key) + " is still being written");
        }
        generation = meta.generation;
        size = meta.size;
        estimate = in_->sketch.Estimate(meta.reads());
    }
    using Trigger = PromotionPipeline::Trigger;
    const Trigger trigger = force ? Trigger::kManualForce : Trigger::kManual;
    const PromotionOutcome outcome = in_->promotion.TryPromote(key, generation, size, estimate, trigger);
    switch (outcome) {
        case PromotionOutcome::kQueued: return ManualOutcome::kQueued;
        case PromotionOutcome::kDeduplicated: return ManualOutcome::kInFlight;
        case PromotionOutcome::kWatermarkGated:
            return Status::NoSpace("not promoting " + QuoteKey(key) +
                                   ": promotion_strict_watermark is on and DRAM is at its high "
                                   "watermark (use --force to promote anyway)");
        case PromotionOutcome::kNoRoom:
            return Status::NoSpace("DRAM is full and nothing evictable can make room for " +
                                   QuoteKey(key) + " (use --force to promote anyway)");
        case PromotionOutcome::kQueueFull:
            return Status::Busy("promotion queue is full (promotion_queue_limit or the byte "
                                "budget); retry later");
        default: break;
    }
    return Status::NotReady("key " + QuoteKey(key) + " changed while promoting; retry");
}

}  // namespace mooncake
