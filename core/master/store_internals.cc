// StoreInternals: what several MasterStore operations share — shards, nodes, DRAM
// allocation, object teardown — and the metric handles.
#include "core/master/store_internals.h"

#include <algorithm>
#include <cassert>

namespace mooncake {

StoreInternals::StoreInternals(Config& config_, const Clock& clock_, MetricsRegistry& registry,
                               uint32_t epoch)
    : config(config_),
      clock(clock_),
      m(registry),
      sketch(static_cast<uint64_t>(config_.promotion_sketch_width())),
      order(EvictionOrder::Make(ParseEvictionPolicy(config_.eviction_policy()))),
      gate_applies(ParseEvictionPolicy(config_.eviction_policy()) == EvictionPolicyKind::kLru),
      gate(registry, [this] { return dram.Capacity(); },
           [this] { return sketch.agings(); }),  // promotion_gate hook
      table(epoch),
      nodes(epoch),
      dram(nodes, config_),
      offload(config_, clock_, table, nodes, dram, m, *this),
      promotion(config_, clock_, table, nodes, dram, m, sketch, gate, gate_applies,
                [this](uint64_t size) { return PeekVictims(size); }, *this) {
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
                                  return static_cast<double>(promotion.bytes_in_flight());
                              });
    registry.AddCallbackGauge("disk_used_bytes", "LOCAL_DISK bytes allocated on live nodes (whole 4 KiB blocks per object)", {},
                              [this] {
                                  uint64_t total = 0;
                                  for (auto& n : nodes.All()) total += n->disk_used.load();
                                  return static_cast<double>(total);
                              });
    registry.AddCallbackGauge("disk_capacity_bytes", "LOCAL_DISK capacity of live nodes", {},
                              [this] { return static_cast<double>(nodes.DiskCapacity()); });
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
            node->disk_used.fetch_add(DiskFootprint(bytes));
            node->disk_objects.fetch_add(1);
        } else {
            node->disk_used.fetch_sub(DiskFootprint(bytes));
            node->disk_objects.fetch_sub(1);
        }
    }
}

void StoreInternals::CancelTasks(ObjectMeta& meta) {
    if (meta.promotion) promotion.Cancel(meta);
    if (meta.offload) {
        offload.End(meta);
        m.offload_cancelled.Inc();
        dram.NotifyRoom();
    }
}

void StoreInternals::EraseObject(Shard& shard, ObjectMeta& meta) {
    departed.Gone(*meta.key);  // Remove said Removed first, when it was that
    sketch.Fold(meta.reads(), meta.hash);  // a later incarnation of the key keeps its reads
    LruUnlink(shard, meta);
    UncountHardPin(shard.eviction_lists.pins.Erase(meta));
    table.Erase(shard, meta);
}

void StoreInternals::UncountHardPin(uint64_t bytes) {
    if (bytes == 0) return;
    m.hard_pinned_bytes.Set(
        static_cast<double>(hard_pinned_bytes.fetch_sub(bytes, std::memory_order_relaxed) - bytes));
}

void StoreInternals::DestroyObject(Shard& shard, ObjectMeta& meta) {
    // Replicas first, tasks second: an offload's accounting ends (OffloadPipeline::End) only once the
    // DRAM it was to free is free, so a waiting Put never sees "nothing in flight" before
    // it sees the room (see AllocateWithEviction). Unpinning a dropped source is a no-op.
    while (!meta.NoReplicas()) DropReplica(shard, meta, meta.replicas().size() - 1);
    CancelTasks(meta);
    EraseObject(shard, meta);
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
