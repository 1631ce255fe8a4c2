// What several MasterStore operations share, offered to the pipelines as ObjectLifecycle:
// the eviction order's touch and unlink, dropping a replica, tearing an object down, the
// tallies ObjectMeta's transitions count, and the views the store hands out.
#include "core/master/master_store.h"

#include <algorithm>
#include <cassert>

namespace mooncake {

bool MasterStore::HoldsReplica(NodeId node, const std::string& key, Generation generation,
                                  Tier tier, uint64_t offset) {
    Shard& shard = table_.ShardFor(key);
    MutexLock lock(shard.mu);
    auto it = shard.objects.find(key);
    if (it == shard.objects.end() || it->second.generation != generation) return false;
    return it->second.Holds(node, tier, offset);
}

void MasterStore::PushReleased(NodeId id, ReleasedRange range) {
    if (auto node = nodes_.Get(id)) node->PushReleased(std::move(range));
}

void MasterStore::PushDiskDelete(NodeId id, DiskDelete del) {
    if (auto node = nodes_.Get(id)) node->PushDiskDelete(std::move(del));
}

// ---------------- object operations ----------------

void MasterStore::LruTouch(Shard& shard, ObjectMeta& meta) {
    meta.recency = table_.NextRecency();
    if (meta.eviction.listed) {
        order_->Touch(shard.eviction_lists, meta);
    } else if (meta.HasComplete(Tier::kMemory)) {
        order_->Touch(shard.eviction_lists, meta);
        memory_objects_.fetch_add(1, std::memory_order_relaxed);
        memory_object_bytes_.fetch_add(meta.size, std::memory_order_relaxed);
    }
}

void MasterStore::ListPut(Shard& shard, ObjectMeta& meta) {
    const bool cold = meta.eviction.cold_put;
    meta.eviction.cold_put = false;  // once: a later Get makes it hot as usual
    if (!cold || meta.eviction.listed || !meta.HasComplete(Tier::kMemory)) {
        LruTouch(shard, meta);
        return;
    }
    const uint64_t recency = meta.recency;
    meta.recency = table_.NextColdRecency();
    if (!order_->TouchCold(shard.eviction_lists, meta)) {
        meta.recency = recency;
        LruTouch(shard, meta);
        return;
    }
    memory_objects_.fetch_add(1, std::memory_order_relaxed);
    memory_object_bytes_.fetch_add(meta.size, std::memory_order_relaxed);
    metrics_.put_cold_inserted.Inc();
}

void MasterStore::LruUnlink(Shard& shard, ObjectMeta& meta) {
    if (!meta.eviction.listed) return;
    order_->Remove(shard.eviction_lists, meta);
    memory_objects_.fetch_sub(1, std::memory_order_relaxed);
    memory_object_bytes_.fetch_sub(meta.size, std::memory_order_relaxed);
}

void MasterStore::DropReplica(Shard& shard, ObjectMeta& meta, size_t index) {
    Replica r = meta.TakeReplica(*this, index);
    if (r.tier == Tier::kMemory) {
        if (r.state == ReplicaState::kComplete && !meta.HasComplete(Tier::kMemory)) {
            LruUnlink(shard, meta);
        }
        PushReleased(r.node, {*meta.key, meta.generation, r.offset, meta.size});
        dram_.Free(r.node, r.offset, meta.size);
    } else {
        PushDiskDelete(r.node, {*meta.key, meta.generation});
    }
}

void MasterStore::PutsInProgress(int delta) { puts_in_progress_.fetch_add(delta); }

void MasterStore::NodeMemoryObjects(NodeId id, int delta) {
    if (auto node = nodes_.Get(id)) {
        node->memory_objects.fetch_add(static_cast<uint64_t>(static_cast<int64_t>(delta)),
                                       std::memory_order_relaxed);
    }
}

void MasterStore::NodeDiskObjects(NodeId id, int delta, uint64_t bytes) {
    if (auto node = nodes_.Get(id)) {
        if (delta > 0) {
            node->disk_used.fetch_add(DiskFootprint(bytes));
            node->disk_objects.fetch_add(1);
        } else {
            node->disk_used.fetch_sub(DiskFootprint(bytes));
            node->disk_objects.fetch_sub(1);
        }
    }
}

void MasterStore::TenantObjects(std::string_view key, Tier tier, int delta, uint64_t size) {
    const std::string_view tenant = TenantOfKey(key);
    if (tier == Tier::kMemory) {
        tenants_.CountMemory(tenant, delta,
                             delta * static_cast<int64_t>(SegmentAllocator::RoundUp(size)));
    } else {
        tenants_.CountDisk(tenant, delta, delta * static_cast<int64_t>(DiskFootprint(size)));
    }
}

void MasterStore::TenantLeaving(std::string_view key, int64_t bytes) {
    tenants_.CountLeaving(TenantOfKey(key), bytes);
}

void MasterStore::Promoted(std::string_view key) { tenants_.CountPromotion(TenantOfKey(key)); }

void MasterStore::CancelTasks(ObjectMeta& meta) {
    if (meta.promotion) promotion_.Cancel(meta);
    if (meta.offload) offload_.Cancel(meta);
}

void MasterStore::EraseObject(Shard& shard, ObjectMeta& meta) {
    departed_.Gone(*meta.key);  // Remove said Removed first, when it was that
    groups_.Leave(*meta.key);
    promotion_.ForgetObject(meta);  // a later incarnation of the key keeps its reads
    LruUnlink(shard, meta);
    UncountHardPin(shard.eviction_lists.pins.Erase(meta));
    table_.Erase(shard, meta);
}

void MasterStore::TouchGroup(std::string_view key) {
    for (const std::string& other : groups_.Others(key)) {
        Shard& shard = table_.ShardFor(other);
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(other);
        if (it != shard.objects.end() && it->second.HasComplete(Tier::kMemory)) {
            LruTouch(shard, it->second);
        }
    }
}

void MasterStore::RecountHardPin(Shard& shard, ObjectMeta& meta) {
    if (shard.eviction_lists.pins.empty()) return;  // the common case: nothing pinned here
    size_t copies = 0;
    for (const Replica& r : meta.replicas()) copies += r.tier == Tier::kMemory ? 1 : 0;
    const uint64_t bytes =
        SegmentAllocator::RoundUp(meta.size) * std::max<uint64_t>(copies, 1);
    const uint64_t before = shard.eviction_lists.pins.ResetHardBytes(meta, bytes);
    if (before == 0 || before == bytes) return;
    const uint64_t now = before < bytes
                             ? hard_pinned_bytes_.fetch_add(bytes - before) + (bytes - before)
                             : hard_pinned_bytes_.fetch_sub(before - bytes) - (before - bytes);
    metrics_.hard_pinned_bytes.Set(static_cast<double>(now));
}

void MasterStore::UncountHardPin(uint64_t bytes) {
    if (bytes == 0) return;
    metrics_.hard_pinned_bytes.Set(
        static_cast<double>(hard_pinned_bytes_.fetch_sub(bytes, std::memory_order_relaxed) - bytes));
}

void MasterStore::DestroyObject(Shard& shard, ObjectMeta& meta) {
    // Replicas first, tasks second: an offload's accounting ends (OffloadPipeline::Cancel)
    // only once the DRAM it was to free is free, so a waiting Put never sees "nothing in
    // flight" before it sees the room (see AllocateWithEviction).
    while (!meta.NoReplicas()) DropReplica(shard, meta, meta.replicas().size() - 1);
    CancelTasks(meta);
    EraseObject(shard, meta);
}

ObjectView MasterStore::MakeView(const ObjectMeta& meta, bool complete_only) const {
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
            view.replicas.push_back({r.tier, r.state, r.node, r.offset, meta.size, meta.Pins(r)});
        }
    }
    if (!complete_only && meta.promotion && meta.promotion->staging) {
        const Replica& s = *meta.promotion->staging;
        view.replicas.push_back({s.tier, s.state, s.node, s.offset, meta.size, 0});
    }
    return view;
}

void MasterStore::UpdateSketchWindow() {
    int64_t knob = config_.promotion_sketch_window();
    if (knob > 0) {
        sketch_.set_window(static_cast<uint64_t>(knob));
        return;
    }
    // Auto: 8 x how many objects DRAM holds. The sketch should remember about as many reads
    // as it takes to cycle the cache a few times: shorter and a key read once per cache
    // lifetime never reaches the threshold, longer and old popularity outlives its use.
    uint64_t objects = memory_objects_.load();
    uint64_t bytes = memory_object_bytes_.load();
    uint64_t capacity = dram_.Capacity();
    uint64_t per_object = objects > 0 ? std::max<uint64_t>(bytes / objects, 1) : 0;
    uint64_t capacity_objects = per_object > 0 ? capacity / per_object : 0;
    sketch_.set_window(std::max<uint64_t>(4096, capacity_objects * 8));
}

}  // namespace mooncake
