// RpcMasterLink: a node calls a remote master over Thrift (thrift/master_channel.h).
#include "MasterService.h"
#include "node/rpc_master_link.h"
#include "thrift/convert.h"
#include "thrift/master_channel.h"

namespace mooncake {
namespace {

using Svc = rpc::MasterServiceClient;

int32_t WaitMs(std::chrono::milliseconds wait) {
    return static_cast<int32_t>(std::clamp<int64_t>(wait.count(), 0, INT32_MAX));
}

// One call carrying a list of replica reports; one Status per report comes back.
template <typename WireReport, typename Report, typename Send>
Result<std::vector<Status>> SendReportsOver(MasterChannel& channel, std::span<const Report> reports,
                                            Send send) {
    std::vector<WireReport> wire;
    wire.reserve(reports.size());
    for (const auto& r : reports) wire.push_back(rpc::ToWire(r));
    std::vector<rpc::Outcome> outcomes;
    MC_RETURN_IF_ERROR(
        channel.Call([&](Svc& c) { send(c, outcomes, wire); }, Idempotent::kYes));
    std::vector<Status> out;
    out.reserve(outcomes.size());
    for (const auto& o : outcomes) out.push_back(rpc::FromOutcome(o));
    return out;
}

class RpcMasterLink final : public MasterLink {
public:
    explicit RpcMasterLink(std::unique_ptr<MasterChannel> channel)
        : channel_(std::move(channel)) {}

    Result<NodeId> RegisterNode(const NodeSpec& spec) override {
        int64_t id = 0;
        rpc::NodeSpec wire = rpc::ToWire(spec);
        MC_RETURN_IF_ERROR(
            channel_->Call([&](Svc& c) { id = c.RegisterNode(wire); }, Idempotent::kNo));
        return static_cast<NodeId>(id);
    }

    Result<HeartbeatReply> Heartbeat(NodeId node, uint64_t applied) override {
        rpc::HeartbeatReply wire;
        // Retried safely: a reply lost on the way is sent again until `applied` confirms it.
        MC_RETURN_IF_ERROR(channel_->Call(
            [&](Svc& c) {
                c.Heartbeat(wire, static_cast<int64_t>(node), static_cast<int64_t>(applied));
            },
            Idempotent::kYes));
        return rpc::FromWire(wire);
    }

    Status UnregisterNode(NodeId node) override {
        return channel_->Call([&](Svc& c) { c.UnregisterNode(static_cast<int64_t>(node)); },
                              Idempotent::kYes);
    }

    Result<std::vector<Status>> RegisterDiskReplicas(
        NodeId node, std::span<const DiskReplicaReport> reports) override {
        return SendReportsOver<rpc::DiskReplicaReport>(
            *channel_, reports, [&](Svc& c, std::vector<rpc::Outcome>& out, const auto& wire) {
                c.RegisterDiskReplicas(out, static_cast<int64_t>(node), wire);
            });
    }

    Result<std::vector<Status>> RegisterMemoryReplicas(
        NodeId node, std::span<const MemoryReplicaReport> reports) override {
        return SendReportsOver<rpc::MemoryReplicaReport>(
            *channel_, reports, [&](Svc& c, std::vector<rpc::Outcome>& out, const auto& wire) {
                c.RegisterMemoryReplicas(out, static_cast<int64_t>(node), wire);
            });
    }

    Status ReportNodeHealth(NodeId node, const NodeHealth& health) override {
        rpc::NodeHealth wire = rpc::ToWire(health);
        return channel_->Call(
            [&](Svc& c) { c.ReportNodeHealth(static_cast<int64_t>(node), wire); },
            Idempotent::kYes);
    }

    Status ReportDiskReplicaDropped(NodeId node, std::string_view key, Generation gen) override {
        std::string k(key);
        return channel_->Call(
            [&](Svc& c) {
                c.ReportDiskReplicaDropped(static_cast<int64_t>(node), k,
                                           static_cast<int64_t>(gen));
            },
            Idempotent::kYes);
    }

