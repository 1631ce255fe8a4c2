// Nodes: registration, liveness, expiry, and what a (re)started node tells us of its disk.
#include "core/store_internals.h"

namespace mooncake {

Result<NodeId> MasterStore::RegisterNode(const NodeSpec& spec) {
    if (spec.name.empty()) return Status::InvalidArgument("node name is empty");
    if (spec.segment_capacity % kSegmentAlignment != 0) {
        return Status::InvalidArgument("segment capacity must be a multiple of 4 KiB");
    }
    NodeId id;
    {
        std::unique_lock lock(in_->nodes_mu);
        for (auto& [other_id, node] : in_->nodes) {
            if (node->spec.name == spec.name) {
                return Status::InvalidArgument("a live node is already named '" + spec.name +
                                               "' (id " + std::to_string(other_id) + ")");
            }
        }
        id = in_->next_node_id++;
        auto node = std::make_shared<NodeState>(id, spec);
        node->last_heartbeat_ns.store(clock_.Now().count());
        in_->nodes.emplace(id, std::move(node));
    }
    in_->NotifyRoom();
    return id;
}

Result<HeartbeatReply> MasterStore::Heartbeat(NodeId node_id) {
    auto node = in_->GetNode(node_id);
    if (!node) {
        return Status::UnknownNode("node " + std::to_string(node_id) +
                                   " is not registered (expired?); register again");
    }
    node->last_heartbeat_ns.store(clock_.Now().count());
    HeartbeatReply reply;
    std::lock_guard lock(node->queue_mu);
    std::swap(reply, node->pending);
    return reply;
}

namespace {

// Everything the node held goes: replicas dropped (objects left with none removed), tasks it
// was doing or staging into cancelled, its queues emptied.
void CleanupNode(StoreInternals& in, const std::shared_ptr<NodeState>& node) {
    const NodeId id = node->id;
    {
        std::lock_guard lock(node->queue_mu);
        node->gone = true;
        node->offload_queue.clear();
        node->promotion_queue.clear();
        node->work_cv.notify_all();
    }
    for (Shard& shard : in.shards) {
        std::lock_guard lock(shard.mu);
        std::vector<ObjectMeta*> emptied;
        for (auto& [key, meta] : shard.objects) {
            bool touches = meta.offload && meta.offload->node == id;
            if (meta.promotion && (meta.promotion->holder == id ||
                                   (meta.promotion->staging &&
                                    meta.promotion->staging->node == id))) {
                touches = true;
            }
            for (const Replica& r : meta.replicas) touches = touches || r.node == id;
            if (!touches) continue;
            in.CancelTasks(meta);
            for (size_t i = meta.replicas.size(); i-- > 0;) {
                if (meta.replicas[i].node == id) in.DropReplica(shard, meta, i);
            }
            if (meta.replicas.empty() ||
                (!meta.HasComplete(Tier::kMemory) && !meta.HasComplete(Tier::kLocalDisk))) {
                emptied.push_back(&meta);
            }
        }
        for (ObjectMeta* meta : emptied) in.DestroyObject(shard, *meta);
    }
}

Status RemoveNode(StoreInternals& in, NodeId id) {
    std::shared_ptr<NodeState> node;
    {
        std::unique_lock lock(in.nodes_mu);
        auto it = in.nodes.find(id);
        if (it == in.nodes.end()) return Status::UnknownNode("node " + std::to_string(id));
        node = it->second;
        in.nodes.erase(it);
    }
    CleanupNode(in, node);
    in.NotifyRoom();
    return Status::Ok();
}

}  // namespace

Status MasterStore::UnregisterNode(NodeId node) { return RemoveNode(*in_, node); }

size_t MasterStore::ExpireNodes() {
    Nanos cutoff = clock_.Now() - std::chrono::seconds(config_.client_live_ttl_sec());
    std::vector<NodeId> expired;
    for (auto& node : in_->AllNodes()) {
        if (Nanos(node->last_heartbeat_ns.load()) < cutoff) expired.push_back(node->id);
    }
    for (NodeId id : expired) {
        if (RemoveNode(*in_, id).ok()) in_->m.nodes_expired.Inc();
    }
    return expired.size();
}

Result<std::vector<Status>> MasterStore::RegisterDiskReplicas(
    NodeId node_id, std::span<const DiskReplicaReport> reports) {
    auto node = in_->GetNode(node_id);
    if (!node) return Status::UnknownNode("node " + std::to_string(node_id));
    if (!node->has_disk()) return Status::InvalidArgument("node has no LOCAL_DISK tier");
    std::vector<Status> out;
    out.reserve(reports.size());
    for (const DiskReplicaReport& report : reports) {
        Status valid = ValidateKey(report.key);
        if (!valid.ok()) {
            out.push_back(valid);
            continue;
        }
        if (report.size == 0 || report.generation == kNoGeneration) {
            out.push_back(Status::InvalidArgument("size and generation must be non-zero"));
            continue;
        }
        Shard& shard = in_->ShardFor(report.key);
        std::lock_guard lock(shard.mu);
        auto [it, inserted] = shard.objects.try_emplace(report.key);
        ObjectMeta& meta = it->second;
        if (inserted) {  // unknown to this master (it restarted): adopt as LOCAL_DISK-only
            meta.key = &it->first;
            meta.generation = report.generation;
            meta.size = report.size;
            meta.hash = AdmissionSketch::Hash(report.key);
            in_->live_objects.fetch_add(1, std::memory_order_relaxed);
        } else if (meta.generation != report.generation || meta.size != report.size) {
            out.push_back(Status::StaleGeneration(
                "the master holds another incarnation of " + QuoteKey(report.key) +
                "; delete this copy"));
            continue;
        }
        const Replica* disk = meta.Find(Tier::kLocalDisk, ReplicaState::kComplete);
        if (disk != nullptr && disk->node != node_id) {
            out.push_back(Status::AlreadyExists(QuoteKey(report.key) +
                                                " is already on another node's disk"));
            continue;
        }
        if (disk == nullptr) {
            meta.replicas.push_back({Tier::kLocalDisk, ReplicaState::kComplete, node_id, 0, 0});
            node->disk_used.fetch_add(meta.size);
            node->disk_objects.fetch_add(1);
        }
        out.push_back(Status::Ok());
    }
    return out;
}

Status MasterStore::ReportDiskReplicaDropped(NodeId node_id, std::string_view key,
                                             Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    if (!in_->GetNode(node_id)) return Status::UnknownNode("node " + std::to_string(node_id));
    Shard& shard = in_->ShardFor(key);
    std::lock_guard lock(shard.mu);
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end() || it->second.generation != generation) {
        return Status::Ok();  // already gone from the master's view
    }
    ObjectMeta& meta = it->second;
    for (size_t i = 0; i < meta.replicas.size(); ++i) {
        const Replica& r = meta.replicas[i];
        if (r.tier != Tier::kLocalDisk || r.node != node_id) continue;
        // The bytes are gone whatever we think: a promotion reading them cannot succeed.
        if (meta.promotion && meta.promotion->holder == node_id) {
            in_->EndPromotion(meta);
            in_->m.promotion_cancelled.Inc();
        }
        Replica dropped = meta.replicas[i];
        meta.replicas.erase(meta.replicas.begin() + static_cast<ptrdiff_t>(i));
        if (auto node = in_->GetNode(node_id)) {
            node->disk_used.fetch_sub(meta.size);
            node->disk_objects.fetch_sub(1);
        }
        (void)dropped;  // the node deleted the record itself: no DiskDelete to send back
        break;
    }
    if (!meta.HasComplete(Tier::kMemory) && !meta.HasComplete(Tier::kLocalDisk)) {
        in_->DestroyObject(shard, meta);
    }
    return Status::Ok();
}

}  // namespace mooncake
