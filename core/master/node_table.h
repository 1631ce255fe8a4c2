// The live nodes: registration under a unique name, each node's DRAM segment and its task
// queues and pending heartbeat reply.
//
// Lock order: NodeTable::mu_ is taken under a shard lock (never the other way round);
// Segment::mu_ and NodeState::queue_mu_ are leaves: nothing else is locked under them.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/base/master_types.h"
#include "core/base/mutex.h"
#include "core/base/segment_allocator.h"
#include "core/base/status.h"

namespace mooncake {

// The master's view of a node's DRAM segment: its allocation map, with its own lock (the
// bytes are the node's: node/segment.h).
class SegmentSpace {
public:
    explicit SegmentSpace(uint64_t capacity) : allocator_(capacity) {}
    std::optional<uint64_t> Allocate(uint64_t size);
    // Places a reported range (a rejoining node's DRAM); false if outside or overlapping.
    bool AllocateAt(uint64_t offset, uint64_t size);
    void Free(uint64_t offset, uint64_t size);
    uint64_t capacity() const;
    uint64_t used() const;
    uint64_t free_bytes() const;
    uint64_t largest_free_extent() const;

private:
    mutable Mutex mu_;
    SegmentAllocator allocator_ MC_GUARDED_BY(mu_);
};

// A task queued for a node: the object it concerns, checked again when handed out.
struct TaskRef {
    std::string key;
    Generation generation;
};

enum class TaskQueue { kOffload, kPromotion };

class NodeState {
public:
    NodeState(NodeId id_, const NodeSpec& spec_)
        : id(id_), spec(spec_), segment(spec_.segment_capacity), reporting(spec_.holds_memory) {}
    bool has_disk() const { return spec.disk_capacity > 0; }
    // New data may be placed in its segment: not draining, and nothing left to report.
    bool Placeable() const {
        return segment_state.load() == SegmentState::kOk && !reporting.load();
    }

    const NodeId id = kNoNode;
    const NodeSpec spec;
    std::atomic<int64_t> last_heartbeat_ns{0};
    SegmentSpace segment;
    // kOk: placement may allocate here (DramPool::TryAllocate skips any other state).
    std::atomic<SegmentState> segment_state{SegmentState::kOk};
    // Registered again holding DRAM ranges it has not reported yet (NodeSpec::holds_memory):
    // placement skips the segment until the node's first heartbeat (MasterStore::Heartbeat).
    // Cleared only through NodeTable (EndReporting, Remove), which counts the reporting nodes.
    std::atomic<bool> reporting{false};
    std::atomic<uint64_t> disk_used{0};  // DiskFootprint (whole blocks) of its disk replicas
    // The node's own report (ReportNodeHealth); read together only for display.
    std::atomic<bool> health_reported{false};
    std::atomic<uint64_t> reported_disk_used{0};
    std::atomic<uint64_t> reported_disk_objects{0};
    std::atomic<uint64_t> reported_corruptions{0};
    // The master's own figures when that report arrived: a report older than the master's
    // latest change is not compared (the node reports again at its next heartbeat).
    std::atomic<uint64_t> disk_used_at_report{0};
    std::atomic<uint64_t> disk_objects_at_report{0};
    std::atomic<uint64_t> memory_objects{0};
    std::atomic<uint64_t> disk_objects{0};
    std::atomic<uint64_t> offload_pending{0};
    // The first registration of this name in this master's lifetime: the master restarted (or
    // the node is new), so what the node reports holding is adopted even for unknown keys.
    // A later registration of the name claims unknown keys only from `departed`.
    bool first_of_name = false;

