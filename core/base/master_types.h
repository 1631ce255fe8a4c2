// Plain values MasterStore takes and returns. Shared by the daemon's RPC handlers, the client
// library and the trace replay; none of them holds a lock or points into the store.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/clock.h"
#include "core/base/promotion_decision.h"
#include "core/base/types.h"

namespace mooncake {

// Where one copy of an object lives. `offset` is the byte offset in the node's DRAM segment
// (MEMORY only); a LOCAL_DISK replica is found by the holder from (key, generation).
struct ReplicaDesc {
    Tier tier = Tier::kMemory;
    ReplicaState state = ReplicaState::kComplete;
    NodeId node = kNoNode;
    uint64_t offset = 0;
    uint64_t size = 0;  // object bytes (the DRAM range may be rounded up to 4 KiB)
    uint32_t pins = 0;  // in-flight offload or promotion using this replica as its source

    // What a reader asks the holder for: the DRAM offset of a MEMORY copy; a LOCAL_DISK copy
    // is found by (key, generation) alone, so 0.
    uint64_t ReadOffset() const { return tier == Tier::kMemory ? offset : 0; }
};

// The replica read rule, the one every reader follows (the client library, the data server's
// by-key read): try the COMPLETE replicas in the order the master lists them (MEMORY first;
// among MEMORY copies, one near the reader first: PreferNearMemoryCopy below);
// the first that reads is the answer; if none does, a corrupt copy's error says more than any
// other (the operator must hear of it), else the last replica's error.
class ReplicaReads {
public:
    // `none`: the answer when no replica is tried at all.
    explicit ReplicaReads(Status none) : last_(std::move(none)) {}
    // One replica's answer; true when it read (stop there).
    bool Add(Status answer) {
        if (answer.Is(StatusCode::kCorruption)) corruption_ = answer;
        last_ = std::move(answer);
        return last_.ok();
    }
    // A replica not tried, and why (its node is gone): the answer unless a later one is given.
    void Skip(Status why) { last_ = std::move(why); }
    Status Answer() const { return last_.ok() || corruption_.ok() ? last_ : corruption_; }

private:
    Status last_;
    Status corruption_;
};

// Read locality among an object's MEMORY copies (PutConfig::replicas > 1): the master lists
// them in its own order (the first placed first), which knows nothing of the reader. A reader
// that reaches one of them without the network (its own node's segment, or a node on its host
// through shared pools: `near(locations[i])`) tries that copy before the others, so copies
// spread over nodes each serve their own node's readers. Only MEMORY copies move, and only
// among themselves: a near LOCAL_DISK replica is still tried after every MEMORY copy (a disk
// read costs more than a DRAM read over the network). `replicas` and `locations` are
// parallel and stay so; with fewer than two COMPLETE MEMORY copies nothing is asked or moved.
template <typename Location, typename Near>
void PreferNearMemoryCopy(std::vector<ReplicaDesc>& replicas, std::vector<Location>& locations,
                          const Near& near) {
    auto complete_memory = [&](size_t i) {
        return replicas[i].tier == Tier::kMemory && replicas[i].state == ReplicaState::kComplete;
    };
    const size_t n = std::min(replicas.size(), locations.size());
    size_t first = 0;
    while (first < n && !complete_memory(first)) ++first;
    size_t second = first + 1;
    while (second < n && !complete_memory(second)) ++second;
    if (second >= n || near(locations[first])) return;
    for (size_t i = second; i < n; ++i) {
        if (!complete_memory(i) || !near(locations[i])) continue;
        // Move copy i to the first copy's place; the ones between keep their order.
        std::rotate(replicas.begin() + first, replicas.begin() + i, replicas.begin() + i + 1);
        std::rotate(locations.begin() + first, locations.begin() + i, locations.begin() + i + 1);
        return;
    }
}

struct ObjectView {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    std::vector<ReplicaDesc> replicas;  // readers: COMPLETE only, MEMORY first
    Nanos lease_expiry{0};
    uint64_t recency = 0;          // larger = more recently read
    uint32_t sketch_estimate = 0;  // admission sketch's count (inspection only)
    bool promotion_in_flight = false;
    bool offload_in_flight = false;
    // Stat only: the key's last promotion decision, if remembered (core/base/promotion_decision.h).
    std::optional<PromotionDecision> last_promotion;
    // Stat only: its pins (core/master/pin_table.h). soft_pin_expiry is on the clock, as lease_expiry
    // (0 until the put ends); past it, the soft pin has lapsed.
    bool soft_pinned = false;
    Nanos soft_pin_expiry{0};
    bool hard_pinned = false;
    std::string group;  // Stat only: its group (core/master/group_table.h), "" for none

