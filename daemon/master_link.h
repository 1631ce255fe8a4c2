// The standalone daemon's MasterLink (the interface is core/base/master_link.h): its node
// talks to the MasterStore in the same process (core/master/local_master_link.h), with this
// daemon's node directory. A node role's link to a remote master is node/rpc_master_link.h.
#pragma once

#include <memory>

#include "core/base/master_link.h"

namespace mooncake {

class MasterStore;
class NodeDirectory;

// `directory` maps a staged range's node to its data address; both must outlive the link.
std::unique_ptr<MasterLink> NewLocalMasterLink(MasterStore& store, NodeDirectory& directory);

}  // namespace mooncake
