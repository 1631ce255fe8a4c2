#include "node/node_service.h"

#include "core/disk/disk_store.h"
#include "core/base/metrics.h"
#include "node/access.h"
#include "node/node.h"
#include "node/rpc_server.h"
#include "node/scrub.h"
#include "node/segment.h"
#include "mooncake_constants.h"
#include "thrift/convert.h"

namespace mooncake {

void NodeService::Require(std::string_view method) const {
    Status st = CheckAccess(NodeMethodPermissions(), method, CurrentRpcSession().credentials);
    if (!st.ok()) rpc::Throw(st);
}

void NodeService::Hello(rpc::HelloReply& out, int32_t protocol_version,
                        const std::string& auth_token, const std::string& /*client_name*/) {
    const int32_t ours = rpc::g_mooncake_constants.PROTOCOL_VERSION;
    if (protocol_version != ours) {
        rpc::Throw(Status::InvalidArgument("protocol version " + std::to_string(protocol_version) +
                                           " is not supported; this node speaks " +
                                           std::to_string(ours)));
    }
    auto creds = Authenticate(options_.auth_token, auth_token);
    if (!creds.ok()) rpc::Throw(creds.status());
    CurrentRpcSession().credentials = *creds;
    out.protocol_version = ours;
    out.client_id = 0;
    out.role = "node";
    out.server_version = "mooncake-tier 0.1.0";
}

void NodeService::GetStatus(rpc::NodeStatus& out) {
    Require("GetStatus");
    out.node_id = static_cast<int64_t>(node_.id());
    out.registered = node_.registered();
    out.name = options_.name;
    out.data_address = options_.data_address;
    out.master = options_.master;
    out.segment_capacity = static_cast<int64_t>(segment_.capacity());
    out.segment_bytes_held = static_cast<int64_t>(segment_.bytes_held());
    if (disk_ != nullptr) {
        out.disk_capacity = static_cast<int64_t>(disk_->capacity());
        out.disk_used = static_cast<int64_t>(disk_->allocated_bytes());
        out.disk_objects = static_cast<int64_t>(disk_->object_count());
    }
}

void NodeService::Scrub(rpc::ScrubReply& out) {
    Require("Scrub");
    out = ScrubDisk(disk_, options_.name);
}

void NodeService::MetricsText(std::string& out) {
    Require("MetricsText");
    out = metrics_.RenderPrometheus();
}

}  // namespace mooncake
