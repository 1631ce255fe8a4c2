#include "thrift/convert.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace mooncake::rpc {
namespace {

// The IDL's ErrorCode must keep core's StatusCode numbers: a code travels as its number.
#define MC_SAME_CODE(core, wire) \
    static_assert(static_cast<int>(StatusCode::core) == static_cast<int>(ErrorCode::wire))
MC_SAME_CODE(kOk, OK);
MC_SAME_CODE(kNotFound, NOT_FOUND);
MC_SAME_CODE(kAlreadyExists, ALREADY_EXISTS);
MC_SAME_CODE(kNoSpace, NO_SPACE);
MC_SAME_CODE(kInvalidArgument, INVALID_ARGUMENT);
MC_SAME_CODE(kHasLease, HAS_LEASE);
MC_SAME_CODE(kNotReady, NOT_READY);
MC_SAME_CODE(kIllegalClient, ILLEGAL_CLIENT);
MC_SAME_CODE(kStaleGeneration, STALE_GENERATION);
MC_SAME_CODE(kUnknownNode, UNKNOWN_NODE);
MC_SAME_CODE(kBusy, BUSY);
MC_SAME_CODE(kIoError, IO_ERROR);
MC_SAME_CODE(kCorruption, CORRUPTION);
MC_SAME_CODE(kTimeout, TIMEOUT);
MC_SAME_CODE(kUnavailable, UNAVAILABLE);
MC_SAME_CODE(kInternal, INTERNAL);
MC_SAME_CODE(kNotLeader, NOT_LEADER);
#undef MC_SAME_CODE

constexpr int kLastCode = static_cast<int>(StatusCode::kNotLeader);

StatusCode CodeFromWire(ErrorCode::type code) {
    int n = static_cast<int>(code);
    if (n < 0 || n > kLastCode) return StatusCode::kInternal;
    return static_cast<StatusCode>(n);
}

int64_t ToMicros(Nanos d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

}  // namespace

StoreError ToStoreError(const Status& status) {
    StoreError e;
    e.code = static_cast<ErrorCode::type>(static_cast<int>(status.code()));
    e.message = status.message();
    return e;
}

void Throw(const Status& status) { throw ToStoreError(status); }

Status FromStoreError(const StoreError& error) {
    StatusCode code = CodeFromWire(error.code);
    if (code == StatusCode::kOk) return Status::Internal("error reply with code OK");
    return Status(code, error.message);
}

Outcome ToOutcome(const Status& status) {
    Outcome o;
    o.code = static_cast<ErrorCode::type>(static_cast<int>(status.code()));
    o.message = status.message();
    return o;
}

Status FromOutcome(const Outcome& outcome) {
    StatusCode code = CodeFromWire(outcome.code);
    if (code == StatusCode::kOk) return Status::Ok();
    return Status(code, outcome.message);
}

Tier::type ToWire(mooncake::Tier tier) {
    return tier == mooncake::Tier::kMemory ? Tier::MEMORY : Tier::LOCAL_DISK;
}

Result<mooncake::Tier> FromWire(Tier::type tier) {
    switch (tier) {
        case Tier::MEMORY: return mooncake::Tier::kMemory;
        case Tier::LOCAL_DISK: return mooncake::Tier::kLocalDisk;
    }
    return Status::InvalidArgument("unknown tier " + std::to_string(static_cast<int>(tier)));
}

ManualOutcome::type ToWire(mooncake::ManualOutcome outcome) {
    switch (outcome) {
        case mooncake::ManualOutcome::kQueued: return ManualOutcome::QUEUED;
        case mooncake::ManualOutcome::kDone: return ManualOutcome::DONE;
        case mooncake::ManualOutcome::kAlreadyThere: return ManualOutcome::ALREADY_THERE;
        case mooncake::ManualOutcome::kInFlight: return ManualOutcome::IN_FLIGHT;
    }
    return ManualOutcome::DONE;
}

mooncake::ManualOutcome FromWire(ManualOutcome::type outcome) {
    switch (outcome) {
        case ManualOutcome::QUEUED: return mooncake::ManualOutcome::kQueued;
        case ManualOutcome::DONE: return mooncake::ManualOutcome::kDone;
        case ManualOutcome::ALREADY_THERE: return mooncake::ManualOutcome::kAlreadyThere;
        case ManualOutcome::IN_FLIGHT: return mooncake::ManualOutcome::kInFlight;
    }
    return mooncake::ManualOutcome::kDone;
}

Replica ToWire(const ReplicaDesc& r, const NodeLocator& locate) {
    Replica out;
    out.tier = ToWire(r.tier);
    out.state = r.state == mooncake::ReplicaState::kComplete ? ReplicaState::COMPLETE
                                                             : ReplicaState::PROCESSING;
    out.node = static_cast<int64_t>(r.node);
    out.offset = static_cast<int64_t>(r.offset);
    out.size = static_cast<int64_t>(r.size);
    out.pins = static_cast<int32_t>(r.pins);
    if (locate) {
        NodeLocation where = locate(r.node);
        out.node_name = std::move(where.name);
        out.data_address = std::move(where.data_address);
    }
    return out;
}

ReplicaDesc FromWire(const Replica& r) {
    ReplicaDesc out;
    out.tier = r.tier == Tier::LOCAL_DISK ? mooncake::Tier::kLocalDisk : mooncake::Tier::kMemory;
    out.state = r.state == ReplicaState::COMPLETE ? mooncake::ReplicaState::kComplete
                                                  : mooncake::ReplicaState::kProcessing;
    out.node = static_cast<NodeId>(r.node);
    out.offset = static_cast<uint64_t>(r.offset);
    out.size = static_cast<uint64_t>(r.size);
    out.pins = static_cast<uint32_t>(r.pins);
    return out;
}

PromotionDecision ToWire(const mooncake::PromotionDecision& d, Nanos now) {
    PromotionDecision out;
    out.outcome = std::string(PromotionOutcomeName(d.outcome));
    out.reads = static_cast<int32_t>(d.reads);
    out.threshold = static_cast<int32_t>(d.threshold);
    out.age_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::max(now - d.at, Nanos(0))).count();
    return out;
}

