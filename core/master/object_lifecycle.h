// What the task pipelines (promotion, offload) need done to an object beyond their own task
// state: the store owns these, because they touch what every operation shares — the eviction
// order, DRAM with eviction behind it, the nodes' release queues and the tallies. MasterStore
// implements it (core/master/store_lifecycle.cc); a pipeline holds it, so a task's
// whole life is written in the pipeline, not half in the store.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/base/clock.h"
#include "core/base/status.h"
#include "core/base/thread_annotations.h"
#include "core/base/types.h"
#include "core/master/dram_pool.h"
#include "core/master/object.h"
#include "core/master/object_table.h"

namespace mooncake {

class ObjectLifecycle {
public:
    virtual ~ObjectLifecycle() = default;

    // What ObjectMeta's tier transitions count (AddMemory and the like take it).
    virtual ObjectTallies& tallies() = 0;
    // Allocates DRAM, evicting colder objects for room; see DramPool::Allocate. Takes other
    // shards' locks: call without any.
    // The room is for `key`'s object: its tenant's quota is charged and kept (tenants).
    virtual Result<DramPool::Allocation> AllocateWithEviction(std::string_view key,
                                                              uint64_t size, NodeId preferred,
                                                              Nanos wait) = 0;
    // A promotion of `key`'s object committed (its tenant's figures).
    virtual void Promoted(std::string_view key) = 0;
    // A fresh recency, and (with a COMPLETE MEMORY replica) most recent in the eviction order.
    virtual void LruTouch(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu) = 0;
    // The lease_blocks_eviction knob's rule, read once per use.
    virtual LeaseRule lease_rule() const = 0;
    // Drops the replica at `index`, freeing DRAM or telling the node to delete its disk record.
    virtual void DropReplica(Shard& shard, ObjectMeta& meta, size_t index)
        MC_REQUIRES(shard.mu) = 0;
    // Drops every COMPLETE MEMORY replica: the object leaves MEMORY, all its copies with it.
    void DropMemoryCopies(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu) {
        for (int i; (i = meta.IndexOf([](const Replica& r) { return r.IsCompleteMemory(); })) >= 0;) {
            DropReplica(shard, meta, static_cast<size_t>(i));
        }
    }
};

}  // namespace mooncake
