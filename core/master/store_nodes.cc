// Nodes: registration, liveness, expiry, dropped disk records. What a node that registers
// again reports holding is in store_rejoin.cc.
#include "core/master/master_store.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace mooncake {

// The name rules are NodeTable::Register's (core/master/node_table.cc). A registration it replaces is
// cleaned up exactly as expiry does (its replicas dropped, tasks cancelled, what left with it
// remembered in `departed`).
Result<NodeId> MasterStore::RegisterNode(const NodeSpec& spec) {
    if (spec.name.empty()) return Status::InvalidArgument("node name is empty");
    if (spec.segment_capacity % kSegmentAlignment != 0) {
        return Status::InvalidArgument("segment capacity must be a multiple of 4 KiB");
    }
    std::shared_ptr<NodeState> replaced;
    Result<NodeId> id = nodes_.Register(spec, clock_.Now(), &replaced);
    if (!id.ok()) return id;
    if (replaced) {
        // Done before this call returns, so the new process's reports (which need its id)
        // find what the old one held already let go.
        CleanupNode(replaced);
        metrics_.nodes_replaced.Inc();
    }
    if (spec.holds_memory) {
        spdlog::info("node '{}' registered again holding DRAM ranges: nothing new is placed in "
                     "its segment until it has reported them (its next heartbeat)",
                     spec.name);
    }
    dram_.NotifyRoom();
    return id;
}

Result<HeartbeatReply> MasterStore::Heartbeat(NodeId node_id, uint64_t applied) {
    auto node = nodes_.Get(node_id);
    if (!node) {
        return Status::UnknownNode("node " + std::to_string(node_id) +
                                   " is not registered (expired?); register again");
    }
    node->last_heartbeat_ns.store(clock_.Now().count());
    // Its first beat under this registration comes after all it reported holding (the node
    // beats at once after registering): its segment takes new data from now on.
    if (nodes_.EndReporting(*node)) dram_.NotifyRoom();
    HeartbeatReply reply =
        node->TakeReply(applied, kAppliedAll, [this] { return nodes_.NextReplySeq(); });
    // The same object (key and generation) may be back where it was let go of since: a
    // promotion into the very range released, an offload rewriting the record deleted. The
    // node's record is the new replica then, and acting on the old request would destroy it.
    std::erase_if(reply.released, [&](const ReleasedRange& r) {
        return HoldsReplica(node_id, r.key, r.generation, Tier::kMemory, r.offset);
    });
    std::erase_if(reply.disk_deletes, [&](const DiskDelete& d) {
        return HoldsReplica(node_id, d.key, d.generation, Tier::kLocalDisk, 0);
    });
    return reply;
}

// Everything the node held goes: replicas dropped (objects left with none removed), tasks it
// was doing or staging into cancelled, its queues emptied.
void MasterStore::CleanupNode(const std::shared_ptr<NodeState>& node) {
    const NodeId id = node->id;
    node->MarkGone();
    if (node->segment_state.exchange(SegmentState::kOk) != SegmentState::kOk) {
        draining_segments_.fetch_sub(1);  // a drained node leaving: the drain's end
    }
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        std::vector<ObjectMeta*> emptied;
        for (auto& [key, meta] : shard.objects) {
            if (!meta.Touches(id)) continue;
            CancelTasks(meta);
            bool held_complete = false;
            for (size_t i = meta.replicas().size(); i-- > 0;) {
                const Replica& r = meta.replicas()[i];
                if (r.node != id) continue;
                held_complete = held_complete || r.state == ReplicaState::kComplete;
                DropReplica(shard, meta, i);
            }
            if (!meta.Readable()) {
                // Its bytes may come back with the node (store_rejoin.cc).
                if (held_complete) departed_.Add(key, meta.generation);
                emptied.push_back(&meta);
            } else {
                if (held_complete) departed_.CopyAway(key, meta.generation);  // HA tombstones
                RecountHardPin(shard, meta);  // a copy of a hard-pinned object went
            }
        }
        for (ObjectMeta* meta : emptied) DestroyObject(shard, *meta);
    }
}

Status MasterStore::RemoveNode(NodeId id) {
    std::shared_ptr<NodeState> node = nodes_.Remove(id);
    if (!node) return Status::UnknownNode("node " + std::to_string(id));
    CleanupNode(node);
    dram_.NotifyRoom();
    return Status::Ok();
}

Status MasterStore::UnregisterNode(NodeId node) { return RemoveNode(node); }

size_t MasterStore::ExpireNodes() {
    Nanos cutoff = clock_.Now() - std::chrono::seconds(config_.client_live_ttl_sec());
    std::vector<NodeId> expired;
    for (auto& node : nodes_.All()) {
        if (Nanos(node->last_heartbeat_ns.load()) < cutoff) expired.push_back(node->id);
    }
    for (NodeId id : expired) {
        if (RemoveNode(id).ok()) metrics_.nodes_expired.Inc();
    }
    return expired.size();
}

// Without this, a master stopped longer than client_live_ttl_sec would expire, on waking, every
// node that was heartbeating all along, dropping their replicas; standalone, its own node,
// stopped with it, and with it every key.
size_t MasterStore::ForgiveMasterPause(Nanos now, Nanos gap) {
    const Nanos cutoff = now - std::chrono::seconds(config_.client_live_ttl_sec());
    size_t kept = 0;
    for (auto& node : nodes_.All()) {
        int64_t last = node->last_heartbeat_ns.load();
        const int64_t extended = std::min(last + gap.count(), now.count());
        // A heartbeat landing meanwhile is newer than either: it stays.
        while (last < extended && !node->last_heartbeat_ns.compare_exchange_weak(last, extended)) {
        }
        if (Nanos(last) < cutoff && Nanos(extended) >= cutoff) ++kept;
    }
    if (kept > 0) {
        metrics_.node_expiries_forgiven.Inc(static_cast<double>(kept));
        spdlog::warn("the master did not run for {} ms (stopped or paused); {} node lease(s) that "
                     "lapsed meanwhile are kept: their heartbeats could not be heard",
                     std::chrono::duration_cast<std::chrono::milliseconds>(gap).count(), kept);
    }
    return kept;
}

Status MasterStore::ReportNodeHealth(NodeId node_id, const NodeHealth& health) {
    auto node = nodes_.Get(node_id);
    if (!node) return Status::UnknownNode("node " + std::to_string(node_id));
    node->reported_disk_used.store(health.disk_used);
    node->reported_disk_objects.store(health.disk_objects);
    node->reported_corruptions.store(health.disk_corruptions);
    node->disk_used_at_report.store(node->disk_used.load());
    node->disk_objects_at_report.store(node->disk_objects.load());
    node->health_reported.store(true);
    return Status::Ok();
}

Status MasterStore::ReportDiskReplicaDropped(NodeId node_id, std::string_view key,
                                             Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    if (!nodes_.Get(node_id)) return Status::UnknownNode("node " + std::to_string(node_id));
    Shard& shard = table_.ShardFor(key);
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
        promotion_.Cancel(meta);
    }
    // The node deleted the record itself: no DiskDelete to send back.
    (void)meta.TakeReplica(*this, static_cast<size_t>(index));
    if (!meta.Readable()) {
        DestroyObject(shard, meta);
    }
    return Status::Ok();
}

}  // namespace mooncake