mooncake::PromotionDecision FromWire(const PromotionDecision& d) {
    mooncake::PromotionDecision out;
    // An unknown outcome name (a newer master) reads as the closest generic refusal.
    out.outcome = PromotionOutcome::kStale;
    for (size_t o = 0; o < kPromotionOutcomes; ++o) {
        auto outcome = static_cast<PromotionOutcome>(o);
        if (PromotionOutcomeName(outcome) == d.outcome) out.outcome = outcome;
    }
    out.reads = static_cast<uint32_t>(std::max(0, d.reads));
    out.threshold = static_cast<uint32_t>(std::max(0, d.threshold));
    out.at = -std::chrono::milliseconds(d.age_ms);  // relative to now = 0, as lease_expiry
    return out;
}

PutStartReply ToWire(const mooncake::PutStartReply& r, const NodeLocator& locate) {
    PutStartReply out;
    out.generation = static_cast<int64_t>(r.generation);
    out.replica = ToWire(r.replica, locate);
    if (!r.copies.empty()) {
        std::vector<Replica> copies;
        copies.reserve(r.copies.size());
        for (const ReplicaDesc& copy : r.copies) copies.push_back(ToWire(copy, locate));
        out.__set_copies(std::move(copies));
    }
    return out;
}

ObjectInfo ToWire(const ObjectView& v, Nanos now, const NodeLocator& locate) {
    ObjectInfo out;
    out.key = v.key;
    out.generation = static_cast<int64_t>(v.generation);
    out.size = static_cast<int64_t>(v.size);
    out.replicas.reserve(v.replicas.size());
    for (const ReplicaDesc& r : v.replicas) out.replicas.push_back(ToWire(r, locate));
    Nanos remaining = v.lease_expiry > now ? v.lease_expiry - now : Nanos(0);
    out.lease_remaining_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(remaining).count();
    out.recency = static_cast<int64_t>(v.recency);
    out.sketch_estimate = static_cast<int32_t>(v.sketch_estimate);
    out.promotion_in_flight = v.promotion_in_flight;
    out.offload_in_flight = v.offload_in_flight;
    if (v.last_promotion) out.__set_last_promotion(ToWire(*v.last_promotion, now));
    if (v.soft_pinned) {
        out.__set_soft_pinned(true);
        const Nanos left = v.soft_pin_expiry > now ? v.soft_pin_expiry - now : Nanos(0);
        out.__set_soft_pin_remaining_ms(
            std::chrono::duration_cast<std::chrono::milliseconds>(left).count());
    }
    if (v.hard_pinned) out.__set_hard_pinned(true);
    if (!v.group.empty()) out.__set_group(v.group);
    return out;
}

