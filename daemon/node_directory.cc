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
    }
    // A miss: the node may have registered a moment ago (the store can allocate on it before
    // RegisterNode's Remember runs). Ask the store for this one node rather than answer a put
    // with an empty address.
    std::optional<NodeSpec> spec = store_.NodeSpecOf(id);  // outside our lock: store locks
    if (!spec) return {};
    Remember(id, *spec);
    return {spec->name, spec->data_address};
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
}

}  // namespace mooncake
