// MasterService: the Thrift handler of the master (and standalone) role. It adapts
// MasterStore to RPC and holds no policy: each method checks the session, converts, calls
// core, converts back (errors through rpc::Throw, the wire's one error mapping), and times
// itself into rpc_request_seconds{method}.
//
// Thread-safety: called from many connection threads at once; MasterStore is thread-safe
// and the handler's own state is immutable after construction or atomic.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "MasterService.h"
#include "core/master/master_store.h"
#include "node/access.h"
#include "thrift/convert.h"
#include "thrift/rpc_limits.h"

namespace mooncake {

class Histogram;
class NodeDirectory;

struct MasterServiceOptions {
    std::string role;        // "master" or "standalone", told to clients in Hello
    std::string auth_token;  // empty: every session may do everything (node/access.h)
    // Tenants' own tokens: a session holding one acts in that tenant only (node/access.h).
    std::vector<TenantToken> tenant_tokens;
    uint32_t epoch = 0;      // high bits of client ids (unique across master restarts)
    std::string config_file; // --config, for TuneSet(persist); empty if none
    // Longest long-poll wait honoured (the fuzz target sets 0: a real-time wait only slows it).
    int32_t max_long_poll_ms = rpc::kMaxLongPollMs;
    // Standalone: scrubs the in-process node's disk (Scrub). Empty for a master, which asks
    // each node's NodeService instead.
    std::function<rpc::ScrubReply()> local_scrub;
    // Standalone: the in-process node's data channel, told to clients in Hello: it serves
    // one-exchange by-key Gets and Puts (net/data_protocol.h kFlagByKey). Empty for a master.
    std::string by_key_data_address;
    // Master high availability (daemon/ha): asked before every call but Hello, with the
    // method's name; a non-ok Status (kNotLeader: a standby, or a leader whose lease lapsed)
    // refuses the call.
    std::function<Status(std::string_view method)> gate;
    // Called with the knobs a TuneSet applied (HA keeps them in etcd for the next leader).
    std::function<Status(const std::vector<std::pair<std::string, std::string>>&)> on_tuned;
    // Whether tenant policy changes are written somewhere (--tenant_policy_file, or etcd with
    // HA); false: TenantSet/TenantRemove say they are kept in memory only.
    bool tenant_policy_persisted = false;
};

class MasterService final : public rpc::MasterServiceIf {
public:
    MasterService(MasterServiceOptions options, MasterStore& store, NodeDirectory& directory);

    void Hello(rpc::HelloReply& out, int32_t protocol_version, const std::string& auth_token,
               const std::string& client_name, const std::string& tenant) override;

    void PutStart(rpc::PutStartReply& out, int64_t client_id, const std::string& key,
                  int64_t size, int64_t preferred_node, const rpc::PutConfig& pin) override;
    void PutEnd(int64_t client_id, const std::string& key, int64_t generation) override;
    void PutRevoke(int64_t client_id, const std::string& key, int64_t generation) override;
    void GetReplicaList(rpc::ObjectInfo& out, const std::string& key) override;
    void Remove(const std::string& key, bool force) override;
    bool Exists(const std::string& key, bool prefetch) override;
    void BatchPutStart(std::vector<rpc::PutStartResult>& out, int64_t client_id,
                       const std::vector<rpc::PutStartItem>& items,
                       int64_t preferred_node) override;
    void BatchPutEnd(std::vector<rpc::Outcome>& out, int64_t client_id,
                     const std::vector<rpc::KeyGeneration>& items) override;
    void BatchPutRevoke(std::vector<rpc::Outcome>& out, int64_t client_id,
                        const std::vector<rpc::KeyGeneration>& items) override;
    void BatchGetReplicaList(std::vector<rpc::ObjectResult>& out,
                             const std::vector<std::string>& keys) override;
    void BatchRemove(std::vector<rpc::Outcome>& out, const std::vector<std::string>& keys,
                     bool force) override;
    void BatchExists(std::vector<rpc::ExistsResult>& out, const std::vector<std::string>& keys,
                     bool prefetch) override;
    void RemoveByPrefix(rpc::RemovePrefixReply& out, const std::string& prefix,
                        bool force) override;