    // ---- queues and the heartbeat reply (queue_mu_, a leaf) ----
    void Push(TaskQueue queue, TaskRef ref);
    void PushReleased(ReleasedRange range);
    void PushDiskDelete(DiskDelete del);
    // Up to `max` queued tasks, oldest first; with `wait` true, waits until `deadline` (real
    // time) while there is none and the node is not gone.
    std::vector<TaskRef> Take(TaskQueue queue, size_t max, bool wait,
                              std::chrono::steady_clock::time_point deadline);
    // Expired or unregistered: queues emptied, long-polls woken.
    void MarkGone();
    // Disk deletes queued or sent and not yet confirmed: the node's own figures lag until
    // it has acted on them.
    bool DiskDeletesInFlight() {
        MutexLock lock(queue_mu_);
        return !pending_.disk_deletes.empty() || !unconfirmed_.disk_deletes.empty();
    }
    // The reply to a heartbeat that confirmed reply `applied` (kAppliedAll: whatever was sent):
    // what was sent and not confirmed, plus what is new; `next_seq` numbers a non-empty one.
    template <typename NextSeq>
    HeartbeatReply TakeReply(uint64_t applied, uint64_t applied_all, NextSeq next_seq) {
        MutexLock lock(queue_mu_);
        HeartbeatReply& sent = unconfirmed_;
        if (applied == applied_all || applied == sent.seq) sent = HeartbeatReply{};
        // Anything else means the node never got (or never acted on) the last reply: what
        // it held goes again, with whatever is new.
        HeartbeatReply& fresh = pending_;
        sent.released.insert(sent.released.end(), std::make_move_iterator(fresh.released.begin()),
                             std::make_move_iterator(fresh.released.end()));
        sent.disk_deletes.insert(sent.disk_deletes.end(),
                                 std::make_move_iterator(fresh.disk_deletes.begin()),
                                 std::make_move_iterator(fresh.disk_deletes.end()));
        fresh = HeartbeatReply{};
        sent.seq = sent.empty() ? 0 : next_seq();
        return sent;
    }

private:
    std::deque<TaskRef>& QueueOf(TaskQueue queue) MC_REQUIRES(queue_mu_) {
        return queue == TaskQueue::kOffload ? offload_queue_ : promotion_queue_;
    }
    Mutex queue_mu_;
    CondVar work_cv_;
    std::deque<TaskRef> offload_queue_ MC_GUARDED_BY(queue_mu_);
    std::deque<TaskRef> promotion_queue_ MC_GUARDED_BY(queue_mu_);
    HeartbeatReply pending_ MC_GUARDED_BY(queue_mu_);      // not sent yet
    HeartbeatReply unconfirmed_ MC_GUARDED_BY(queue_mu_);  // sent, the node has not confirmed it
    bool gone_ MC_GUARDED_BY(queue_mu_) = false;
};

class NodeTable {
public:
    // Node ids, like generations, carry the epoch (31 bits of it, so an id stays positive on
    // the wire): a node still holding the id an earlier master gave it gets UnknownNode.
    explicit NodeTable(uint32_t epoch);

    std::shared_ptr<NodeState> Get(NodeId id) const;
    std::vector<std::shared_ptr<NodeState>> All() const;
    size_t size() const;
    uint64_t DiskCapacity() const;  // LOCAL_DISK bytes of the live nodes together
    // The largest DRAM segment of a live node (0 with none): read under the table's lock,
    // without All()'s copy of every node's shared_ptr (PutStart asks on every Put).
    uint64_t LargestSegment() const;
    // A live node registered again and has not yet reported all it holds (NodeState::reporting).
    // A count, not a walk: asked on the slow path of every allocation that has to evict.
    bool AnyReporting() const { return reporting_.load() > 0; }
    size_t ReportingCount() const { return static_cast<size_t>(reporting_.load()); }
    // The answer of whatever would evict for room meanwhile (a Put, a drain): no eviction
    // while a node reports, as it could take what was just reported back. Busy: moments.
    // Names the nodes still reporting, so an operator knows which one to look at.
    Status StillReporting() const MC_EXCLUDES(mu_);
    // The node has reported all it holds: its segment takes new data. False if it had already.
    bool EndReporting(NodeState& node);

    // The name rules of MasterStore::RegisterNode. A registration this one replaces (a
    // restarted process of the same name) is taken out and returned in `replaced`, for the
    // caller to clean up.
    Result<NodeId> Register(const NodeSpec& spec, Nanos now,
                            std::shared_ptr<NodeState>* replaced);
    // Takes the node out; null if it is not registered.
    std::shared_ptr<NodeState> Remove(NodeId id);

    // Store-unique heartbeat reply seqs (epoch-prefixed, like generations), so a node's
    // confirmation of an earlier registration's reply never matches a later one's.
    uint64_t NextReplySeq() { return next_reply_seq_.fetch_add(1, std::memory_order_relaxed); }

private:
    static constexpr size_t kSupersededPerName = 8;
    mutable SharedMutex mu_;
    std::map<NodeId, std::shared_ptr<NodeState>> nodes_ MC_GUARDED_BY(mu_);
    std::atomic<int64_t> reporting_{0};  // live nodes with NodeState::reporting set
    NodeId next_id_ MC_GUARDED_BY(mu_) = 1;
    // Names that registered in this master's lifetime (see NodeState::first_of_name).
    std::unordered_set<std::string> names_seen_ MC_GUARDED_BY(mu_);
    // Per name, the latest incarnations a newer process replaced (bounded): they may not
    // register again.
    std::unordered_map<std::string, std::deque<uint64_t>> superseded_ MC_GUARDED_BY(mu_);
    std::atomic<uint64_t> next_reply_seq_;
};

}  // namespace mooncake
