// The inside of MasterStore: the parts that own their state and lock — ObjectTable (shards),
// NodeTable (nodes, their queues and segments), DramPool, EvictionOrder, OffloadPipeline,
// PromotionPipeline — wired together, plus what is still shared between the store_*.cc
// operations: the eviction engine, object teardown and the metric handles. The object
// operations the pipelines need it offers them as ObjectLifecycle (object_lifecycle.h).
// Only core/master/store_*.cc and core/master/master_store.cc include this.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/master/admission_sketch.h"
#include "core/master/adaptive_policy.h"
#include "core/master/eviction_order.h"
#include "core/master/departed_objects.h"
#include "core/master/removal_journal.h"
#include "core/master/master_store.h"
#include "core/base/metrics.h"
#include "core/master/offload_pipeline.h"
#include "core/master/promotion_pipeline.h"
#include "core/master/store_metrics.h"
#include "core/base/mutex.h"
#include "core/master/node_table.h"
#include "core/master/object_lifecycle.h"
#include "core/master/object_table.h"
#include "core/master/dram_pool.h"
#include "core/master/object.h"
#include "core/base/segment_allocator.h"
#include "core/base/thread_annotations.h"

namespace mooncake {

class StoreInternals final : public ObjectTallies, public ObjectLifecycle {
public:
    StoreInternals(Config& config, const Clock& clock, MetricsRegistry& registry, uint32_t epoch);

    Config& config;
    const Clock& clock;
    StoreMetrics m;
    AdmissionSketch sketch;
    std::unique_ptr<EvictionOrder> order;  // the eviction_policy knob, read once at start
    // promotion_gate=adaptive (core/master/adaptive_policy.h). Its miniature simulations model LRU,
    // so it judges only with that eviction order (else the fixed victim comparison does).
    const bool gate_applies;
    AdaptivePromotionGate gate;

    ObjectTable table;

    // ---- nodes ----
    NodeTable nodes;
    DepartedObjects departed;  // what left with a node and may come back with it
    RemovalJournal removals;   // HA: removals made durable before they are acknowledged
    void PushReleased(NodeId node, ReleasedRange range);
    // Whether `node` holds a replica of (key, generation) in `tier` (MEMORY: at `offset`),
    // in any state, including a promotion's staging range. Takes the key's shard lock.
    bool HoldsReplica(NodeId node, const std::string& key, Generation generation, Tier tier,
                      uint64_t offset);
    void PushDiskDelete(NodeId node, DiskDelete del);

    // ---- DRAM ----
    DramPool dram;
    OffloadPipeline offload;
    PromotionPipeline promotion;  // after everything it is handed
    // Allocates, evicting for room (Evict); see DramPool::Allocate.
    Result<DramPool::Allocation> AllocateWithEviction(uint64_t size, NodeId preferred,
                                                      Nanos wait) override;
    std::atomic<int64_t> puts_in_progress{0};  // PROCESSING MEMORY replicas of unended Puts
    std::atomic<uint64_t> memory_objects{0};  // objects with a COMPLETE MEMORY replica
    std::atomic<uint64_t> memory_object_bytes{0};
    // DRAM bytes of hard-pinned objects (core/master/pin_table.h), reserved at PutStart.
    std::atomic<uint64_t> hard_pinned_bytes{0};
    void UncountHardPin(uint64_t bytes);

    // ---- eviction ----
    Mutex eviction_mu;  // one evictor at a time, so rounds do not over-evict
    struct EvictResult {
        uint64_t freed = 0;    // DRAM freed now
        uint64_t pending = 0;  // DRAM that frees when queued offloads finish
        size_t victims = 0;
    };
    // Evicts about `target` bytes, coldest first, never pinned objects (nor leased ones, under
    // the lease_blocks_eviction knob).
    EvictResult Evict(uint64_t target);
    // The lease_blocks_eviction knob's rule, read once per eviction round.
    LeaseRule lease_rule() const override {
        return config.lease_blocks_eviction() ? LeaseRule::kLeaseBlocksEviction
                                              : LeaseRule::kReadsOnly;
    }
    using VictimInfo = mooncake::VictimInfo;  // core/master/promotion_pipeline.h
    // The objects an allocation of `size` would displace, without touching them.
    VictimInfo PeekVictims(uint64_t size);
    // Queues LOCAL_DISK copies (MEMORY kept) for the coldest `target` bytes lacking one.
    size_t Clean(uint64_t target);
    // When a clean round may be skipped: the clean share is used up only by allocations
    // dropping its copies, so a round that found it whole need not run again until new data
    // took a sixteenth of it, the round was held back (queues full, copies pinned), the share
    // changed, or a second passed (reads reorder the cold end).
    struct CleanGate {
        uint64_t target = 0;
        uint64_t allocated_mark = 0;  // dram.allocated_bytes() at the last round
        Nanos next_due{0};
        bool held_back = true;
    };
    CleanGate clean_gate MC_GUARDED_BY(eviction_mu);

    // ---- shared object operations (callers hold the shard lock) ----
    // A fresh recency, and (with a COMPLETE MEMORY replica) most recent in the eviction order.
    void LruTouch(Shard& shard, ObjectMeta& meta) override MC_REQUIRES(shard.mu);
    // Out of the eviction order (its last COMPLETE MEMORY replica went).
    void LruUnlink(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // Drops the replica at `index`, freeing DRAM or telling the node to delete its disk record.
    void DropReplica(Shard& shard, ObjectMeta& meta, size_t index) override MC_REQUIRES(shard.mu);
    ObjectTallies& tallies() override { return *this; }
    // Ends the object's tasks (counted as cancelled), freeing staging and unpinning.
    void CancelTasks(ObjectMeta& meta);
    // Removes the object from its shard (after CancelTasks + dropping every replica).
    void EraseObject(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // Drops everything the object holds and erases it.
    void DestroyObject(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // ObjectTallies: what ObjectMeta's transitions count.
    void PutsInProgress(int delta) override;
    void NodeMemoryObjects(NodeId node, int delta) override;
    void NodeDiskObjects(NodeId node, int delta, uint64_t bytes) override;
    ObjectView MakeView(const ObjectMeta& meta, bool complete_only) const;

    // ---- ticks ----
    Nanos next_reap{0};
    Nanos reap_shortest_timeout{Nanos::max()};  // ReapExpired's, at its last pass
    Nanos next_proactive{0};
    void UpdateSketchWindow();
};

}  // namespace mooncake
