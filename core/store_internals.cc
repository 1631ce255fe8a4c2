// StoreInternals: what several MasterStore operations share — shards, nodes, DRAM
// allocation, object teardown — and the metric handles.
#include "core/store_internals.h"

#include <algorithm>
#include <cassert>

namespace mooncake {

namespace {

Counter& Failed(MetricsRegistry& r, const char* reason) {
    return r.GetCounter("promotion_failed_total",
                        "promotions refused or failed, by reason (the RFC's names)",
                        {{"reason", reason}});
}

}  // namespace

StoreMetrics::StoreMetrics(MetricsRegistry& r)
    : promotion_attempts(r.GetCounter(
          "promotion_attempts_total",
          "Gets of LOCAL_DISK-only objects that ran the promotion gates")),
      promotion_queued(r.GetCounter("promotion_queued_total", "promotion tasks admitted")),
      promotion_completed(r.GetCounter("promotion_completed_total",
                                       "promotions committed to MEMORY")),
      promotion_failed_admission(Failed(r, "admission_gated")),
      promotion_failed_watermark(Failed(r, "watermark_gated")),
      promotion_failed_queue_full(Failed(r, "queue_full")),
      promotion_failed_alloc(Failed(r, "alloc_failed")),
      promotion_failed_io(Failed(r, "io_failed")),
      promotion_deduplicated(r.GetCounter("promotion_deduplicated_total",
                                          "promotion triggers for a key that had a task")),
      promotion_cancelled(r.GetCounter(
          "promotion_cancelled_total",
          "promotion tasks ended by Remove, node expiry, eviction or a new generation")),
      promotion_expired(r.GetCounter("promotion_expired_total",
                                     "promotion tasks expired by the reaper")),
      promotion_retried(r.GetCounter("promotion_retried_total",
                                     "refused candidates queued on retry")),
      promotion_proactive(r.GetCounter("promotion_proactive_total",
                                       "promotions queued by the proactive scan")),
      promotion_in_flight(r.GetGauge("promotion_in_flight", "promotion tasks in flight")),
      promotion_latency(r.GetHistogram("promotion_latency_seconds",
                                       "promotion trigger to COMPLETE", LatencyBucketsSeconds())),
      offload_queued(r.GetCounter("offload_queued_total", "offload tasks queued")),
      offload_completed(r.GetCounter("offload_completed_total",
                                     "offloads whose LOCAL_DISK copy was committed")),
      offload_failed(r.GetCounter("offload_failed_total", "offloads the node reported failed")),
      offload_cancelled(r.GetCounter("offload_cancelled_total",
                                     "offload tasks ended by Remove, expiry or timeout")),
      offload_bytes(r.GetCounter("offload_bytes_total", "bytes committed to LOCAL_DISK")),
      offload_in_flight(r.GetGauge("offload_in_flight", "offload tasks in flight")),
      evictions(r.GetCounter("evictions_total", "MEMORY replicas evicted (dropped or offloaded)")),
      evicted_bytes(r.GetCounter("evicted_bytes_total", "DRAM bytes evicted")),
      gets_memory(r.GetCounter("gets_total", "GetReplicaList answers by best tier served",
                               {{"tier", "MEMORY"}})),
      gets_disk(r.GetCounter("gets_total", "GetReplicaList answers by best tier served",
                             {{"tier", "LOCAL_DISK"}})),
      get_misses(r.GetCounter("get_misses_total", "GetReplicaList of a missing key")),
      puts(r.GetCounter("puts_total", "Puts completed")),
      put_no_space(r.GetCounter("put_no_space_total", "PutStarts refused for lack of DRAM")),
      removes(r.GetCounter("removes_total", "objects removed")),
      nodes_expired(r.GetCounter("nodes_expired_total", "nodes expired by missed heartbeats")),
      nodes_replaced(r.GetCounter("nodes_replaced_total",
                                  "registrations replaced by a restarted node of the same name")) {}

StoreInternals::StoreInternals(MasterStore& store_, Config& config_, const Clock& clock_,
                               MetricsRegistry& registry, uint32_t epoch)
    : store(store_),
      config(config_),
      clock(clock_),
      m(registry),
      sketch(static_cast<uint64_t>(config_.promotion_sketch_width())),
      order(EvictionOrder::Make(ParseEvictionPolicy(config_.eviction_policy()))),
      table(epoch),
      nodes(epoch),
      dram(nodes, config_) {
    registry.AddCallbackGauge("dram_capacity_bytes", "DRAM contributed by live nodes", {},
                              [this] { return static_cast<double>(dram.Capacity()); });
    registry.AddCallbackGauge("dram_used_bytes", "DRAM allocated in live nodes' segments", {},
                              [this] { return static_cast<double>(dram.Used()); });
    registry.AddCallbackGauge("objects", "objects with at least one replica", {},
                              [this] { return static_cast<double>(table.live()); });
    registry.AddCallbackGauge("memory_objects", "objects with a COMPLETE MEMORY replica", {},
                              [this] { return static_cast<double>(memory_objects.load()); });
    registry.AddCallbackGauge("nodes", "live nodes", {},
                              [this] { return static_cast<double>(nodes.size()); });
    registry.AddCallbackGauge("promotion_in_flight_bytes", "bytes of promotions in flight", {},
                              [this] {
                                  return static_cast<double>(promotion_in_flight_bytes.load());
                              });
    registry.AddCallbackGauge("disk_used_bytes", "LOCAL_DISK bytes held by live nodes", {},
                              [this] {
                                  uint64_t total = 0;
                                  for (auto& n : nodes.All()) total += n->disk_used.load();
                                  return static_cast<double>(total);
                              });
    registry.AddCallbackGauge("disk_capacity_bytes", "LOCAL_DISK capacity of live nodes", {},
                              [this] {
                                  uint64_t total = 0;
                                  for (auto& n : nodes.All()) total += n->spec.disk_capacity;
                                  return static_cast<double>(total);
                              });
}

bool StoreInternals::HoldsReplica(NodeId node, const std::string& key, Generation generation,
                                  Tier tier, uint64_t offset) {
    Shard& shard = table.ShardFor(key);
    MutexLock lock(shard.mu);
    auto it = shard.objects.find(key);
    if (it == shard.objects.end() || it->second.generation != generation) return false;
    return it->second.Holds(node, tier, offset);
}

void StoreInternals::PushReleased(NodeId id, ReleasedRange range) {
    if (auto node = nodes.Get(id)) node->PushReleased(std::move(range));
}

void StoreInternals::PushDiskDelete(NodeId id, DiskDelete del) {
    if (auto node = nodes.Get(id)) node->PushDiskDelete(std::move(del));
}

Result<DramPool::Allocation> StoreInternals::AllocateWithEviction(uint64_t size,
                                                                  NodeId preferred, Nanos wait) {
    return dram.Allocate(size, preferred, wait,
                         [this](uint64_t bytes) { return Evict(bytes).freed; });
}

// ---------------- object operations ----------------

void StoreInternals::LruTouch(Shard& shard, ObjectMeta& meta) {
    meta.recency = table.NextRecency();
    if (meta.eviction.listed) {
        order->Touch(shard.eviction_lists, meta);
    } else if (meta.HasComplete(Tier::kMemory)) {
        order->Touch(shard.eviction_lists, meta);
        memory_objects.fetch_add(1, std::memory_order_relaxed);
        memory_object_bytes.fetch_add(meta.size, std::memory_order_relaxed);
    }
}

void StoreInternals::LruUnlink(Shard& shard, ObjectMeta& meta) {
    if (!meta.eviction.listed) return;
    order->Remove(shard.eviction_lists, meta);
    memory_objects.fetch_sub(1, std::memory_order_relaxed);
    memory_object_bytes.fetch_sub(meta.size, std::memory_order_relaxed);
}

void StoreInternals::DropReplica(Shard& shard, ObjectMeta& meta, size_t index) {
    Replica r = meta.TakeReplica(*this, index);
    if (r.tier == Tier::kMemory) {
        if (r.state == ReplicaState::kComplete && !meta.HasComplete(Tier::kMemory)) {
            LruUnlink(shard, meta);
        }
        PushReleased(r.node, {*meta.key, meta.generation, r.offset, meta.size});
        dram.Free(r.node, r.offset, meta.size);
    } else {
        PushDiskDelete(r.node, {*meta.key, meta.generation});
    }
}

void StoreInternals::PutsInProgress(int delta) { puts_in_progress.fetch_add(delta); }

void StoreInternals::NodeMemoryObjects(NodeId id, int delta) {
    if (auto node = nodes.Get(id)) {
        node->memory_objects.fetch_add(static_cast<uint64_t>(static_cast<int64_t>(delta)),
                                       std::memory_order_relaxed);
    }
}

void StoreInternals::NodeDiskObjects(NodeId id, int delta, uint64_t bytes) {
    if (auto node = nodes.Get(id)) {
        if (delta > 0) {
            node->disk_used.fetch_add(bytes);
            node->disk_objects.fetch_add(1);
        } else {
            node->disk_used.fetch_sub(bytes);
            node->disk_objects.fetch_sub(1);
        }
    }
}

void StoreInternals::EndPromotion(ObjectMeta& meta) {
    PromotionState& p = *meta.promotion;
    if (p.staging) {
        PushReleased(p.staging->node, {*meta.key, meta.generation, p.staging->offset, meta.size});
        dram.Free(p.staging->node, p.staging->offset, meta.size);
    }
    meta.UnpinSource(Tier::kLocalDisk);
    meta.promotion.reset();
    promotion_in_flight.fetch_sub(1, std::memory_order_relaxed);
    promotion_in_flight_bytes.fetch_sub(meta.size, std::memory_order_relaxed);
    m.promotion_in_flight.Dec();
}

void StoreInternals::CancelTasks(ObjectMeta& meta) {
    if (meta.promotion) {
        EndPromotion(meta);
        m.promotion_cancelled.Inc();
    }
    if (meta.offload) {
        EndOffload(meta);
        m.offload_cancelled.Inc();
        dram.NotifyRoom();
    }
}

void StoreInternals::EndOffload(ObjectMeta& meta) {
    meta.UnpinSource(Tier::kMemory);
    uint64_t bytes = SegmentAllocator::RoundUp(meta.size);
    if (meta.offload->cleaning) clean_pending_bytes.fetch_sub(bytes);
    if (auto node = nodes.Get(meta.offload->node)) node->offload_pending.fetch_sub(1);
    // Callers that free the offload's DRAM (NotifyOffloadSuccess, DestroyObject) drop it
    // before calling this (see DramPool::OffloadEnded).
    dram.OffloadEnded(meta.offload->evict_after ? bytes : 0);
    meta.offload.reset();
    m.offload_in_flight.Dec();
}

void StoreInternals::EraseObject(Shard& shard, ObjectMeta& meta) {
    LruUnlink(shard, meta);
    table.Erase(shard, meta);
}

void StoreInternals::DestroyObject(Shard& shard, ObjectMeta& meta) {
    // Replicas first, tasks second: an offload's accounting ends (EndOffload) only once the
    // DRAM it was to free is free, so a waiting Put never sees "nothing in flight" before
    // it sees the room (see AllocateWithEviction). Unpinning a dropped source is a no-op.
    while (!meta.NoReplicas()) DropReplica(shard, meta, meta.replicas().size() - 1);
    CancelTasks(meta);
    EraseObject(shard, meta);
}

void StoreInternals::QueueOffload(ObjectMeta& meta, bool evict_after) {
    const Replica* src = meta.CompleteMemory();
    assert(src != nullptr && !meta.offload);
    Nanos now = clock.Now();
    meta.PinSource(Tier::kMemory);
    meta.offload = OffloadState{src->node, now,
                                now + std::chrono::seconds(config.offload_task_timeout_sec()),
                                false, evict_after};
    dram.OffloadQueued(evict_after ? SegmentAllocator::RoundUp(meta.size) : 0);
    m.offload_in_flight.Inc();
    m.offload_queued.Inc();
    if (auto node = nodes.Get(src->node)) {
        node->offload_pending.fetch_add(1);
        node->Push(TaskQueue::kOffload, {*meta.key, meta.generation});
    }
}

bool StoreInternals::OffloadQueueFull(NodeId id) const {
    auto node = nodes.Get(id);
    return node && node->offload_pending.load() >=
                       static_cast<uint64_t>(config.offload_queue_limit());
}

ObjectView StoreInternals::MakeView(const ObjectMeta& meta, bool complete_only) const {
    ObjectView view;
    view.key = *meta.key;
    view.generation = meta.generation;
    view.size = meta.size;
    view.lease_expiry = meta.lease_expiry;
    view.recency = meta.recency;
    view.promotion_in_flight = meta.promotion.has_value();
    view.offload_in_flight = meta.offload.has_value();
    for (Tier tier : {Tier::kMemory, Tier::kLocalDisk}) {
        for (const Replica& r : meta.replicas()) {
            if (r.tier != tier) continue;
            if (complete_only && r.state != ReplicaState::kComplete) continue;
            view.replicas.push_back({r.tier, r.state, r.node, r.offset, meta.size, r.pins});
        }
    }
    if (!complete_only && meta.promotion && meta.promotion->staging) {
        const Replica& s = *meta.promotion->staging;
        view.replicas.push_back({s.tier, s.state, s.node, s.offset, meta.size, s.pins});
    }
    return view;
}

void StoreInternals::UpdateSketchWindow() {
    int64_t knob = config.promotion_sketch_window();
    if (knob > 0) {
        sketch.set_window(static_cast<uint64_t>(knob));
        return;
    }
    // Auto: 8 x how many objects DRAM holds. The sketch should remember about as many reads
    // as it takes to cycle the cache a few times: shorter and a key read once per cache
    // lifetime never reaches the threshold, longer and old popularity outlives its use.
    uint64_t objects = memory_objects.load();
    uint64_t bytes = memory_object_bytes.load();
    uint64_t capacity = dram.Capacity();
    uint64_t per_object = objects > 0 ? std::max<uint64_t>(bytes / objects, 1) : 0;
    uint64_t capacity_objects = per_object > 0 ? capacity / per_object : 0;
    sketch.set_window(std::max<uint64_t>(4096, capacity_objects * 8));
}

}  // namespace mooncake