    int64_t RegisterNode(const rpc::NodeSpec& spec) override;
    void Heartbeat(rpc::HeartbeatReply& out, int64_t node, int64_t applied) override;
    void UnregisterNode(int64_t node) override;
    void RegisterDiskReplicas(std::vector<rpc::Outcome>& out, int64_t node,
                              const std::vector<rpc::DiskReplicaReport>& reports) override;
    void RegisterMemoryReplicas(std::vector<rpc::Outcome>& out, int64_t node,
                                const std::vector<rpc::MemoryReplicaReport>& reports) override;
    void ReportNodeHealth(int64_t node, const rpc::NodeHealth& health) override;
    void ReportDiskReplicaDropped(int64_t node, const std::string& key,
                                  int64_t generation) override;
    void OffloadObjectHeartbeat(std::vector<rpc::OffloadTask>& out, int64_t node, int32_t max,
                                int32_t wait_ms) override;
    void NotifyOffloadSuccess(int64_t node, const std::string& key, int64_t generation) override;
    void NotifyOffloadFailure(int64_t node, const std::string& key, int64_t generation) override;
    void PromotionObjectHeartbeat(std::vector<rpc::PromotionTask>& out, int64_t node,
                                  int32_t max, int32_t wait_ms) override;
    void PromotionAllocStart(rpc::Replica& out, int64_t node, const std::string& key,
                             int64_t generation, int64_t size) override;
    void NotifyPromotionSuccess(int64_t node, const std::string& key,
                                int64_t generation) override;
    void NotifyPromotionFailure(int64_t node, const std::string& key,
                                int64_t generation) override;

    void Stat(rpc::ObjectInfo& out, const std::string& key) override;
    void List(rpc::ListReply& out, const rpc::ListRequest& request) override;
    void Nodes(std::vector<rpc::NodeInfo>& out) override;
    void Tasks(std::vector<rpc::TaskInfo>& out) override;
    void Hot(std::vector<rpc::HotKey>& out, int32_t limit) override;
    void TuneGet(std::vector<rpc::KnobInfo>& out) override;
    void TuneSet(std::vector<rpc::KnobInfo>& out,
                 const std::vector<rpc::KnobAssignment>& assignments, bool persist) override;
    void MetricsText(std::string& out) override;
    void Promote(std::vector<rpc::ManualResult>& out, const std::vector<std::string>& keys,
                 bool force) override;
    void Offload(std::vector<rpc::ManualResult>& out,
                 const std::vector<std::string>& keys) override;
    void Evict(std::vector<rpc::ManualResult>& out, const std::vector<std::string>& keys) override;
    void CheckInvariants(rpc::InvariantReport& out) override;
    void Scrub(std::vector<rpc::ScrubReply>& out, int64_t node) override;
    void TenantList(rpc::TenantReport& out) override;
    void TenantSet(rpc::TenantReport& out, const std::string& tenant, int64_t memory_quota,
                   int64_t disk_quota) override;
    void TenantRemove(rpc::TenantReport& out, const std::string& tenant, bool purge) override;

    // The knob table with current values (also served by the node role's tooling).
    static std::vector<rpc::KnobInfo> KnobTableOf(const Config& config);

private:
    class Call;  // session check + latency timer of one handler invocation
    Histogram& LatencyOf(std::string_view method);
    rpc::NodeLocator Locator();

    const MasterServiceOptions options_;
    MasterStore& store_;
    NodeDirectory& directory_;
    std::unordered_map<std::string_view, Histogram*> latency_;  // filled in the constructor
    std::atomic<uint64_t> next_client_{1};
};

}  // namespace mooncake