mooncake::PutConfig FromWire(const PutConfig& pin) {
    mooncake::PutConfig out;
    out.soft = pin.soft;
    out.soft_ttl = std::chrono::milliseconds(std::max<int64_t>(0, pin.soft_ttl_ms));
    out.hard = pin.hard;
    if (pin.__isset.group) out.group = pin.group;
    // A negative count is kept as 0, which PutStart refuses (not read as "one").
    if (pin.__isset.replicas) out.replicas = static_cast<uint32_t>(std::max(0, pin.replicas));
    if (pin.__isset.copy_nodes) {
        for (int64_t id : pin.copy_nodes) out.copy_nodes.push_back(static_cast<NodeId>(id));
    }
    return out;
}

PutConfig ToWire(const mooncake::PutConfig& pin) {
    PutConfig out;
    out.soft = pin.soft;
    out.soft_ttl_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(pin.soft_ttl).count();
    out.hard = pin.hard;
    if (!pin.group.empty()) out.__set_group(pin.group);
    if (pin.replicas != 1) {
        out.__set_replicas(static_cast<int32_t>(
            std::min<uint32_t>(pin.replicas, std::numeric_limits<int32_t>::max())));
    }
    if (!pin.copy_nodes.empty()) {
        out.__set_copy_nodes(std::vector<int64_t>(pin.copy_nodes.begin(), pin.copy_nodes.end()));
    }
    return out;
}

ObjectView FromWire(const ObjectInfo& info) {
    ObjectView out;
    out.key = info.key;
    out.generation = static_cast<Generation>(info.generation);
    out.size = static_cast<uint64_t>(info.size);
    out.replicas.reserve(info.replicas.size());
    for (const Replica& r : info.replicas) out.replicas.push_back(FromWire(r));
    out.lease_expiry = std::chrono::milliseconds(info.lease_remaining_ms);
    out.recency = static_cast<uint64_t>(info.recency);
    out.sketch_estimate = static_cast<uint32_t>(info.sketch_estimate);
    out.promotion_in_flight = info.promotion_in_flight;
    out.offload_in_flight = info.offload_in_flight;
    if (info.__isset.last_promotion) out.last_promotion = FromWire(info.last_promotion);
    // As lease_expiry: relative to now = 0.
    out.soft_pinned = info.__isset.soft_pinned && info.soft_pinned;
    if (out.soft_pinned) out.soft_pin_expiry = std::chrono::milliseconds(info.soft_pin_remaining_ms);
    out.hard_pinned = info.__isset.hard_pinned && info.hard_pinned;
    if (info.__isset.group) out.group = info.group;
    return out;
}

