#include "node/embedded_node.h"

#include <random>
#include <thread>

#include "NodeService.h"
#include "core/disk/disk_store.h"
#include "node/data_server.h"
#include "node/disk_health.h"
#include "node/rpc_master_link.h"
#include "node/node.h"
#include "node/node_service.h"
#include "node/rpc_server.h"
#include "node/segment.h"
#include "node/shm_server.h"
#include "spdlog/spdlog.h"
#include "net/data_transport.h"
#include "thrift/master_channel.h"

namespace mooncake {
namespace {
constexpr int kMaxDataConnections = 512;
constexpr int kMaxRpcConnections = 1024;
}  // namespace

uint64_t NewIncarnation() {
    std::random_device rd;
    uint64_t v = 0;
    while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    return v;
}

// ---------------- NodeParts ----------------

NodeParts::NodeParts(const Config& config, MetricsRegistry& metrics)
    : config_(config), metrics_(metrics) {}

NodeParts::~NodeParts() { Stop(); }

Status NodeParts::Open() {
    uint64_t dram = config_.dram_size() / kSegmentAlignment * kSegmentAlignment;
    auto segment = Segment::Create(dram);
    if (!segment.ok()) return segment.status();
    segment_ = std::move(*segment);
    if (!config_.disk_dir().empty()) {
        DiskStoreOptions options;
        options.dir = config_.disk_dir();
        options.capacity = config_.disk_size();
        options.queue_depth = static_cast<int>(config_.disk_queue_depth());
        options.background_bytes_per_sec = config_.disk_background_bytes_per_sec();
        // Counters exist (at 0, every kind) before recovery reports into them.
        disk_health_ = std::make_unique<DiskHealth>(metrics_);
        options.on_corruption = disk_health_->Hook();
        auto disk = DiskStore::Open(options);
        if (!disk.ok()) {
            return Status(disk.status().code(),
                          "disk store at '" + options.dir + "': " + disk.status().message());
        }
        disk_ = std::move(*disk);
        disk_health_->RecordRecovery(disk_->stats());
        spdlog::info("disk store at {}: {} objects recovered, {} of {} used", config_.disk_dir(),
                     disk_->object_count(), FormatSize(disk_->used()),
                     FormatSize(disk_->capacity()));
    }
    if (segment_->capacity() == 0 && disk_ == nullptr) {
        return Status::InvalidArgument("a node needs --dram_size > 0 or --disk_dir");
    }
    return Status::Ok();
}

Status NodeParts::StartData(const NodeAddresses& addresses, const std::string& auth_token,
                            bool serves_by_key, const std::vector<TenantToken>& tenant_tokens) {
    DataServerOptions options;
    options.local_master_follows = serves_by_key;
    options.listen = {addresses.listen.host, addresses.data_port};
    options.auth_token = auth_token;
    options.tenant_tokens = tenant_tokens;
    options.max_connections = kMaxDataConnections;
    data_ = std::make_unique<DataServer>(options, *segment_, disk_.get(), config_, metrics_);
    Status st = data_->Start();
    if (!st.ok()) {
        return Status(st.code(),
                      "data channel on " + options.listen.ToString() + ": " + st.message());
    }
    TcpTransportOptions peers;
    peers.auth_token = auth_token;
    peers_ = NewTcpTransport(peers);
    return Status::Ok();
}

Status NodeParts::StartNode(MasterLink& link, const NodeAddresses& addresses,
                            uint64_t incarnation, const std::atomic<bool>& give_up) {
    NodeOptions options;
    options.spec.name = addresses.advertise.ToString();
    options.spec.data_address = addresses.data_address;
    options.spec.segment_capacity = segment_->capacity();
    options.spec.disk_capacity = disk_ ? disk_->capacity() : 0;
    options.spec.incarnation = incarnation;
    options.disk_health = disk_health_.get();
    // Writes that ask the node to end their put (net/data_protocol.h kFlagEndPut) end it at
    // this master: in-process in standalone, over RPC in node role.
    data_->SetPutEndLink(&link);
    node_ = std::make_unique<Node>(options, link, *segment_, disk_.get(), *peers_, config_,
                                   metrics_);
    MC_RETURN_IF_ERROR(node_->Start(give_up));
    // Reads of disk objects feed the promotions of them waiting on this node.
    data_->SetDiskReadSink(node_.get());
    if (shm_) shm_->SetDiskReadSink(node_.get());
    return Status::Ok();
}

void NodeParts::ServeByKey(MasterStore& store) {
    Node* node = node_.get();
    data_->SetLocalMaster(&store, [node] { return node->id(); });
}

Status NodeParts::StartSharedPools(const NodeAddresses& addresses,
                                   const std::string& auth_token) {
    ShmServerOptions options;
    options.data_port = addresses.data_port;
    options.auth_token = auth_token;
    shm_ = std::make_unique<ShmServer>(options, *segment_, disk_.get(), config_, metrics_);
    return shm_->Start();
}

void NodeParts::Stop() {
    if (shm_) shm_->Stop();
    if (node_) node_->Stop();  // offers that come after it are declined (TakeDiskRead)
    if (data_) data_->Stop();
}

// ---------------- EmbeddedNode ----------------

Result<std::unique_ptr<EmbeddedNode>> EmbeddedNode::Start(const EmbeddedNodeOptions& options) {
    std::unique_ptr<EmbeddedNode> self(new EmbeddedNode());
    Config& config = self->config_;
    MC_RETURN_IF_ERROR(config.Set("dram_size", std::to_string(options.dram_size)));
    MC_RETURN_IF_ERROR(config.Set("disk_dir", options.disk_dir));
    if (options.disk_size > 0) {
        MC_RETURN_IF_ERROR(config.Set("disk_size", std::to_string(options.disk_size)));
    }
    NodeAddresses& a = self->addresses_;
    a.listen = {options.host, options.port};
    a.advertise = a.listen;
    a.data_port = static_cast<uint16_t>(options.port + 1);
    a.data_address = net::HostPort{options.host, a.data_port}.ToString();
    self->name_ = a.advertise.ToString();

    self->parts_ = std::make_unique<NodeParts>(config, self->metrics_);
    MC_RETURN_IF_ERROR(self->parts_->Open());
    MC_RETURN_IF_ERROR(self->parts_->StartData(a, options.auth_token));

    RpcOptions rpc;
    rpc.auth_token = options.auth_token;
    rpc.client_name = "node " + self->name_;
    auto link = NewRpcMasterLink(options.master, rpc);
    if (!link.ok()) return link.status();
    self->link_ = std::move(*link);

    // Node::Start retries registration until told to give up; an embedding process waits a
    // bounded time instead of forever.
    std::atomic<bool> give_up{false};
    std::thread watchdog([&give_up, timeout = options.register_timeout] {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!give_up.load() && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        give_up.store(true);
    });
    Status st = self->parts_->StartNode(*self->link_, a, NewIncarnation(), give_up);
    give_up.store(true);
    watchdog.join();
    if (!st.ok()) return st;

    NodeServiceOptions service_options{self->name_, a.data_address, options.master,
                                       options.auth_token};
    auto handler = std::make_shared<NodeService>(service_options, *self->parts_->node(),
                                                 self->parts_->segment(),
                                                 self->parts_->disk(), self->metrics_);
    auto server = RpcServer::Start(std::make_shared<rpc::NodeServiceProcessor>(handler),
                                   {a.listen, kMaxRpcConnections});
    if (!server.ok()) return server.status();
    self->service_ = std::move(*server);
    spdlog::info("embedded node {} (data {}) joined master {}", self->name_, a.data_address,
                 options.master);
    return self;
}

EmbeddedNode::~EmbeddedNode() { Stop(); }

void EmbeddedNode::Stop() {
    if (stopped_) return;
    stopped_ = true;
    if (service_) service_->Stop();
    if (parts_) parts_->Stop();
}

}  // namespace mooncake
