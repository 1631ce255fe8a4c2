// What a node that registers again reports holding: the LOCAL_DISK records of its disk store
// and the committed ranges of its DRAM segment, each by key and generation.
//
// It registers again after the master restarted (the master lost all metadata), after the
// master expired it (a partition, a stall), or after the node itself restarted (its disk
// survives; its DRAM does not). Each report is one of:
//   - a key the master knows with the same generation and size: the replica is added back
//     (unless that tier already has a COMPLETE replica elsewhere);
//   - a key the master knows with an older generation (adopted from a node that registered
//     earlier): newest wins, the older incarnation is dropped (its nodes delete it) and this
//     one adopted as below; with the same or a newer generation: StaleGeneration, the node
//     deletes it;
//   - a key the master does not know: adopted when this is the first registration of the
//     node's name in the master's lifetime (the master restarted) or when the object left
//     with this node (DepartedObjects); otherwise it was removed while the node was away:
//     NotFound, the node deletes it. An HA leader also keeps tombstones (etcd) of keys
//     removed while a copy was away, with or without other copies: the next leader refuses
//     those copies, though for it every registration is the first of its name.
#include "core/master/master_store.h"

namespace mooncake {
namespace {

Status ValidateReport(std::string_view key, Generation generation, uint64_t size) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    if (size == 0 || generation == kNoGeneration) {
        return Status::InvalidArgument("size and generation must be non-zero");
    }
    return Status::Ok();
}

}  // namespace

// The object a report refers to, created if the node may adopt it. Shard lock held.
Result<ObjectMeta*> MasterStore::Claim(Shard& shard, const NodeState& node,
                                       const std::string& key, Generation generation,
                                       uint64_t size) {
    auto it = shard.objects.find(key);
    if (it != shard.objects.end() && it->second.generation == generation &&
        it->second.size == size) {
        departed_.CopyBack(key, generation);  // the copy that was away is back
        return &it->second;
    }
    if (it != shard.objects.end() && it->second.generation >= generation) {
        return Status::StaleGeneration("the master holds another incarnation of " +
                                       QuoteKey(key) + "; delete this copy");
    }
    if (departed_.IsTombstone(key, generation)) {  // kept by an HA cluster (etcd)
        return Status::NotFound(QuoteKey(key) + " was removed while node '" + node.spec.name +
                                "' was away; delete this copy");
    }
    if (!node.first_of_name && !departed_.Take(key, generation)) {
        return Status::NotFound(QuoteKey(key) + " was removed while node '" + node.spec.name +
                                "' was away; delete this copy");
    }
    if (it != shard.objects.end()) {
        // The master adopted an older incarnation from a node that registered earlier; this
        // one was put after it (generations grow across leaders: the epoch is their high
        // half), so the older was replaced, and an acknowledged write is never undone by an
        // older one: the older copies go (their nodes are told to delete them).
        ObjectMeta& older = it->second;
        if (!older.Readable()) {
            return Status::NotReady(QuoteKey(key) + " is being written; offer it again");
        }
        departed_.Gone(key);
        DestroyObject(shard, older);
        metrics_.superseded_at_rejoin.Inc();
    }
    ObjectMeta& meta = *table_.Insert(shard, key).first;
    meta.generation = generation;
    meta.size = size;
    promotion_.CountNewObject(meta, key);
    return &meta;
}

// An object created by Claim that got no replica after all must not stay behind.
void MasterStore::EraseIfEmpty(Shard& shard, ObjectMeta& meta) {
    if (meta.NoReplicas() && !meta.promotion && !meta.offload) EraseObject(shard, meta);
}

// One Status per report: validated, claimed under the key's shard lock, then handed to
// `add(shard, meta, report)`, which adds the tier's replica or says why not (an object that
// Claim created for a refused report is erased again).
template <typename Report, typename Add>
std::vector<Status> MasterStore::ForEachClaim(const NodeState& node,
                                              std::span<const Report> reports, Add add) {
    std::vector<Status> out;
    out.reserve(reports.size());
    for (const Report& report : reports) {
        Status st = ValidateReport(report.key, report.generation, report.size);
        if (st.ok()) {
            Shard& shard = table_.ShardFor(report.key);
            MutexLock lock(shard.mu);
            Result<ObjectMeta*> claimed =
                Claim(shard, node, report.key, report.generation, report.size);
            st = claimed.ok() ? add(shard, **claimed, report) : claimed.status();
            if (claimed.ok() && !st.ok()) EraseIfEmpty(shard, **claimed);
        }
        out.push_back(std::move(st));
    }
    return out;
}