    Result<std::vector<OffloadTask>> OffloadObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) override {
        std::vector<rpc::OffloadTask> wire;
        MC_RETURN_IF_ERROR(channel_->Call(
            [&](Svc& c) {
                c.OffloadObjectHeartbeat(wire, static_cast<int64_t>(node),
                                         static_cast<int32_t>(std::min<size_t>(max, INT32_MAX)),
                                         WaitMs(wait));
            },
            Idempotent::kNo, wait));
        std::vector<OffloadTask> out;
        out.reserve(wire.size());
        for (const auto& t : wire) out.push_back(rpc::FromWire(t));
        return out;
    }

    Status NotifyOffloadSuccess(NodeId node, std::string_view key, Generation gen) override {
        std::string k(key);
        return channel_->Call(
            [&](Svc& c) {
                c.NotifyOffloadSuccess(static_cast<int64_t>(node), k, static_cast<int64_t>(gen));
            },
            Idempotent::kNo);
    }

    Status NotifyOffloadFailure(NodeId node, std::string_view key, Generation gen) override {
        std::string k(key);
        return channel_->Call(
            [&](Svc& c) {
                c.NotifyOffloadFailure(static_cast<int64_t>(node), k, static_cast<int64_t>(gen));
            },
            Idempotent::kYes);
    }

    Result<std::vector<PromotionTask>> PromotionObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) override {
        std::vector<rpc::PromotionTask> wire;
        MC_RETURN_IF_ERROR(channel_->Call(
            [&](Svc& c) {
                c.PromotionObjectHeartbeat(wire, static_cast<int64_t>(node),
                                           static_cast<int32_t>(std::min<size_t>(max, INT32_MAX)),
                                           WaitMs(wait));
            },
            Idempotent::kNo, wait));
        std::vector<PromotionTask> out;
        out.reserve(wire.size());
        for (const auto& t : wire) out.push_back(rpc::FromWire(t));
        return out;
    }

    Result<StagedRange> PromotionAllocStart(NodeId node, std::string_view key, Generation gen,
                                            uint64_t size) override {
        rpc::Replica wire;
        std::string k(key);
        MC_RETURN_IF_ERROR(channel_->Call(
            [&](Svc& c) {
                c.PromotionAllocStart(wire, static_cast<int64_t>(node), k,
                                      static_cast<int64_t>(gen), static_cast<int64_t>(size));
            },
            // A repeated call hands back the range the first one staged.
            Idempotent::kYes));
        return StagedRange{rpc::FromWire(wire), wire.data_address};
    }

    Status NotifyPromotionSuccess(NodeId node, std::string_view key, Generation gen) override {
        std::string k(key);
        return channel_->Call(
            [&](Svc& c) {
                c.NotifyPromotionSuccess(static_cast<int64_t>(node), k,
                                         static_cast<int64_t>(gen));
            },
            Idempotent::kNo);
    }

    Status NotifyPromotionFailure(NodeId node, std::string_view key, Generation gen) override {
        std::string k(key);
        // Idempotent by contract (core counts io_failed once).
        return channel_->Call(
            [&](Svc& c) {
                c.NotifyPromotionFailure(static_cast<int64_t>(node), k,
                                         static_cast<int64_t>(gen));
            },
            Idempotent::kYes);
    }

    Status PutEnd(ClientId client, std::string_view key, Generation gen) override {
        std::string k(key);
        // Idempotent in core (a put already ended answers OK), so a lost answer is asked again.
        return channel_->Call(
            [&](Svc& c) {
                c.PutEnd(static_cast<int64_t>(client), k, static_cast<int64_t>(gen));
            },
            Idempotent::kYes);
    }

private:
    std::unique_ptr<MasterChannel> channel_;
};

}  // namespace

Result<std::unique_ptr<MasterLink>> NewRpcMasterLink(std::string_view master,
                                                     const RpcOptions& options) {
    auto channel = MasterChannel::Connect(master, options);
    if (!channel.ok()) return channel.status();
    return std::unique_ptr<MasterLink>(std::make_unique<RpcMasterLink>(std::move(*channel)));
}

}  // namespace mooncake
