// The node role's parts, assembled once: what `mooncaked --role node` runs (RunNode in
// roles.cc) and what a process that embeds a node runs (the Python module's
// MooncakeDistributedStore with a global_segment_size, through EmbeddedNode).
//
//   NodeParts     Segment + DiskStore + DataServer + Node (the byte work, driven by a master)
//   EmbeddedNode  NodeParts + an RPC link to a master + NodeService, started and stopped as one
//                 object inside any process; Stop() leaves the cluster as a stopping node does
//                 (UnregisterNode: its replicas are dropped at the master at once).
//
// Thread-safety: Start/Stop from one thread; segment() and data_address() are safe anywhere.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/knobs.h"
#include "core/base/metrics.h"
#include "core/base/status.h"
#include "net/net.h"
#include "node/access.h"

namespace mooncake {

class DataServer;
class DataTransport;
class DiskHealth;
class DiskStore;
class MasterLink;
class MasterStore;
class Node;
class RpcServer;
class Segment;
class ShmServer;

// The addresses a node serves on, derived once.
struct NodeAddresses {
    net::HostPort listen;     // the node service (RPC)
    net::HostPort advertise;  // the node's name: how peers and the master name it
    uint16_t data_port = 0;
    std::string data_address;  // advertise host : data port
};

class NodeParts {
public:
    // `config` supplies dram_size, disk_dir, disk_size, disk_queue_depth,
    // disk_background_bytes_per_sec and the runtime knobs the data server and node read.
    NodeParts(const Config& config, MetricsRegistry& metrics);
    ~NodeParts();
    NodeParts(const NodeParts&) = delete;
    NodeParts& operator=(const NodeParts&) = delete;

    // Maps the segment and opens (recovers) the disk store.
    Status Open();
    // `serves_by_key`: ServeByKey follows (standalone), and by-key requests wait for it.
    Status StartData(const NodeAddresses& addresses, const std::string& auth_token,
                     bool serves_by_key = false,
                     const std::vector<TenantToken>& tenant_tokens = {});
    // Registers (retrying until `give_up`) and starts the work loops; from here on the data
    // server ends puts at `link` for writes that ask it to. `incarnation` is random per node
    // process (or per embedded node), never 0. `link` must outlive these parts.
    Status StartNode(MasterLink& link, const NodeAddresses& addresses, uint64_t incarnation,
                     const std::atomic<bool>& give_up);
    // Standalone: serve by-key requests (one-exchange Get and small Put, net/data_protocol.h
    // kFlagByKey) through `store`, the master in this process. After StartNode.
    void ServeByKey(MasterStore& store);
    // Serves the shared-pool channel beside the data channel (node/shm_server.h), so engines
    // on this host can hand their host pools to this node. A daemon's parts only: an embedded
    // node is in the engine's own process already.
    Status StartSharedPools(const NodeAddresses& addresses, const std::string& auth_token);
    void Stop();

    Segment& segment() { return *segment_; }
    DiskStore* disk() { return disk_.get(); }
    Node* node() { return node_.get(); }

private:
    const Config& config_;
    MetricsRegistry& metrics_;
    std::unique_ptr<Segment> segment_;
    std::unique_ptr<DiskHealth> disk_health_;  // before disk_: outlives the store's hook
    std::unique_ptr<DiskStore> disk_;
    std::unique_ptr<DataServer> data_;
    std::unique_ptr<ShmServer> shm_;
    std::unique_ptr<DataTransport> peers_;
    std::unique_ptr<Node> node_;
};

// A random non-zero node incarnation.
uint64_t NewIncarnation();

struct EmbeddedNodeOptions {
    std::string master;      // HOST:PORT of the master
    std::string host;        // advertised and listened on
    uint16_t port = 0;       // node service; the data channel is port + 1
    uint64_t dram_size = 0;  // rounded down to the segment alignment
    std::string disk_dir;    // empty: no LOCAL_DISK tier
    uint64_t disk_size = 0;  // 0: the disk_size knob's default
    std::string auth_token;
    std::chrono::milliseconds register_timeout{10000};
};

class EmbeddedNode {
public:
    // Opens the segment and disk, serves the data channel and node service, registers with
    // the master. kUnavailable if the master cannot be reached or registration does not finish
    // within register_timeout; the bind error if a port is taken.
    static Result<std::unique_ptr<EmbeddedNode>> Start(const EmbeddedNodeOptions& options);
    ~EmbeddedNode();  // Stop()

    // Leaves the master gracefully and stops every thread. Idempotent.
    void Stop();

    const std::string& name() const { return name_; }  // advertised HOST:PORT
    const std::string& data_address() const { return addresses_.data_address; }
    Segment& segment() { return parts_->segment(); }
    MetricsRegistry& metrics() { return metrics_; }

private:
    EmbeddedNode() = default;

    Config config_;
    MetricsRegistry metrics_;
    NodeAddresses addresses_;
    std::string name_;
    std::unique_ptr<MasterLink> link_;  // outlives the node's threads (declared first)
    std::unique_ptr<NodeParts> parts_;
    std::unique_ptr<RpcServer> service_;
    bool stopped_ = false;
};

}  // namespace mooncake