Result<std::vector<Status>> MasterStore::RegisterDiskReplicas(
    NodeId node_id, std::span<const DiskReplicaReport> reports) {
    auto node = nodes_.Get(node_id);
    if (!node) return Status::UnknownNode("node " + std::to_string(node_id));
    if (!node->has_disk()) return Status::InvalidArgument("node has no LOCAL_DISK tier");
    return ForEachClaim(*node, reports,
                        [&](Shard&, ObjectMeta& meta, const DiskReplicaReport& report) {
        const Replica* disk = meta.CompleteDisk();
        if (disk != nullptr && disk->node != node_id) {
            return Status::AlreadyExists(QuoteKey(report.key) +
                                         " is already on another node's disk");
        }
        if (disk == nullptr) meta.AddDisk(*this, node_id);
        return Status::Ok();
    });
}

Result<std::vector<Status>> MasterStore::RegisterMemoryReplicas(
    NodeId node_id, std::span<const MemoryReplicaReport> reports) {
    auto node = nodes_.Get(node_id);
    if (!node) return Status::UnknownNode("node " + std::to_string(node_id));
    return ForEachClaim(*node, reports,
                        // Runs under shard.mu (ForEachClaim); clang-14 cannot tie a lambda's
                        // MC_REQUIRES to its argument, hence unchecked.
                        [&](Shard& shard, ObjectMeta& meta, const MemoryReplicaReport& report)
                            MC_NO_THREAD_SAFETY_ANALYSIS {
        // Reported again (a registration retried after a lost reply): it is there already,
        // whichever of the object's copies it is.
        if (meta.IndexOf([&](const Replica& r) {
                return r.IsCompleteMemory() && r.node == node_id && r.offset == report.offset;
            }) >= 0) {
            return Status::Ok();
        }
        // Its own range, being written (a registration that got its id back after a lost
        // reply, and a put or promotion placed there meanwhile): the node keeps it, or the
        // write would end into a range the node had let go of.
        const bool ours_being_written =
            meta.IndexOf([&](const Replica& r) {
                return r.tier == Tier::kMemory && r.state == ReplicaState::kProcessing &&
                       r.node == node_id && r.offset == report.offset;
            }) >= 0 ||
            (meta.promotion && meta.promotion->staging &&
             meta.promotion->staging->node == node_id &&
             meta.promotion->staging->offset == report.offset);
        if (ours_being_written) return Status::Ok();
        // A put or promotion in flight owns the tier, and a node holds one copy of an object.
        // A COMPLETE copy on another node (the same generation: the same bytes) does not
        // keep this one out: the object was put with copies (PutConfig::replicas), or
        // promoted again while this node was away; eviction takes copies one at a time.
        const bool writing = meta.Find(Tier::kMemory, ReplicaState::kProcessing) != nullptr ||
                             (meta.promotion && meta.promotion->staging);
        const bool here = meta.IndexOf([&](const Replica& r) {
            return r.tier == Tier::kMemory && r.node == node_id;
        }) >= 0;
        if (writing || here) {
            return Status::AlreadyExists(QuoteKey(report.key) + " is already in MEMORY");
        }
        const bool placed = node->segment.AllocateAt(report.offset, report.size);
        if (!placed) {
            return Status::InvalidArgument(
                "range " + std::to_string(report.offset) + "+" + std::to_string(report.size) +
                " of " + QuoteKey(report.key) + " is outside the segment or overlaps another");
        }
        meta.AddMemory(*this, node_id, report.offset, /*first=*/false);
        LruTouch(shard, meta);
        RecountHardPin(shard, meta);
        return Status::Ok();
    });
}

}  // namespace mooncake
