// Conversions between core's plain values (core/base/master_types.h, core/base/status.h) and the Thrift
// types generated from thrift/mooncake.thrift. The daemon's handlers and the client library
// both use these, so each mapping is written once.
//
// Status <-> StoreError is the one error mapping of the wire: ThrowIfError() on the server,
// FromStoreError() on the client. Codes keep their numbers (checked at compile time).
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "core/base/master_types.h"
#include "core/base/status.h"
#include "mooncake_types.h"  // generated into the build tree

namespace mooncake::rpc {

// ---- errors ----
StoreError ToStoreError(const Status& status);
[[noreturn]] void Throw(const Status& status);  // throws StoreError
inline void ThrowIfError(const Status& status) {
    if (!status.ok()) Throw(status);
}
Status FromStoreError(const StoreError& error);
Outcome ToOutcome(const Status& status);
Status FromOutcome(const Outcome& outcome);

// ---- enums ----
Tier::type ToWire(mooncake::Tier tier);
// Unknown wire values are a malformed request: InvalidArgument.
Result<mooncake::Tier> FromWire(Tier::type tier);
ManualOutcome::type ToWire(mooncake::ManualOutcome outcome);
mooncake::ManualOutcome FromWire(ManualOutcome::type outcome);

// Where a node is, for filling Replica.node_name / data_address. Empty strings if unknown.
struct NodeLocation {
    std::string name;
    std::string data_address;
};
using NodeLocator = std::function<NodeLocation(NodeId)>;

// ---- objects ----
Replica ToWire(const ReplicaDesc& replica, const NodeLocator& locate);
// The range to write and the copies' ranges (PutConfig::replicas > 1), each located.
PutStartReply ToWire(const mooncake::PutStartReply& reply, const NodeLocator& locate);
ReplicaDesc FromWire(const Replica& replica);
// `now` turns the absolute lease expiry into a remaining duration.
ObjectInfo ToWire(const ObjectView& view, Nanos now, const NodeLocator& locate);
// The decision's time travels as its age at `now`; read back, `at` is minus that age.
PromotionDecision ToWire(const mooncake::PromotionDecision& decision, Nanos now);
mooncake::PromotionDecision FromWire(const PromotionDecision& decision);
// lease_expiry of the result is the time remaining at reply time (not an absolute time).
ObjectView FromWire(const ObjectInfo& info);
mooncake::PutConfig FromWire(const PutConfig& pin);
PutConfig ToWire(const mooncake::PutConfig& pin);
mooncake::ListOptions FromWire(const ListRequest& request);
ListRequest ToWire(const mooncake::ListOptions& options);

// ---- nodes ----
NodeSpec ToWire(const mooncake::NodeSpec& spec);
mooncake::NodeSpec FromWire(const NodeSpec& spec);
NodeInfo ToWire(const mooncake::NodeInfo& info, Nanos now);
// last_heartbeat of the result is the time since the heartbeat, at reply time.
mooncake::NodeInfo FromWire(const NodeInfo& info);
NodeHealth ToWire(const mooncake::NodeHealth& health);
mooncake::NodeHealth FromWire(const NodeHealth& health);
HeartbeatReply ToWire(const mooncake::HeartbeatReply& reply);
mooncake::HeartbeatReply FromWire(const HeartbeatReply& reply);
DiskReplicaReport ToWire(const mooncake::DiskReplicaReport& report);
mooncake::DiskReplicaReport FromWire(const DiskReplicaReport& report);
MemoryReplicaReport ToWire(const mooncake::MemoryReplicaReport& report);
InvariantReport ToWire(const mooncake::InvariantReport& report);
mooncake::InvariantReport FromWire(const InvariantReport& report);
mooncake::MemoryReplicaReport FromWire(const MemoryReplicaReport& report);
OffloadTask ToWire(const mooncake::OffloadTask& task);
mooncake::OffloadTask FromWire(const OffloadTask& task);
PromotionTask ToWire(const mooncake::PromotionTask& task, Nanos now);
// start of the result is minus the task's age at hand-out (relative to an unknown origin).
mooncake::PromotionTask FromWire(const PromotionTask& task);

// ---- admin ----
TaskInfo ToWire(const mooncake::TaskView& task);
mooncake::TaskView FromWire(const TaskInfo& task);
HotKey ToWire(const mooncake::HotKey& hot, Nanos now);
mooncake::HotKey FromWire(const HotKey& hot);

}  // namespace mooncake::rpc
