// ObjectMeta: the phase, the predicates and the transitions (the table is in core/master/object.h).
#include "core/master/object.h"

#include <algorithm>

namespace mooncake {

std::string_view PhaseName(Phase phase) {
    switch (phase) {
        case Phase::kEmpty: return "empty";
        case Phase::kWriting: return "writing";
        case Phase::kMemoryOnly: return "memory_only";
        case Phase::kBothTiers: return "both_tiers";
        case Phase::kDiskOnly: return "disk_only";
    }
    return "unknown";
}

Phase ObjectMeta::phase() const {
    const bool memory = HasComplete(Tier::kMemory);
    const bool disk = HasComplete(Tier::kLocalDisk);
    if (memory) return disk ? Phase::kBothTiers : Phase::kMemoryOnly;
    if (disk) return Phase::kDiskOnly;
    if (Find(Tier::kMemory, ReplicaState::kProcessing)) return Phase::kWriting;
    return Phase::kEmpty;
}

bool ObjectMeta::Evictable(Nanos now, LeaseRule rule) const {
    const Replica* mem = CompleteMemory();
    if (mem == nullptr || LeaseBlocksEviction(now, rule)) return false;
    // An offload's source is pinned: only a copy written ahead may be taken (its MEMORY
    // drops when the copy lands).
    return !offload || WrittenAhead();
}

bool ObjectMeta::Touches(NodeId node) const {
    if (offload && offload->node == node) return true;
    if (promotion && (promotion->holder == node ||
                      (promotion->staging && promotion->staging->node == node))) {
        return true;
    }
    return std::any_of(replicas_.begin(), replicas_.end(),
                       [&](const Replica& r) { return r.node == node; });
}

bool ObjectMeta::Holds(NodeId node, Tier tier, uint64_t offset) const {
    auto same = [&](const Replica& r) {
        return r.tier == tier && r.node == node && (tier != Tier::kMemory || r.offset == offset);
    };
    if (std::any_of(replicas_.begin(), replicas_.end(), same)) return true;
    return promotion && promotion->staging && same(*promotion->staging);
}

bool ObjectMeta::HasMemoryReplica() const {
    if (promotion && promotion->staging) return true;
    return std::any_of(replicas_.begin(), replicas_.end(),
                       [](const Replica& r) { return r.tier == Tier::kMemory; });
}

const Replica* ObjectMeta::Find(Tier tier, ReplicaState state) const {
    for (const Replica& r : replicas_) {
        if (r.tier == tier && r.state == state) return &r;
    }
    return nullptr;
}

void ObjectMeta::StartPut(ObjectTallies& t, NodeId node, uint64_t offset) {
    replicas_.push_back({Tier::kMemory, ReplicaState::kProcessing, node, offset});
    t.PutsInProgress(+1);
    t.TenantObjects(key ? std::string_view(*key) : std::string_view(), Tier::kMemory, +1, size);
}

const Replica* ObjectMeta::EndPut(ObjectTallies& t) {
    const Replica* first = nullptr;
    for (Replica& r : replicas_) {
        if (r.tier != Tier::kMemory || r.state != ReplicaState::kProcessing) continue;
        r.state = ReplicaState::kComplete;
        t.PutsInProgress(-1);
        t.NodeMemoryObjects(r.node, +1);
        if (first == nullptr) first = &r;
    }
    return first;
}

size_t ObjectMeta::MemoryCopies() const {
    return static_cast<size_t>(std::count_if(replicas_.begin(), replicas_.end(),
                                             [](const Replica& r) { return r.IsCompleteMemory(); }));
}

void ObjectMeta::AddDisk(ObjectTallies& t, NodeId node) {
    replicas_.push_back({Tier::kLocalDisk, ReplicaState::kComplete, node, 0});
    t.NodeDiskObjects(node, +1, size);
    t.TenantObjects(key ? std::string_view(*key) : std::string_view(), Tier::kLocalDisk, +1, size);
}

void ObjectMeta::AddMemory(ObjectTallies& t, NodeId node, uint64_t offset, bool first) {
    Replica r{Tier::kMemory, ReplicaState::kComplete, node, offset};
    if (first) {
        replicas_.insert_front(r);
    } else {
        replicas_.push_back(r);
    }
    t.NodeMemoryObjects(node, +1);
    t.TenantObjects(key ? std::string_view(*key) : std::string_view(), Tier::kMemory, +1, size);
}

Replica ObjectMeta::TakeReplica(ObjectTallies& t, size_t index) {
    Replica r = replicas_[index];
    replicas_.erase(index);
    if (r.tier == Tier::kMemory) {
        if (r.state == ReplicaState::kProcessing) t.PutsInProgress(-1);
        if (r.state == ReplicaState::kComplete) t.NodeMemoryObjects(r.node, -1);
        t.TenantObjects(key ? std::string_view(*key) : std::string_view(), Tier::kMemory, -1, size);
    } else if (r.state == ReplicaState::kComplete) {
        t.NodeDiskObjects(r.node, -1, size);
        t.TenantObjects(key ? std::string_view(*key) : std::string_view(), Tier::kLocalDisk, -1, size);
    }
    return r;
}

}  // namespace mooncake
