// OffloadPipeline (core/master/offload_pipeline.h): a task's accounting, and the master's side
// of the node protocol (handing tasks out, the copy's success or failure, a manual offload).
#include "core/master/offload_pipeline.h"

#include <cassert>

#include "core/master/task_delivery.h"

namespace mooncake {

namespace {

// The node holding an object's offload task, if it has one (FindTask's `holder`).
std::optional<NodeId> OffloadHolder(const ObjectMeta& meta) {
    if (!meta.offload) return std::nullopt;
    return meta.offload->node;
}

}  // namespace

void OffloadPipeline::Queue(ObjectMeta& meta, bool evict_after) {
    const Replica* src = meta.CompleteMemory();
    assert(src != nullptr && !meta.offload);
    Nanos now = clock_.Now();
    meta.offload = OffloadState{src->node, now,
                                now + std::chrono::seconds(config_.offload_task_timeout_sec()),
                                false, evict_after, /*chosen_recency=*/meta.recency};
    const uint64_t evict_bytes = evict_after ? SegmentAllocator::RoundUp(meta.size) : 0;
    dram_.OffloadQueued(evict_bytes);
    if (evict_bytes) objects_.tallies().TenantLeaving(*meta.key, static_cast<int64_t>(evict_bytes));
    m_.offload_in_flight.Inc();
    m_.offload_queued.Inc();
    if (auto node = nodes_.Get(src->node)) {
        node->offload_pending.fetch_add(1);
        node->Push(TaskQueue::kOffload, {*meta.key, meta.generation});
    }
}

void OffloadPipeline::EvictWhenCopied(ObjectMeta& meta) {
    assert(meta.CopyInFlight());
    const uint64_t bytes = SegmentAllocator::RoundUp(meta.size);
    meta.offload->evict_after = true;
    meta.offload->chosen_recency = meta.recency;
    dram_.AddEvictPending(bytes);
    objects_.tallies().TenantLeaving(*meta.key, static_cast<int64_t>(bytes));
    // A watermark clean's copy taken by eviction no longer keeps DRAM clean: the round may
    // write ahead another.
    if (meta.offload->cleaning) {
        meta.offload->cleaning = false;
        clean_pending_bytes_.fetch_sub(bytes);
    }
}

void OffloadPipeline::MarkCleaning(ObjectMeta& meta, uint64_t bytes) {
    meta.offload->cleaning = true;
    clean_pending_bytes_.fetch_add(bytes);
}

void OffloadPipeline::End(ObjectMeta& meta) {
    uint64_t bytes = SegmentAllocator::RoundUp(meta.size);
    if (meta.offload->cleaning) clean_pending_bytes_.fetch_sub(bytes);
    if (auto node = nodes_.Get(meta.offload->node)) node->offload_pending.fetch_sub(1);
    dram_.OffloadEnded(meta.offload->evict_after ? bytes : 0);
    if (meta.offload->evict_after) {
        objects_.tallies().TenantLeaving(*meta.key, -static_cast<int64_t>(bytes));
    }
    meta.offload.reset();
    m_.offload_in_flight.Dec();
}

void OffloadPipeline::Cancel(ObjectMeta& meta) {
    End(meta);
    m_.offload_cancelled.Inc();
    dram_.NotifyRoom();
}

bool OffloadPipeline::ExpireIfDue(ObjectMeta& meta, Nanos now) {
    if (!meta.offload || meta.offload->deadline >= now) return false;
    Cancel(meta);
    return true;
}

bool OffloadPipeline::QueueFull(NodeId id) const {
    auto node = nodes_.Get(id);
    return node && node->offload_pending.load() >=
                       static_cast<uint64_t>(config_.offload_queue_limit());
}

// ---- the holder's protocol, whole ----

std::vector<OffloadTask> OffloadPipeline::Heartbeat(NodeId node_id, size_t max, Nanos wait) {
    return DeliverTasks<OffloadTask>(
        nodes_, table_, node_id, TaskQueue::kOffload, max, wait,
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

Result<ObjectMeta*> OffloadPipeline::Find(Shard& shard, NodeId node, std::string_view key,
                                          Generation generation) {
    return FindTask(shard, node, key, generation, "offload", "", OffloadHolder);
}

Status OffloadPipeline::Succeeded(NodeId node_id, std::string_view key, Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = table_.ShardFor(key);
    {
        MutexLock lock(shard.mu);
        Result<ObjectMeta*> found = Find(shard, node_id, key, generation);
        if (!found.ok()) return found.status();
        ObjectMeta& meta = **found;
        if (!meta.HasComplete(Tier::kLocalDisk)) meta.AddDisk(objects_.tallies(), node_id);
        m_.offload_completed.Inc();
        m_.offload_bytes.Inc(static_cast<double>(meta.size));
        // Evicted while being written: drop MEMORY now — unless it was read since eviction
        // chose it (hot again: it stays, clean, and the next eviction round that finds it
        // coldest drops it at no cost) or, under lease_blocks_eviction, is leased.
        // The drop comes before OffloadPipeline::End (the source's pin is this task's), so the
        // task's accounting ends only once its room is free: a waiting Put that sees no
        // offload in flight also sees the room (see AllocateWithEviction).
        if (meta.DropAfterCopy(clock_.Now(), objects_.lease_rule())) {
            objects_.DropMemoryCopies(shard, meta);
        }
        End(meta);
    }
    dram_.NotifyRoom();
    return Status::Ok();
}

Status OffloadPipeline::Failed(NodeId node_id, std::string_view key, Generation generation) {
    Result<bool> ended = EndFailedTask(table_, node_id, key, generation, "offload", OffloadHolder,
                                       [&](ObjectMeta& meta) {
                                           End(meta);
                                           m_.offload_failed.Inc();
                                       });
    // Waiting Puts re-evaluate: this DRAM will not free by itself.
    if (ended.ok() && *ended) dram_.NotifyRoom();
    return ended.status();
}

Result<ManualOutcome> OffloadPipeline::Manual(std::string_view key) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = table_.ShardFor(key);
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
    auto node = nodes_.Get(mem->node);
    if (!node || !node->has_disk()) {
        return Status::InvalidArgument("the node holding " + QuoteKey(key) +
                                       " has no LOCAL_DISK tier");
    }
    if (QueueFull(node->id)) {
        return Status::Busy("node " + std::to_string(node->id) +
                            " has offload_queue_limit offloads pending; retry later");
    }
    Queue(meta, /*evict_after=*/false);
    return ManualOutcome::kQueued;
}

}  // namespace mooncake
