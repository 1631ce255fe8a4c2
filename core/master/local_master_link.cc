#include "core/master/local_master_link.h"

#include "core/master/master_store.h"

namespace mooncake {

LocalMasterLink::LocalMasterLink(MasterStore& store, Hooks hooks)
    : store_(store), hooks_(std::move(hooks)) {}

Result<NodeId> LocalMasterLink::RegisterNode(const NodeSpec& spec) {
    auto id = store_.RegisterNode(spec);
    if (id.ok() && hooks_.on_register) hooks_.on_register(*id, spec);
    return id;
}

Result<HeartbeatReply> LocalMasterLink::Heartbeat(NodeId node, uint64_t applied) {
    return store_.Heartbeat(node, applied);
}

Status LocalMasterLink::UnregisterNode(NodeId node) { return store_.UnregisterNode(node); }

Result<std::vector<Status>> LocalMasterLink::RegisterDiskReplicas(
    NodeId node, std::span<const DiskReplicaReport> reports) {
    return store_.RegisterDiskReplicas(node, reports);
}

Result<std::vector<Status>> LocalMasterLink::RegisterMemoryReplicas(
    NodeId node, std::span<const MemoryReplicaReport> reports) {
    return store_.RegisterMemoryReplicas(node, reports);
}

Status LocalMasterLink::ReportDiskReplicaDropped(NodeId node, std::string_view key,
                                                 Generation gen) {
    return store_.ReportDiskReplicaDropped(node, key, gen);
}

Status LocalMasterLink::ReportNodeHealth(NodeId node, const NodeHealth& health) {
    return store_.ReportNodeHealth(node, health);
}

Result<std::vector<OffloadTask>> LocalMasterLink::OffloadObjectHeartbeat(
    NodeId node, size_t max, std::chrono::milliseconds wait) {
    return store_.OffloadObjectHeartbeat(node, max, wait);
}

Status LocalMasterLink::NotifyOffloadSuccess(NodeId node, std::string_view key, Generation gen) {
    return store_.NotifyOffloadSuccess(node, key, gen);
}

Status LocalMasterLink::NotifyOffloadFailure(NodeId node, std::string_view key, Generation gen) {
    return store_.NotifyOffloadFailure(node, key, gen);
}

Result<std::vector<PromotionTask>> LocalMasterLink::PromotionObjectHeartbeat(
    NodeId node, size_t max, std::chrono::milliseconds wait) {
    return store_.PromotionObjectHeartbeat(node, max, wait);
}

Result<StagedRange> LocalMasterLink::PromotionAllocStart(NodeId node, std::string_view key,
                                                         Generation gen, uint64_t size) {
    auto replica = store_.PromotionAllocStart(node, key, gen, size);
    if (!replica.ok()) return replica.status();
    std::string address;
    if (hooks_.data_address_of) address = hooks_.data_address_of(replica->node);
    return StagedRange{*replica, std::move(address)};
}

Status LocalMasterLink::NotifyPromotionSuccess(NodeId node, std::string_view key,
                                               Generation gen) {
    return store_.NotifyPromotionSuccess(node, key, gen);
}

Status LocalMasterLink::NotifyPromotionFailure(NodeId node, std::string_view key,
                                               Generation gen) {
    return store_.NotifyPromotionFailure(node, key, gen);
}

Status LocalMasterLink::PutEnd(ClientId client, std::string_view key, Generation gen) {
    return store_.PutEnd(client, key, gen);
}

}  // namespace mooncake
