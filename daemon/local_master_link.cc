// LocalMasterLink: the standalone node calls the MasterStore directly.
#include "core/master_store.h"
#include "daemon/master_link.h"
#include "daemon/node_directory.h"

namespace mooncake {
namespace {

class LocalMasterLink final : public MasterLink {
public:
    LocalMasterLink(MasterStore& store, NodeDirectory& directory)
        : store_(store), directory_(directory) {}

    Result<NodeId> RegisterNode(const NodeSpec& spec) override {
        auto id = store_.RegisterNode(spec);
        if (id.ok()) directory_.Remember(*id, spec);
        return id;
    }
    Result<HeartbeatReply> Heartbeat(NodeId node, uint64_t applied) override {
        return store_.Heartbeat(node, applied);
    }
    Status UnregisterNode(NodeId node) override { return store_.UnregisterNode(node); }
    Result<std::vector<Status>> RegisterDiskReplicas(
        NodeId node, std::span<const DiskReplicaReport> reports) override {
        return store_.RegisterDiskReplicas(node, reports);
    }
    Result<std::vector<Status>> RegisterMemoryReplicas(
        NodeId node, std::span<const MemoryReplicaReport> reports) override {
        return store_.RegisterMemoryReplicas(node, reports);
    }
    Status ReportDiskReplicaDropped(NodeId node, std::string_view key, Generation gen) override {
        return store_.ReportDiskReplicaDropped(node, key, gen);
    }
    Status ReportNodeHealth(NodeId node, const NodeHealth& health) override {
        return store_.ReportNodeHealth(node, health);
    }
    Result<std::vector<OffloadTask>> OffloadObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) override {
        return store_.OffloadObjectHeartbeat(node, max, wait);
    }
    Status NotifyOffloadSuccess(NodeId node, std::string_view key, Generation gen) override {
        return store_.NotifyOffloadSuccess(node, key, gen);
    }
    Status NotifyOffloadFailure(NodeId node, std::string_view key, Generation gen) override {
        return store_.NotifyOffloadFailure(node, key, gen);
    }
    Result<std::vector<PromotionTask>> PromotionObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) override {
        return store_.PromotionObjectHeartbeat(node, max, wait);
    }
    Result<StagedRange> PromotionAllocStart(NodeId node, std::string_view key, Generation gen,
                                            uint64_t size) override {
        auto replica = store_.PromotionAllocStart(node, key, gen, size);
        if (!replica.ok()) return replica.status();
        return StagedRange{*replica, directory_.Locate(replica->node).data_address};
    }
    Status NotifyPromotionSuccess(NodeId node, std::string_view key, Generation gen) override {
        return store_.NotifyPromotionSuccess(node, key, gen);
    }
    Status NotifyPromotionFailure(NodeId node, std::string_view key, Generation gen) override {
        return store_.NotifyPromotionFailure(node, key, gen);
    }

private:
    MasterStore& store_;
    NodeDirectory& directory_;
};

}  // namespace

std::unique_ptr<MasterLink> NewLocalMasterLink(MasterStore& store, NodeDirectory& directory) {
    return std::make_unique<LocalMasterLink>(store, directory);
}

}  // namespace mooncake
