// The daemon's MasterLink implementations (the interface is core/base/master_link.h):
//  - NewLocalMasterLink: core/master/local_master_link.h, with this daemon's node directory (standalone);
//  - NewRpcMasterLink: a remote master through thrift/master_channel.h (node role).
#pragma once

#include <memory>
#include <string_view>

#include "core/base/master_link.h"
#include "core/base/status.h"

namespace mooncake {

class MasterStore;
class NodeDirectory;
struct RpcOptions;

// `directory` maps a staged range's node to its data address; both must outlive the link.
std::unique_ptr<MasterLink> NewLocalMasterLink(MasterStore& store, NodeDirectory& directory);

// Connects to the master at HOST:PORT (kUnavailable if it does not answer).
Result<std::unique_ptr<MasterLink>> NewRpcMasterLink(std::string_view master,
                                                     const RpcOptions& options);

}  // namespace mooncake