mooncake::ListOptions FromWire(const ListRequest& request) {
    mooncake::ListOptions out;
    if (request.__isset.tier) {
        auto tier = FromWire(request.tier);
        if (tier.ok()) out.tier = *tier;
    }
    out.prefix = request.prefix;
    out.start_after = request.start_after;
    out.limit = request.limit <= 0 ? 0 : static_cast<size_t>(request.limit);
    return out;
}

ListRequest ToWire(const mooncake::ListOptions& options) {
    ListRequest out;
    if (options.tier) out.__set_tier(ToWire(*options.tier));
    out.__set_prefix(options.prefix);
    out.__set_start_after(options.start_after);
    out.__set_limit(static_cast<int32_t>(std::min<size_t>(options.limit, INT32_MAX)));
    return out;
}

NodeSpec ToWire(const mooncake::NodeSpec& spec) {
    NodeSpec out;
    out.name = spec.name;
    out.data_address = spec.data_address;
    out.segment_capacity = static_cast<int64_t>(spec.segment_capacity);
    out.disk_capacity = static_cast<int64_t>(spec.disk_capacity);
    if (spec.incarnation != 0) out.__set_incarnation(static_cast<int64_t>(spec.incarnation));
    if (spec.holds_memory) out.__set_holds_memory(true);
    return out;
}

mooncake::NodeSpec FromWire(const NodeSpec& spec) {
    mooncake::NodeSpec out;
    out.name = spec.name;
    out.data_address = spec.data_address;
    out.segment_capacity = static_cast<uint64_t>(std::max<int64_t>(0, spec.segment_capacity));
    out.disk_capacity = static_cast<uint64_t>(std::max<int64_t>(0, spec.disk_capacity));
    if (spec.__isset.incarnation) out.incarnation = static_cast<uint64_t>(spec.incarnation);
    out.holds_memory = spec.__isset.holds_memory && spec.holds_memory;
    return out;
}

NodeInfo ToWire(const mooncake::NodeInfo& info, Nanos now) {
    NodeInfo out;
    out.id = static_cast<int64_t>(info.id);
    out.spec = ToWire(info.spec);
    out.segment_used = static_cast<int64_t>(info.segment_used);
    out.disk_used = static_cast<int64_t>(info.disk_used);
    out.memory_objects = static_cast<int64_t>(info.memory_objects);
    out.disk_objects = static_cast<int64_t>(info.disk_objects);
    Nanos since = now > info.last_heartbeat ? now - info.last_heartbeat : Nanos(0);
    out.ms_since_heartbeat = std::chrono::duration_cast<std::chrono::milliseconds>(since).count();
    if (info.health.reported) out.__set_health(ToWire(info.health));
    out.__set_segment_state(std::string(SegmentStateName(info.segment_state)));
    out.__set_reporting(info.reporting);
    return out;
}

NodeHealth ToWire(const mooncake::NodeHealth& health) {
    NodeHealth out;
    out.disk_used = static_cast<int64_t>(health.disk_used);
    out.disk_objects = static_cast<int64_t>(health.disk_objects);
    out.disk_corruptions = static_cast<int64_t>(health.disk_corruptions);
    return out;
}

mooncake::NodeHealth FromWire(const NodeHealth& health) {
    mooncake::NodeHealth out;
    out.reported = true;
    out.disk_used = static_cast<uint64_t>(std::max<int64_t>(0, health.disk_used));
    out.disk_objects = static_cast<uint64_t>(std::max<int64_t>(0, health.disk_objects));
    out.disk_corruptions = static_cast<uint64_t>(std::max<int64_t>(0, health.disk_corruptions));
    return out;
}

