// The standalone node's link: core's in-process LocalMasterLink, with this daemon's node
// directory learning each registration and naming the data channel of a staged range.
#include "core/master/local_master_link.h"

#include "daemon/master_link.h"
#include "daemon/node_directory.h"

namespace mooncake {

std::unique_ptr<MasterLink> NewLocalMasterLink(MasterStore& store, NodeDirectory& directory) {
    LocalMasterLink::Hooks hooks;
    hooks.data_address_of = [&directory](NodeId id) { return directory.Locate(id).data_address; };
    hooks.on_register = [&directory](NodeId id, const NodeSpec& spec) {
        directory.Remember(id, spec);
    };
    return std::make_unique<LocalMasterLink>(store, std::move(hooks));
}

}  // namespace mooncake
