#include "tests/ha/ha_util.h"

#include <gtest/gtest.h>

#include <fstream>

#include "etcd/cluster_keys.h"
#include "etcd/etcd_client.h"
#include "etcd/leader_discovery.h"
#include "tests/fault/fault_util.h"

namespace mooncake::test {

EtcdProcess::EtcdProcess(const TempDir& dir, const std::string& host) {
    const uint16_t client_port = FreePort();
    const uint16_t peer_port = FreePort();
    endpoint_ = host + ":" + std::to_string(client_port);
    const std::string client_url = "http://" + endpoint_;
    const std::string peer_url = "http://" + host + ":" + std::to_string(peer_port);
    daemon_ = std::make_unique<Daemon>(
        "etcd",
        std::vector<std::string>{"--name=ha", "--data-dir=" + dir.Sub("etcd"),
                                 "--listen-client-urls=" + client_url,
                                 "--advertise-client-urls=" + client_url,
                                 "--listen-peer-urls=" + peer_url,
                                 "--initial-advertise-peer-urls=" + peer_url,
                                 "--initial-cluster=ha=" + peer_url, "--logger=zap",
                                 "--log-level=warn"},
        dir);
    daemon_->UseBinary("/usr/bin/etcd");
}

bool EtcdProcess::Start() {
    if (!daemon_->Start()) return false;
    auto etcd = ha::EtcdClient::Create(endpoint_, std::chrono::milliseconds(500));
    if (!etcd.ok()) return false;
    return WaitFor([&] { return (*etcd)->Get("/probe").ok(); }, std::chrono::seconds(15));
}

HaCluster::HaCluster(int n, std::string cluster, std::vector<std::string> extra_master_args)
    : cluster_id(std::move(cluster)), master_args(std::move(extra_master_args)) {
    Start(n);
}

HaCluster::HaCluster(const Topology& topo, int n, std::string cluster)
    : topology(&topo), cluster_id(std::move(cluster)) {
    Start(n);
}

void HaCluster::Start(int n) {
    faults_dir = dir.Sub("faults");
    if (topology) {
        auth_token = "ha-partition-token";
        std::ofstream(dir.Sub("token")) << auth_token << "\n";
    }
    etcd = std::make_unique<EtcdProcess>(dir, topology ? topology->bridge_ip() : "127.0.0.1");
    if (!etcd->Start()) {
        ADD_FAILURE() << "etcd did not start";
        return;
    }
    for (int i = 0; i < n; ++i) AddMaster();
    if (Leader() == nullptr) {
        ADD_FAILURE() << "no master became leader";
        return;
    }
    client = ConnectHa();
}

HaCluster::Master& HaCluster::AddMaster() {
    auto m = std::make_unique<Master>();
    const int ns = static_cast<int>(masters.size());  // with a topology: its namespace
    m->address = (topology ? topology->ip(ns) : "127.0.0.1") + ":" + std::to_string(FreePort());
    m->metrics_port = FreePort();
    std::vector<std::string> args = {
        "--role=master",
        "--listen=" + m->address,
        "--metrics_port=" + std::to_string(m->metrics_port),
        "--log_level=debug",
        "--client_live_ttl_sec=3",
        "--enable_ha",
        "--etcd_endpoints=" + etcd->endpoint(),
        "--cluster_id=" + cluster_id,
        "--ha_lease_ttl_sec=" + std::to_string(kLeaseTtlSec)};
    if (!auth_token.empty()) args.push_back("--auth_token_file=" + dir.Sub("token"));
    args.insert(args.end(), master_args.begin(), master_args.end());
    m->daemon = std::make_unique<Daemon>("master" + std::to_string(masters.size()), args, dir,
                                         topology ? topology->Exec(ns) : std::vector<std::string>{});
    m->daemon->Start();
    masters.push_back(std::move(m));
    return *masters.back();
}

bool HaCluster::RestartMaster(Master& m) { return m.daemon->Start(); }

Cluster::NodeProcess& HaCluster::AddNode(const std::string& dram, bool with_disk,
                                         const std::string& fault_spec) {
    NodeLaunch launch{.master = EtcdUrl(),
                      .dram = dram,
                      .with_disk = with_disk,
                      .index = nodes.size(),
                      .extra_args = {"--cluster_id=" + cluster_id},
                      .binary = fault_spec.empty() ? "" : FaultDaemonPath(),
                      .env = fault_spec.empty() ? decltype(NodeLaunch::env){}
                                                : FaultDir(faults_dir).Env(fault_spec)};
    if (!auth_token.empty()) launch.extra_args.push_back("--auth_token_file=" + dir.Sub("token"));
    nodes.push_back(StartNode(dir, launch));
    return *nodes.back();
}

bool HaCluster::WaitForNodes(size_t n, std::chrono::milliseconds timeout) {
    return WaitFor(
        [&] {
            auto live = client->Nodes();
            return live.ok() && live->size() == n;
        },
        timeout);
}

std::unique_ptr<Client> HaCluster::ConnectHa(std::chrono::milliseconds timeout) {
    ClientOptions options;
    options.cluster_id = cluster_id;
    options.auth_token = auth_token;
    options.rpc_timeout = std::chrono::seconds(5);
    return ConnectWhenUp(EtcdUrl(), timeout, options);
}

HaCluster::Master* HaCluster::Leader(std::chrono::milliseconds wait) {
    auto discovery = ha::LeaderDiscovery::Create(EtcdUrl(), cluster_id);
    if (!discovery.ok()) return nullptr;
    Master* found = nullptr;
    WaitFor(
        [&] {
            auto leader = (*discovery)->Leader(std::chrono::milliseconds(0));
            if (!leader.ok()) return false;
            for (auto& m : masters) {
                if (m->address == *leader) found = m.get();
            }
            return found != nullptr;
        },
        wait);
    return found;
}

HaCluster::Master* HaCluster::NewLeader(const Master* old, std::chrono::milliseconds wait) {
    Master* found = nullptr;
    WaitFor(
        [&] {
            found = Leader(std::chrono::milliseconds(0));
            return found != nullptr && found != old;
        },
        wait);
    return found != old ? found : nullptr;
}

uint64_t HaCluster::LeaderEpoch() {
    auto discovery = ha::LeaderDiscovery::Create(EtcdUrl(), cluster_id);
    if (!discovery.ok()) return 0;
    auto masters_now = (*discovery)->Masters();
    if (!masters_now.ok() || masters_now->empty() || !masters_now->front().leader) return 0;
    return masters_now->front().epoch;
}

}  // namespace mooncake::test
