// LeaderDiscovery: `--master etcd://HOST:PORT[;HOST:PORT...]` means "whoever leads cluster
// <cluster id> now". Reads the leader key the masters campaign for (etcd/cluster_keys.h)
// and the masters' registrations, for clients, nodes and `mooncakectl masters`.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "etcd/cluster_keys.h"
#include "etcd/etcd_client.h"

namespace mooncake::ha {

bool IsEtcdMaster(std::string_view master);  // starts with etcd://

struct MasterListing {
    std::string address;
    bool leader = false;
    uint64_t epoch = 0;    // the leader's; standbys show the cluster's current epoch
    int64_t since_ms = 0;  // leader: elected at; standby: started at (wall clock ms)
};

class LeaderDiscovery {
public:
    // `master`: "etcd://HOST:PORT[;HOST:PORT...]"; `cluster_id`: empty -> ClusterIdFor("").
    static Result<std::unique_ptr<LeaderDiscovery>> Create(std::string_view master,
                                                           std::string_view cluster_id);

    // The leader's RPC address, waiting up to `wait` for a leader to appear (kUnavailable
    // naming the cluster if none does, or etcd's error if etcd cannot be reached).
    Result<std::string> Leader(std::chrono::milliseconds wait);
    // Every live master, the leader first.
    Result<std::vector<MasterListing>> Masters();

    const std::string& cluster_id() const { return cluster_; }

private:
    LeaderDiscovery(std::unique_ptr<EtcdClient> etcd, std::string cluster)
        : etcd_(std::move(etcd)), cluster_(std::move(cluster)), keys_(cluster_) {}
    std::unique_ptr<EtcdClient> etcd_;
    const std::string cluster_;
    const ClusterKeys keys_;
};

}  // namespace mooncake::ha
