// The node's link to a remote master (the interface is core/base/master_link.h), through
// thrift/master_channel.h: what a node process and an embedded node use.
#pragma once

#include <memory>
#include <string_view>

#include "core/base/master_link.h"
#include "core/base/status.h"

namespace mooncake {

struct RpcOptions;

// Connects to the master at HOST:PORT (kUnavailable if it does not answer).
Result<std::unique_ptr<MasterLink>> NewRpcMasterLink(std::string_view master,
                                                     const RpcOptions& options);

}  // namespace mooncake
