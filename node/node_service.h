// NodeService: the node role's own small RPC service on its --listen address, for health
// checks and inspection (`is this node registered, what does it hold`). Work comes from the
// master; object bytes go over the data channel.
//
// Thread-safety: called from many connection threads; reads atomics and thread-safe stores.
#pragma once

#include <string>
#include <string_view>

#include "NodeService.h"

namespace mooncake {

class DiskStore;
class MetricsRegistry;
class Node;
class Segment;

struct NodeServiceOptions {
    std::string name;
    std::string data_address;
    std::string master;
    std::string auth_token;
};

class NodeService final : public rpc::NodeServiceIf {
public:
    NodeService(NodeServiceOptions options, const Node& node, const Segment& segment,
                DiskStore* disk, MetricsRegistry& metrics)
        : options_(std::move(options)),
          node_(node),
          segment_(segment),
          disk_(disk),
          metrics_(metrics) {}

    void Hello(rpc::HelloReply& out, int32_t protocol_version, const std::string& auth_token,
               const std::string& client_name) override;
    void GetStatus(rpc::NodeStatus& out) override;
    void MetricsText(std::string& out) override;
    void Scrub(rpc::ScrubReply& out) override;

private:
    // Throws the access table's refusal (node/access.h) unless the session may call it.
    void Require(std::string_view method) const;

    const NodeServiceOptions options_;
    const Node& node_;
    const Segment& segment_;
    DiskStore* const disk_;
    MetricsRegistry& metrics_;
};

}  // namespace mooncake
