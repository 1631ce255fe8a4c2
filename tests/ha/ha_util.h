// Shared pieces of the HA tests: a real etcd process on loopback ports, and a cluster of
// masters (--enable_ha) and nodes that find the leader through --master etcd://.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace mooncake::test {

// One etcd member on free ports of `host` (loopback by default), its data in `dir`/etcd (kept
// across restarts).
class EtcdProcess {
public:
    explicit EtcdProcess(const TempDir& dir, const std::string& host = "127.0.0.1");
    bool Start();  // and wait until it answers
    void Kill() { daemon_->Kill(); }
    pid_t pid() const { return daemon_->pid(); }
    const std::string& endpoint() const { return endpoint_; }  // 127.0.0.1:PORT

private:
    std::string endpoint_;
    std::unique_ptr<Daemon> daemon_;
};

inline constexpr int kLeaseTtlSec = 2;

class HaCluster {
public:
    struct Master {
        std::string address;
        uint16_t metrics_port = 0;
        std::unique_ptr<Daemon> daemon;
    };

    // Starts etcd and `masters` masters of cluster `cluster_id` (with `master_args` besides
    // the usual ones); waits for a leader.
    explicit HaCluster(int masters, std::string cluster_id = "ha_test",
                       std::vector<std::string> master_args = {});
    // The same with master i in network namespace i of `topology` (listening on its address)
    // and etcd on the bridge, so one master's network can be cut (Topology::SetLink) while
    // etcd, the nodes, the client and the other master stay connected. `topology` outlives
    // the cluster.
    HaCluster(const Topology& topology, int masters, std::string cluster_id = "ha_test");
    Master& AddMaster();  // starts one more master of the cluster (with a topology: at most
                          // one per namespace)
    bool RestartMaster(Master& m);

    // A node following the leader through etcd://; `fault_spec` non-empty runs mooncaked-fault.
    Cluster::NodeProcess& AddNode(const std::string& dram, bool with_disk,
                                  const std::string& fault_spec = "");
    bool WaitForNodes(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(15));

    std::string EtcdUrl() const { return "etcd://" + etcd->endpoint(); }
    // A client of the cluster through etcd:// (follows the leader).
    std::unique_ptr<Client> ConnectHa(std::chrono::milliseconds timeout = std::chrono::seconds(10));
    // The master leading now according to etcd (nullptr if none within `wait`).
    Master* Leader(std::chrono::milliseconds wait = std::chrono::seconds(10));
    // Waits until a master other than `old` leads; nullptr if none within `wait`.
    Master* NewLeader(const Master* old, std::chrono::milliseconds wait);
    // The epoch of the leader key (0 if none).
    uint64_t LeaderEpoch();

    TempDir dir;
    const Topology* topology = nullptr;
    // Beyond loopback the daemons require a token (--auth_token_file): set with a topology,
    // given to every master, node and ConnectHa client.
    std::string auth_token;
    std::string cluster_id;
    std::string faults_dir;
    std::vector<std::string> master_args;  // every master's, after the usual ones
    std::unique_ptr<EtcdProcess> etcd;
    std::vector<std::unique_ptr<Master>> masters;
    std::vector<std::unique_ptr<Cluster::NodeProcess>> nodes;
    std::unique_ptr<Client> client;  // through etcd://

private:
    void Start(int masters);
};

}  // namespace mooncake::test
