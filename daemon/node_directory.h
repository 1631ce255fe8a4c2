// NodeDirectory: node id -> (advertised name, data address), for filling the locations of
// replicas in RPC replies and for the standalone node's promotions.
//
// MasterStore::Nodes() walks every node and counts objects, too heavy for every Get; this
// keeps a copy, updated at registration (and from the store on a miss) and pruned of departed
// nodes by the tick thread's Refresh().
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/base/master_types.h"
#include "core/base/mutex.h"
#include "thrift/convert.h"

namespace mooncake {

class MasterStore;

class NodeDirectory {
public:
    explicit NodeDirectory(MasterStore& store) : store_(store) {}

    void Remember(NodeId id, const NodeSpec& spec);
    // Empty strings for a node the master does not know (expired, unregistered).
    rpc::NodeLocation Locate(NodeId id);
    // Replaces the copy with the master's live nodes.
    void Refresh() MC_EXCLUDES(mu_);

private:
    MasterStore& store_;
    Mutex mu_;
    struct Entry {
        rpc::NodeLocation location;
        std::chrono::steady_clock::time_point remembered{};  // by Remember(); kept by Refresh
    };
    std::unordered_map<NodeId, Entry> nodes_ MC_GUARDED_BY(mu_);
};

}  // namespace mooncake
