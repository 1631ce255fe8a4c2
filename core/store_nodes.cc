// Nodes: registration, liveness, expiry, dropped disk records. What a node that registers
// again reports holding is in store_rejoin.cc.
#include "core/store_internals.h"

namespace mooncake {

namespace {
void CleanupNode(StoreInternals& in, const std::shared_ptr<NodeState>& node);
constexpr size_t kSupersededPerName = 8;
}  // namespace

// A name is held by one live registration. Under a live name:
//   - the same non-zero incarnation (the node retries after a lost reply) gets that
//     registration back, id unchanged;
//   - a different non-zero incarnation is a restarted (or a second) process: it replaces the
//     old registration at once, which is cleaned up exactly as expiry does (its replicas
//     dropped, tasks cancelled, what left with it remembered in `departed`); the old
//     incarnation is refused from then on (StaleGeneration) and gets UnknownNode at its next
//     heartbeat, so the newest process wins and the two never take turns;
//   - incarnation 0 on either side (an older node): refused until the old one expires.
Result<NodeId> MasterStore::RegisterNode(const NodeSpec& spec) {
    if (spec.name.empty()) return Status::InvalidArgument("node name is empty");
    if (spec.segment_capacity % kSegmentAlignment != 0) {
        return Status::InvalidArgument("segment capacity must be a multiple of 4 KiB");
    }
    NodeId id;
    std::shared_ptr<NodeState> replaced;
    {
        WriterLock lock(in_->nodes_mu);
        if (spec.incarnation != 0) {
            auto sup = in_->superseded.find(spec.name);
            if (sup != in_->superseded.end()) {
                for (uint64_t inc : sup->second) {
                    if (inc == spec.incarnation) {
                        return Status::StaleGeneration(
                            "node '" + spec.name +
                            "': this process was replaced by a newer one of the same name");
                    }
                }
            }
        }
        for (auto& [other_id, node] : in_->nodes) {
            if (node->spec.name != spec.name) continue;
            if (spec.incarnation != 0 && node->spec.incarnation == spec.incarnation) {
                node->last_heartbeat_ns.store(clock_.Now().count());
                return other_id;  // our earlier reply was lost
            }
            if (spec.incarnation == 0 || node->spec.incarnation == 0) {
                return Status::InvalidArgument("a live node is already named '" + spec.name +
                                               "' (id " + std::to_string(other_id) + ")");
            }
            replaced = node;
            break;
        }
        if (replaced) {
            in_->nodes.erase(replaced->id);
            auto& list = in_->superseded[spec.name];
            list.push_back(replaced->spec.incarnation);
            if (list.size() > kSupersededPerName) list.pop_front();
        }
        id = in_->next_node_id++;
        auto node = std::make_shared<NodeState>(id, spec);
        node->first_of_name = in_->names_seen.insert(spec.name).second;
        node->last_heartbeat_ns.store(clock_.Now().count());
        in_->nodes.emplace(id, std::move(node));
    }
    if (replaced) {
        // Done before this call returns, so the new process's reports (which need its id)
        // find what the old one held already let go.
        CleanupNode(*in_, replaced);
        in_->m.nodes_replaced.Inc();
    }
    in_->NotifyRoom();
    return id;
}

Result<HeartbeatReply> MasterStore::Heartbeat(NodeId node_id, uint64_t applied) {
    auto node = in_->GetNode(node_id);
    if (!node) {
        return Status::UnknownNode("node " + std::to_string(node_id) +
                                   " is not registered (expired?); register again");
    }
    node->last_heartbeat_ns.store(clock_.Now().count());
    HeartbeatReply reply;
    {
        MutexLock lock(node->queue_mu);
        HeartbeatReply& sent = node->unconfirmed;
        if (applied == kAppliedAll || applied == sent.seq) sent = HeartbeatReply{};
        // Anything else means the node never got (or never acted on) the last reply: what
        // it held goes again, with whatever is new.
        auto& fresh = node->pending;
        sent.released.insert(sent.released.end(), std::make_move_iterator(fresh.released.begin()),
                             std::make_move_iterator(fresh.released.end()));
        sent.disk_deletes.insert(sent.disk_deletes.end(),
                                 std::make_move_iterator(fresh.disk_deletes.begin()),
                                 std::make_move_iterator(fresh.disk_deletes.end()));
        fresh = HeartbeatReply{};
        sent.seq = sent.empty() ? 0 : in_->next_reply_seq.fetch_add(1, std::memory_order_relaxed);
        reply = sent;
    }
    // The same object (key and generation) may be back where it was let go of since: a
    // promotion into the very range released, an offload rewriting the record deleted. The
    // node's record is the new replica then, and acting on the old request would destroy it.
    std::erase_if(reply.released, [&](const ReleasedRange& r) {
        return in_->HoldsReplica(node_id, r.key, r.generation, Tier::kMemory, r.offset);
    });
    std::erase_if(reply.disk_deletes, [&](const DiskDelete& d) {
        return in_->HoldsReplica(node_id, d.key, d.generation, Tier::kLocalDisk, 0);
    });
    return reply;
}

namespace {

// Everything the node held goes: replicas dropped (objects left with none removed), tasks it
// was doing or staging into cancelled, its queues emptied.
void CleanupNode(StoreInternals& in, const std::shared_ptr<NodeState>& node) {
    const NodeId id = node->id;
    {
        MutexLock lock(node->queue_mu);
        node->gone = true;
        node->offload_queue.clear();
        node->promotion_queue.clear();
        node->work_cv.NotifyAll();
    }
    for (Shard& shard : in.shards) {
        MutexLock lock(shard.mu);
        std::vector<ObjectMeta*> emptied;
        for (auto& [key, meta] : shard.objects) {
            if (!meta.Touches(id)) continue;
            in.CancelTasks(meta);
            bool held_complete = false;
            for (size_t i = meta.replicas().size(); i-- > 0;) {
                const Replica& r = meta.replicas()[i];
                if (r.node != id) continue;
                held_complete = held_complete || r.state == ReplicaState::kComplete;
                in.DropReplica(shard, meta, i);
            }
            if (!meta.Readable()) {
                // Its bytes may come back with the node (store_rejoin.cc).
                if (held_complete) in.departed.Add(key, meta.generation);
                emptied.push_back(&meta);
            }
        }
        for (ObjectMeta* meta : emptied) in.DestroyObject(shard, *meta);
    }
}

Status RemoveNode(StoreInternals& in, NodeId id) {
    std::shared_ptr<NodeState> node;
    {
        WriterLock lock(in.nodes_mu);
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

Status MasterStore::ReportDiskReplicaDropped(NodeId node_id, std::string_view key,
                                             Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    if (!in_->GetNode(node_id)) return Status::UnknownNode("node " + std::to_string(node_id));
    Shard& shard = in_->ShardFor(key);
    MutexLock lock(shard.mu);
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end() || it->second.generation != generation) {
        return Status::Ok();  // already gone from the master's view
    }
    ObjectMeta& meta = it->second;
    const int index = meta.IndexOf(
        [&](const Replica& r) { return r.tier == Tier::kLocalDisk && r.node == node_id; });
    if (index < 0) {
        // Not ours to drop: the object (say a Put in flight, or a copy elsewhere) is untouched.
        return Status::NotFound("node " + std::to_string(node_id) + " holds no LOCAL_DISK replica of " +
                                QuoteKey(key));
    }
    // The bytes are gone whatever we think: a promotion reading them cannot succeed.
    if (meta.promotion && meta.promotion->holder == node_id) {
        in_->EndPromotion(meta);
        in_->m.promotion_cancelled.Inc();
    }
    // The node deleted the record itself: no DiskDelete to send back.
    (void)meta.TakeReplica(*in_, static_cast<size_t>(index));
    if (!meta.Readable()) {
        in_->DestroyObject(shard, meta);
    }
    return Status::Ok();
}

}  // namespace mooncake