mooncake::NodeInfo FromWire(const NodeInfo& info) {
    mooncake::NodeInfo out;
    out.id = static_cast<NodeId>(info.id);
    out.spec = FromWire(info.spec);
    out.segment_used = static_cast<uint64_t>(info.segment_used);
    out.disk_used = static_cast<uint64_t>(info.disk_used);
    out.memory_objects = static_cast<uint64_t>(info.memory_objects);
    out.disk_objects = static_cast<uint64_t>(info.disk_objects);
    out.last_heartbeat = std::chrono::milliseconds(info.ms_since_heartbeat);
    if (info.__isset.health) out.health = FromWire(info.health);
    for (SegmentState state : {SegmentState::kDraining, SegmentState::kDrained}) {
        if (info.__isset.segment_state && info.segment_state == SegmentStateName(state)) {
            out.segment_state = state;
        }
    }
    out.reporting = info.__isset.reporting && info.reporting;
    return out;
}

HeartbeatReply ToWire(const mooncake::HeartbeatReply& reply) {
    HeartbeatReply out;
    out.released.reserve(reply.released.size());
    for (const auto& r : reply.released) {
        ReleasedRange w;
        w.key = r.key;
        w.generation = static_cast<int64_t>(r.generation);
        w.offset = static_cast<int64_t>(r.offset);
        w.size = static_cast<int64_t>(r.size);
        out.released.push_back(std::move(w));
    }
    out.disk_deletes.reserve(reply.disk_deletes.size());
    for (const auto& d : reply.disk_deletes) {
        DiskDelete w;
        w.key = d.key;
        w.generation = static_cast<int64_t>(d.generation);
        out.disk_deletes.push_back(std::move(w));
    }
    out.seq = static_cast<int64_t>(reply.seq);
    return out;
}

mooncake::HeartbeatReply FromWire(const HeartbeatReply& reply) {
    mooncake::HeartbeatReply out;
    out.released.reserve(reply.released.size());
    for (const auto& r : reply.released) {
        out.released.push_back({r.key, static_cast<Generation>(r.generation),
                                static_cast<uint64_t>(r.offset), static_cast<uint64_t>(r.size)});
    }
    out.disk_deletes.reserve(reply.disk_deletes.size());
    for (const auto& d : reply.disk_deletes) {
        out.disk_deletes.push_back({d.key, static_cast<Generation>(d.generation)});
    }
    out.seq = static_cast<uint64_t>(reply.seq);
    return out;
}

DiskReplicaReport ToWire(const mooncake::DiskReplicaReport& report) {
    DiskReplicaReport out;
    out.key = report.key;
    out.generation = static_cast<int64_t>(report.generation);
    out.size = static_cast<int64_t>(report.size);
    return out;
}

mooncake::DiskReplicaReport FromWire(const DiskReplicaReport& report) {
    return {report.key, static_cast<Generation>(report.generation),
            static_cast<uint64_t>(report.size)};
}

MemoryReplicaReport ToWire(const mooncake::MemoryReplicaReport& report) {
    MemoryReplicaReport out;
    out.key = report.key;
    out.generation = static_cast<int64_t>(report.generation);
    out.size = static_cast<int64_t>(report.size);
    out.offset = static_cast<int64_t>(report.offset);
    return out;
}

mooncake::MemoryReplicaReport FromWire(const MemoryReplicaReport& report) {
    return {report.key, static_cast<Generation>(report.generation),
            static_cast<uint64_t>(report.size), static_cast<uint64_t>(report.offset)};
}

InvariantReport ToWire(const mooncake::InvariantReport& r) {
    InvariantReport out;
    out.ok = r.ok();
    out.violations = r.violations;
    out.objects = static_cast<int64_t>(r.objects);
    out.dram_used = static_cast<int64_t>(r.dram_used);
    out.dram_allocated = static_cast<int64_t>(r.dram_allocated);
    out.pins = static_cast<int64_t>(r.pins);
    out.source_pins_expected = static_cast<int64_t>(r.source_pins_expected);
    out.promotion_tasks = static_cast<int64_t>(r.promotion_tasks);
    out.offload_tasks = static_cast<int64_t>(r.offload_tasks);
    return out;
}

