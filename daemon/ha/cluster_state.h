// ClusterState: the small durable state of an HA cluster that no node can give back, kept in
// etcd so a new leader starts from it: knob values set with `tune set` (knobs/<name>). The
// epoch lives there too (LeaderElection). Object metadata does not: the live nodes report it
// when they register with the new leader (core/store_rejoin.cc); nor do promotion and offload
// tasks: reads and evictions trigger them again.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/knobs.h"
#include "core/status.h"
#include "etcd/cluster_keys.h"
#include "etcd/etcd_client.h"

namespace mooncake::ha {

class ClusterState {
public:
    ClusterState(EtcdClient& etcd, std::string_view cluster_id) : etcd_(etcd), keys_(cluster_id) {}

    // Applies every knob stored for the cluster to `config` (a value this build no longer
    // accepts is skipped with a warning). Returns how many were applied.
    Result<size_t> LoadKnobs(Config& config);
    // Stores knobs a TuneSet just applied.
    Status SaveKnobs(const std::vector<std::pair<std::string, std::string>>& assignments);

    // The names of the nodes live on the leader (kept up to date by it), so the next leader
    // knows whom to wait for before it answers clients: until they registered again, a key
    // they hold would read as NotFound.
    Status SaveNodes(const std::set<std::string>& names);
    Result<std::set<std::string>> LoadNodes();

    // Tombstones of keys removed while their node was away (core/departed_objects.h), by
    // key and generation: a new leader refuses those copies when the node comes back.
    Status SaveTombstones(const std::vector<std::pair<std::string, uint64_t>>& tombstones);
    Result<std::vector<std::pair<std::string, uint64_t>>> LoadTombstones();

private:
    EtcdClient& etcd_;
    const ClusterKeys keys_;
};

}  // namespace mooncake::ha
