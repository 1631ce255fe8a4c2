// MasterLink: a node's view of its master, the seam core/node/node_worker.h is written against.
// Implementations:
//  - core/master/local_master_link.h calls a MasterStore in the same process (standalone role, the
//    trace replay, tests);
//  - node/rpc_master_link.cc calls a remote master through thrift/master_channel.h (node role).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/master_types.h"
#include "core/base/status.h"

namespace mooncake {

// A staged promotion range and the data channel of the node that holds it.
struct StagedRange {
    ReplicaDesc replica;
    std::string data_address;
};

class MasterLink {
public:
    virtual ~MasterLink() = default;

    virtual Result<NodeId> RegisterNode(const NodeSpec& spec) = 0;
    // `applied`: the seq of the last reply acted on (MasterStore::Heartbeat).
    virtual Result<HeartbeatReply> Heartbeat(NodeId node, uint64_t applied) = 0;
    virtual Status UnregisterNode(NodeId node) = 0;
    virtual Result<std::vector<Status>> RegisterDiskReplicas(
        NodeId node, std::span<const DiskReplicaReport> reports) = 0;
    virtual Result<std::vector<Status>> RegisterMemoryReplicas(
        NodeId node, std::span<const MemoryReplicaReport> reports) = 0;
    virtual Status ReportDiskReplicaDropped(NodeId node, std::string_view key,
                                            Generation generation) = 0;
    // The node's own disk figures and corruption count (`check` compares them).
    virtual Status ReportNodeHealth(NodeId node, const NodeHealth& health) = 0;

    // Long-polls: return as soon as work exists, or after `wait` with an empty list.
    virtual Result<std::vector<OffloadTask>> OffloadObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) = 0;
    virtual Status NotifyOffloadSuccess(NodeId node, std::string_view key, Generation gen) = 0;
    virtual Status NotifyOffloadFailure(NodeId node, std::string_view key, Generation gen) = 0;

    virtual Result<std::vector<PromotionTask>> PromotionObjectHeartbeat(
        NodeId node, size_t max, std::chrono::milliseconds wait) = 0;
    virtual Result<StagedRange> PromotionAllocStart(NodeId node, std::string_view key,
                                                    Generation gen, uint64_t size) = 0;
    virtual Status NotifyPromotionSuccess(NodeId node, std::string_view key, Generation gen) = 0;
    virtual Status NotifyPromotionFailure(NodeId node, std::string_view key, Generation gen) = 0;

    // Ends a client's put on its behalf (MasterStore::PutEnd): the data server calls it after
    // a write that asked for it (net/data_protocol.h kFlagEndPut) has landed, so the client
    // saves its own PutEnd round trip. Idempotent, as MasterStore::PutEnd is.
    virtual Status PutEnd(ClientId client, std::string_view key, Generation gen) = 0;
};

}  // namespace mooncake