mooncake::InvariantReport FromWire(const InvariantReport& r) {
    mooncake::InvariantReport out;
    out.violations = r.violations;
    // A peer that says "not ok" without saying why still fails the check.
    if (!r.ok && out.violations.empty()) out.violations.push_back("master reported a violation");
    out.objects = static_cast<uint64_t>(r.objects);
    out.dram_used = static_cast<uint64_t>(r.dram_used);
    out.dram_allocated = static_cast<uint64_t>(r.dram_allocated);
    out.pins = static_cast<uint64_t>(r.pins);
    out.source_pins_expected = static_cast<uint64_t>(r.source_pins_expected);
    out.promotion_tasks = static_cast<uint64_t>(r.promotion_tasks);
    out.offload_tasks = static_cast<uint64_t>(r.offload_tasks);
    return out;
}

OffloadTask ToWire(const mooncake::OffloadTask& task) {
    OffloadTask out;
    out.key = task.key;
    out.generation = static_cast<int64_t>(task.generation);
    out.size = static_cast<int64_t>(task.size);
    out.source_offset = static_cast<int64_t>(task.source_offset);
    return out;
}

mooncake::OffloadTask FromWire(const OffloadTask& task) {
    return {task.key, static_cast<Generation>(task.generation), static_cast<uint64_t>(task.size),
            static_cast<uint64_t>(task.source_offset)};
}

PromotionTask ToWire(const mooncake::PromotionTask& task, Nanos now) {
    PromotionTask out;
    out.key = task.key;
    out.generation = static_cast<int64_t>(task.generation);
    out.size = static_cast<int64_t>(task.size);
    out.holder = static_cast<int64_t>(task.holder);
    out.age_us = now > task.start ? ToMicros(now - task.start) : 0;
    return out;
}

mooncake::PromotionTask FromWire(const PromotionTask& task) {
    mooncake::PromotionTask out;
    out.key = task.key;
    out.generation = static_cast<Generation>(task.generation);
    out.size = static_cast<uint64_t>(task.size);
    out.holder = static_cast<NodeId>(task.holder);
    out.start = -std::chrono::microseconds(task.age_us);
    return out;
}

TaskInfo ToWire(const mooncake::TaskView& task) {
    TaskInfo out;
    out.kind = task.kind == mooncake::TaskKind::kOffload ? rpc::TaskKind::OFFLOAD : rpc::TaskKind::PROMOTION;
    out.key = task.key;
    out.generation = static_cast<int64_t>(task.generation);
    out.size = static_cast<int64_t>(task.size);
    out.node = static_cast<int64_t>(task.node);
    out.age_us = ToMicros(task.age);
    out.delivered = task.delivered;
    out.staged = task.staged;
    return out;
}

mooncake::TaskView FromWire(const TaskInfo& task) {
    mooncake::TaskView out;
    out.kind = task.kind == rpc::TaskKind::OFFLOAD ? mooncake::TaskKind::kOffload
                                                   : mooncake::TaskKind::kPromotion;
    out.key = task.key;
    out.generation = static_cast<Generation>(task.generation);
    out.size = static_cast<uint64_t>(task.size);
    out.node = static_cast<NodeId>(task.node);
    out.age = std::chrono::microseconds(task.age_us);
    out.delivered = task.delivered;
    out.staged = task.staged;
    return out;
}

HotKey ToWire(const mooncake::HotKey& hot, Nanos now) {
    HotKey out;
    out.key = hot.key;
    out.size = static_cast<int64_t>(hot.size);
    out.estimate = static_cast<int32_t>(hot.estimate);
    if (hot.last_promotion) out.__set_last_promotion(ToWire(*hot.last_promotion, now));
    return out;
}

mooncake::HotKey FromWire(const HotKey& hot) {
    mooncake::HotKey out{hot.key, static_cast<uint64_t>(hot.size),
                         static_cast<uint32_t>(hot.estimate), std::nullopt};
    if (hot.__isset.last_promotion) out.last_promotion = FromWire(hot.last_promotion);
    return out;
}

}  // namespace mooncake::rpc
