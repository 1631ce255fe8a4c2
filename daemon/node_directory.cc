#include "daemon/node_directory.h"

#include "core/master/master_store.h"

namespace mooncake {

void NodeDirectory::Remember(NodeId id, const NodeSpec& spec) {
    MutexLock lock(mu_);
    nodes_[id] = {{spec.name, spec.data_address}, std::chrono::steady_clock::now()};
}

rpc::NodeLocation NodeDirectory::Locate(NodeId id) {
    {
        MutexLock lock(mu_);
        auto it = nodes_.find(id);
        if (it != nodes_.end()) return it->second.location;
        if (std::chrono::steady_clock::now() - last_refresh_ < std::chrono::milliseconds(100)) {
            return {};
        }
    }
    Refresh();
    MutexLock lock(mu_);
    auto it = nodes_.find(id);
    return it != nodes_.end() ? it->second.location : rpc::NodeLocation{};
}

void NodeDirectory::Refresh() {
    const auto started = std::chrono::steady_clock::now();
    std::vector<NodeInfo> live = store_.Nodes();  // outside our lock: it takes store locks
    std::unordered_map<NodeId, Entry> fresh;
    for (const NodeInfo& n : live) fresh[n.id] = {{n.spec.name, n.spec.data_address}, {}};
    MutexLock lock(mu_);
    // A node registered while Nodes() ran may be missing from `live`: keep what Remember saw.
    for (auto& [id, entry] : nodes_) {
        if (entry.remembered >= started) fresh[id] = entry;
    }
    nodes_.swap(fresh);
    last_refresh_ = started;
}

}  // namespace mooncake
