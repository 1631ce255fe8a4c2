// LocalMasterLink: a MasterLink that calls a MasterStore in the same process -- the standalone
// daemon, the trace replay and the unit tests drive a NodeWorker (core/node/node_worker.h) through it.
// Long-poll waits are passed to the store as they are (0 = answer at once).
//
// Thread-safety: as MasterStore (every method from any thread).
#pragma once

#include <functional>
#include <string>

#include "core/base/master_link.h"

namespace mooncake {

class MasterStore;

class LocalMasterLink final : public MasterLink {
public:
    // `data_address_of` names the data channel of the node a promotion is staged on (empty:
    // none, the staging is this process's own); `on_register` sees every registration that
    // succeeded (the daemon's node directory). Both optional.
    struct Hooks {
        std::function<std::string(NodeId)> data_address_of;
        std::function<void(NodeId, const NodeSpec&)> on_register;
    };
    explicit LocalMasterLink(MasterStore& store, Hooks hooks = {});

    Result<NodeId> RegisterNode(const NodeSpec& spec) override;
    Result<HeartbeatReply> Heartbeat(NodeId node, uint64_t applied) override;
    Status UnregisterNode(NodeId node) override;
    Result<std::vector<Status>> RegisterDiskReplicas(
        NodeId node, std::span<const DiskReplicaReport> reports) override;
    Result<std::vector<Status>> RegisterMemoryReplicas(
        NodeId node, std::span<const MemoryReplicaReport> reports) override;
    Status ReportDiskReplicaDropped(NodeId node, std::string_view key, Generation gen) override;
    Status ReportNodeHealth(NodeId node, const NodeHealth& health) override;
    Result<std::vector<OffloadTask>> OffloadObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) override;
    Status NotifyOffloadSuccess(NodeId node, std::string_view key, Generation gen) override;
    Status NotifyOffloadFailure(NodeId node, std::string_view key, Generation gen) override;
    Result<std::vector<PromotionTask>> PromotionObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) override;
    Result<StagedRange> PromotionAllocStart(NodeId node, std::string_view key, Generation gen,
                                            uint64_t size) override;
    Status NotifyPromotionSuccess(NodeId node, std::string_view key, Generation gen) override;
    Status NotifyPromotionFailure(NodeId node, std::string_view key, Generation gen) override;
    Status PutEnd(ClientId client, std::string_view key, Generation gen) override;

private:
    MasterStore& store_;
    Hooks hooks_;
};

}  // namespace mooncake
