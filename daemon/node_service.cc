#include "daemon/node_service.h"

#include "core/disk/disk_store.h"
#include "core/metrics.h"
#include "daemon/node.h"
#include "daemon/rpc_server.h"
#include "daemon/segment.h"
#include "mooncake_constants.h"
#include "thrift/convert.h"

namespace mooncake {

void NodeService::RequireHello() const {
    if (!CurrentRpcSession().greeted) rpc::Throw(Status::IllegalClient("call Hello first"));
}

void NodeService::Hello(rpc::HelloReply& out, int32_t protocol_version,
                        const std::string& auth_token, const std::string& /*client_name*/) {
    const int32_t ours = rpc::g_mooncake_constants.PROTOCOL_VERSION;
    if (protocol_version != ours) {
        rpc::Throw(Status::InvalidArgument("protocol version " + std::to_string(protocol_version) +
                                           " is not supported; this node speaks " +
                                           std::to_string(ours)));
    }
    if (!options_.auth_token.empty() && auth_token != options_.auth_token) {
        rpc::Throw(Status::IllegalClient("auth token refused"));
    }
    CurrentRpcSession().greeted = true;
    out.protocol_version = ours;
    out.client_id = 0;
    out.role = "node";
    out.server_version = "mooncake-tier 0.1.0";
}

void NodeService::GetStatus(rpc::NodeStatus& out) {
    RequireHello();
    out.node_id = static_cast<int64_t>(node_.id());
    out.registered = node_.registered();
    out.name = options_.name;
    out.data_address = options_.data_address;
    out.master = options_.master;
    out.segment_capacity = static_cast<int64_t>(segment_.capacity());
    out.segment_bytes_held = static_cast<int64_t>(segment_.bytes_held());
    if (disk_ != nullptr) {
        out.disk_capacity = static_cast<int64_t>(disk_->capacity());
        out.disk_used = static_cast<int64_t>(disk_->used());
        out.disk_objects = static_cast<int64_t>(disk_->object_count());
    }
}

void NodeService::MetricsText(std::string& out) {
    RequireHello();
    out = metrics_.RenderPrometheus();
}

}  // namespace mooncake
