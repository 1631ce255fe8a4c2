// The offload pipeline: MEMORY objects get a LOCAL_DISK copy written by the node that holds
// them. Queue starts a task (its MEMORY source is pinned while it lives, ObjectMeta::
// SourcePinned; queued on the node, counted in the DRAM pool's room on its way); every task
// ends in End, counted under its outcome here: completed (Succeeded), failed (Failed),
// cancelled (Cancel). Per node at most offload_queue_limit tasks are pending.
// The holder executes a task through MasterStore's one-line calls into this class: Heartbeat
// -> writes the copy -> Succeeded, or Failed.
//
// Every method taking an ObjectMeta runs under that object's shard lock. No lock of its own:
// its counters are atomics; it takes NodeState's queue mutex and DramPool's room_mu (leaves).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/base/clock.h"
#include "core/master/dram_pool.h"
#include "core/base/knobs.h"
#include "core/master/node_table.h"
#include "core/base/master_types.h"
#include "core/base/status.h"
#include "core/master/object.h"
#include "core/master/object_lifecycle.h"
#include "core/master/object_table.h"
#include "core/master/store_metrics.h"
#include "core/master/tenant_ledger.h"

namespace mooncake {

class OffloadPipeline {
public:
    OffloadPipeline(const Config& config, const Clock& clock, ObjectTable& table,
                    const NodeTable& nodes, DramPool& dram, StoreMetrics& m,
                    ObjectLifecycle& objects, TenantLedger& tenants)
        : config_(config), clock_(clock), table_(table), nodes_(nodes), dram_(dram), m_(m),
          objects_(objects), tenants_(tenants) {}

    // ---- the holder's protocol, whole (MasterStore's calls; each takes the shard lock) ----
    // Up to `max` tasks for `node`, waiting up to `wait` while it has none.
    std::vector<OffloadTask> Heartbeat(NodeId node, size_t max, Nanos wait);
    // The disk copy is written: the object gains its LOCAL_DISK replica; an object evicted
    // while being copied drops MEMORY now (unless read since, or leased under
    // lease_blocks_eviction); waiting Puts hear of the room.
    Status Succeeded(NodeId node, std::string_view key, Generation generation);
    // The node could not write it: the task ends (an ended task is Ok: a repeated report).
    Status Failed(NodeId node, std::string_view key, Generation generation);
    // An operator's offload: a disk copy, MEMORY kept.
    Result<ManualOutcome> Manual(std::string_view key);

    // ---- the task's steps (callers hold the object's shard lock) ----
    // A task for `meta`'s COMPLETE MEMORY replica (none in flight). evict_after: drop MEMORY
    // once the disk copy exists (offload on evict).
    void Queue(ObjectMeta& meta, bool evict_after);
    // Eviction took an object whose copy is in flight (meta.CopyInFlight()): its MEMORY goes
    // when the copy lands, and that room counts as on its way (as Queue's evict_after).
    void EvictWhenCopied(ObjectMeta& meta);
    // The task just queued is the watermark round's (counted in clean_pending_bytes).
    void MarkCleaning(ObjectMeta& meta, uint64_t bytes);
    // End, counted as cancelled (Remove, teardown, node gone, expired); waiting Puts
    // re-evaluate, as this DRAM will not free by itself.
    void Cancel(ObjectMeta& meta);
    // Cancel when the task's deadline (offload_task_timeout_sec) has passed. True if it ended.
    bool ExpireIfDue(ObjectMeta& meta, Nanos now);
    // The node has offload_queue_limit offload tasks in flight already: queue no more for it
    // (issue 3: per-node queues are bounded). Callers skip, defer or answer Busy.
    bool QueueFull(NodeId node) const;
    // MEMORY bytes queued for a disk copy only (watermark cleaning).
    uint64_t clean_pending_bytes() const { return clean_pending_bytes_.load(); }

private:
    // The offload task of (key, generation) that `node` may act on.
    static Result<ObjectMeta*> Find(Shard& shard, NodeId node, std::string_view key,
                                    Generation generation) MC_REQUIRES(shard.mu);
    // Ends the task's accounting (the task state, and with it the source's pin; pending
    // bytes, gauges). Callers that free its DRAM (offload success) do so first (see
    // DramPool::OffloadEnded).
    void End(ObjectMeta& meta);

    const Config& config_;
    const Clock& clock_;
    ObjectTable& table_;
    const NodeTable& nodes_;
    DramPool& dram_;
    StoreMetrics& m_;
    ObjectLifecycle& objects_;
    // Bytes chosen for eviction count as leaving their tenant's MEMORY until the task ends.
    TenantLedger& tenants_;
    std::atomic<uint64_t> clean_pending_bytes_{0};
};

}  // namespace mooncake
