// OffloadPipeline (core/master/offload_pipeline.h). The master's side of the node protocol —
// handing tasks out, NotifyOffloadSuccess/Failure — is in core/master/store_offload.cc.
#include "core/master/offload_pipeline.h"

#include <cassert>

namespace mooncake {

void OffloadPipeline::Queue(ObjectMeta& meta, bool evict_after) {
    const Replica* src = meta.CompleteMemory();
    assert(src != nullptr && !meta.offload);
    Nanos now = clock_.Now();
    meta.PinSource(Tier::kMemory);
    meta.offload = OffloadState{src->node, now,
                                now + std::chrono::seconds(config_.offload_task_timeout_sec()),
                                false, evict_after, /*chosen_recency=*/meta.recency};
    dram_.OffloadQueued(evict_after ? SegmentAllocator::RoundUp(meta.size) : 0);
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
    meta.UnpinSource(Tier::kMemory);
    uint64_t bytes = SegmentAllocator::RoundUp(meta.size);
    if (meta.offload->cleaning) clean_pending_bytes_.fetch_sub(bytes);
    if (auto node = nodes_.Get(meta.offload->node)) node->offload_pending.fetch_sub(1);
    dram_.OffloadEnded(meta.offload->evict_after ? bytes : 0);
    meta.offload.reset();
    m_.offload_in_flight.Dec();
}

bool OffloadPipeline::QueueFull(NodeId id) const {
    auto node = nodes_.Get(id);
    return node && node->offload_pending.load() >=
                       static_cast<uint64_t>(config_.offload_queue_limit());
}

}  // namespace mooncake