    bool HasComplete(Tier tier) const;
    // Tier names that hold a COMPLETE replica, MEMORY first.
    std::vector<Tier> CompleteTiers() const;
};

// What a Put asks beyond its bytes and its preferred node (Mooncake's ReplicateConfig): pins
// (with_soft_pin, soft_pin_ttl_ms, with_hard_pin; core/master/pin_table.h), a group (group_ids:
// evicted together; core/master/group_table.h) and more MEMORY copies (replica_num, the nodes
// of preferred_segments after the first).
struct PutConfig {
    bool soft = false;
    Nanos soft_ttl{0};  // 0: the knob default_kv_soft_pin_ttl_ms
    bool hard = false;
    std::string group;  // "" = ungrouped
    // MEMORY copies on distinct nodes, this many at most (1: the one a Put always has). Those
    // past the first are placed best effort, as Mooncake's: on nodes with room now; a Put
    // that got fewer is counted in put_copies_short_total.
    uint32_t replicas = 1;
    std::vector<NodeId> copy_nodes;  // where the copies past the first go first, in order
    bool any() const { return soft || hard || !group.empty() || replicas != 1; }
};

struct PutStartReply {
    Generation generation = kNoGeneration;
    ReplicaDesc replica;  // the PROCESSING MEMORY range to write the bytes into
    // PutConfig::replicas > 1: more PROCESSING MEMORY ranges, each on another node. The same
    // bytes go to each before the Put ends; a reader may be handed any of them.
    std::vector<ReplicaDesc> copies;
};

struct NodeSpec {
    std::string name;          // advertised RPC address, unique among live nodes
    std::string data_address;  // HOST:PORT of its byte data channel
    uint64_t segment_capacity = 0;  // DRAM bytes contributed (0: none)
    uint64_t disk_capacity = 0;     // LOCAL_DISK bytes (0: no disk tier on this node)
    // Random, chosen once per node process at start (0: unknown, an older node). A registration
    // under a live node's name with a different non-zero incarnation is a restarted process:
    // it replaces the old registration at once (see MasterStore::RegisterNode).
    uint64_t incarnation = 0;
    // It registers again holding DRAM ranges, reported right after: until its first
    // heartbeat (sent once they are in) nothing new is placed in its segment, where it could
    // overlap a range still to be reported (which the report would then lose).
    bool holds_memory = false;
};

// A node's own view of its LOCAL_DISK tier, as it last reported it (MasterStore::
// ReportNodeHealth): what `check` compares with the master's figures, and whether the node
// has met corruption since its process started.
struct NodeHealth {
    bool reported = false;          // false until the node first reports (older nodes never)
    uint64_t disk_used = 0;         // DiskStore::allocated_bytes
    uint64_t disk_objects = 0;
    uint64_t disk_corruptions = 0;  // corruption events since the node process started
};

// A node's DRAM segment as placement sees it (Mooncake's SegmentStatus, same numbers): kOk
// takes new data; kDraining (a drain job moves its MEMORY copies to other nodes) and kDrained
// (they were moved) take none: no put, copy or promotion is placed there.
enum class SegmentState : uint8_t { kOk = 1, kDraining = 2, kDrained = 3 };
std::string_view SegmentStateName(SegmentState state);  // "OK", "DRAINING", "DRAINED"

// One MEMORY copy a drain moves off its node (MasterStore::DrainUnits).
struct DrainUnit {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t offset = 0;  // in the draining node's segment
    uint64_t size = 0;
    uint64_t recency = 0;  // when listed (larger: read more recently)
};

// What moving one unit takes (MasterStore::DrainStart).
struct DrainStep {
    enum Kind {
        kDone,  // nothing to copy: the object has another MEMORY copy (this one was dropped),
                // or it is gone, or no longer in MEMORY on the node
        kCopy,  // copy the bytes into `target` (a range on another node), then DrainEnd
    };
    Kind kind = kDone;
    ReplicaDesc target;  // kCopy: PROCESSING MEMORY, reserved for the copy
};

struct NodeInfo {
    NodeId id = kNoNode;
    NodeSpec spec;
    SegmentState segment_state = SegmentState::kOk;
    bool reporting = false;  // registered again, still reporting the DRAM ranges it holds
    uint64_t segment_used = 0;
    uint64_t disk_used = 0;  // DiskFootprint (whole 4 KiB blocks) of its LOCAL_DISK replicas
    uint64_t memory_objects = 0;
    uint64_t disk_objects = 0;
    Nanos last_heartbeat{0};
    NodeHealth health;
};

// What the master tells a node at each heartbeat: ranges it no longer holds data for, and disk
// records to delete (removed keys, dropped sources). The node acts on them, then forgets them.
struct ReleasedRange {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t offset = 0;
    uint64_t size = 0;
};
struct DiskDelete {
    std::string key;
    Generation generation = kNoGeneration;
};
// What a node must let go of. Sent again in every reply until the node confirms it (the
// next Heartbeat carries `seq` back): a lost reply loses nothing.
struct HeartbeatReply {
    std::vector<ReleasedRange> released;
    std::vector<DiskDelete> disk_deletes;
    uint64_t seq = 0;  // 0: nothing to confirm
    bool empty() const { return released.empty() && disk_deletes.empty(); }
};

// A node's report of a LOCAL_DISK record it holds (after restart, or master restart).
struct DiskReplicaReport {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t size = 0;
};

// A range of a node's DRAM segment that holds an object's committed bytes, as the node's own
// range table records it; reported when the node registers again (core/master/store_rejoin.cc).
struct MemoryReplicaReport {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    uint64_t offset = 0;
};

struct OffloadTask {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    uint64_t source_offset = 0;  // in this node's DRAM segment
};

struct PromotionTask {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    NodeId holder = kNoNode;  // the node whose disk has the source
    Nanos start{0};
};

enum class TaskKind { kOffload, kPromotion };
struct TaskView {
    TaskKind kind = TaskKind::kPromotion;
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    NodeId node = kNoNode;  // the node doing the work
    Nanos age{0};
    bool delivered = false;  // handed to the node already
    bool staged = false;     // promotion: DRAM allocated, bytes being written
};

// MasterStore::CheckInvariants: the store's bookkeeping checked against a walk over everything.
// `violations` empty means consistent; the counts are what the walk found.
struct InvariantReport {
    uint64_t objects = 0;
    uint64_t dram_used = 0;       // the segment allocators' view
    uint64_t dram_allocated = 0;  // sum of live MEMORY replicas and staging ranges
    uint64_t pins = 0;
    uint64_t source_pins_expected = 0;  // one per task in flight
    uint64_t promotion_tasks = 0;
    uint64_t offload_tasks = 0;
    std::vector<std::string> violations;
    bool ok() const { return violations.empty(); }
};

struct HotKey {
    std::string key;
    uint64_t size = 0;
    uint32_t estimate = 0;
    std::optional<PromotionDecision> last_promotion;
};

// Outcome of a manual promote/offload/evict for one key.
enum class ManualOutcome {
    kQueued,         // work queued (promotion or offload task created)
    kDone,           // completed at once (evict dropped MEMORY)
    kAlreadyThere,   // the key already is in the asked state
    kInFlight,       // a task for the key already exists
};
std::string_view ManualOutcomeName(ManualOutcome outcome);

struct ListOptions {
    std::optional<Tier> tier;  // keys with a COMPLETE replica in this tier
    std::string prefix;
    std::string start_after;  // paging: keys strictly greater than this
    size_t limit = 1000;
};

}  // namespace mooncake
