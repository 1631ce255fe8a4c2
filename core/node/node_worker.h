// NodeWorker: the node's half of the protocol with the master, written once. The daemon
// (node/node.cc owns the threads and long-polls), the trace replay (bench/replay), the
// store tests and any process embedding a node drive this class; it holds no threads.
//
//  - registration: registers the node, then registers again what it still holds -- the DRAM
//    ranges of its segment (a range the master refuses is forgotten at once, so it is never
//    readable under our name; while they are reported the master places nothing new in the
//    segment, NodeSpec::holds_memory, and a heartbeat right after opens it) and its disk
//    records (one the master refuses, for whatever reason, is deleted, counted in
//    node_disk_records_refused_total{reason} and logged as a warning: it can never be read
//    again; one whose answer was lost or transient is offered again after the next beat);
//  - heartbeat: reports records the disk dropped by itself, beats, forgets the ranges the
//    master released and deletes the disk records it was told to; the reply's seq is confirmed
//    with the next beat (until then the master sends it again: acting twice is harmless,
//    never acting is not); a master that no longer knows the node -> register again;
//  - offload task: the segment range is written to disk, then the master is told. A failed
//    write -> NotifyOffloadFailure. A success the master refuses because it no longer wants
//    the copy (NotFound / StaleGeneration: removed, rewritten, cancelled) -> the record is
//    deleted, else it would hold disk space nobody reads; any other error (the reply may just
//    be lost) keeps it, re-registration reconciles;
//  - promotion task: the disk source is pinned and read, DRAM staged with PromotionAllocStart,
//    the bytes written there (memcpy into this node's own segment, the PeerWriter otherwise),
//    the source unpinned and the master told (when a reader has just read the same object
//    from disk, its bytes are used and the disk is not read again). Any failure before the
//    commit -> NotifyPromotionFailure (frees the staging at once); a commit the master refuses
//    (cancelled, expired, master restarted) needs nothing more: the master freed the staging;
//  - the staging retry rule: PromotionAllocStart answers NotReady while the master offloads
//    colder objects to make room, and keeps the task. The worker asks again -- after waiting
//    (RoomWait::kSleep: backoff 2 ms doubling to 50 ms, for at most staging_wait; the
//    offloads run on another thread) or after running this node's own offloads
//    (RoomWait::kRunOffloads: synchronous drivers, which have no other thread; gives up when
//    none ran) -- and gives up with NotifyPromotionFailure.
//
// Thread-safety: the task steps (RunOffload, RunPromotion, the Poll* calls) and FlushDrops may
// run on many threads at once; Register, Heartbeat and Leave on one thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/base/clock.h"
#include "core/base/master_link.h"
#include "core/base/master_types.h"
#include "core/base/mutex.h"
#include "core/node/node_seams.h"
#include "core/base/status.h"

namespace mooncake {

class Counter;
class Histogram;
class MetricsRegistry;

struct NodeWorkerOptions {
    NodeSpec spec;  // name (advertised RPC address), data address, capacities

    enum class RoomWait { kSleep, kRunOffloads };
    RoomWait room_wait = RoomWait::kSleep;
    // kSleep: how long a promotion waits for the master to free DRAM for its staging range.
    std::chrono::milliseconds staging_wait{2000};
    // kSleep: waits `d` (clock time); false = stop waiting (the node is shutting down).
    // Null: std::this_thread::sleep_for.
    std::function<bool(std::chrono::milliseconds d)> sleep;
    // kRunOffloads: offload tasks fetched per round while waiting for room.
    size_t inline_offload_batch = size_t{1} << 16;

    // Named points where a fault harness may hold, slow down or fail the work
    // (node/fault_injection.h lists them); a non-OK status fails the operation. Null: none.
    std::function<Status(const char* point)> fault;

    // The node's own disk figures and corruption count, reported after every beat (`check`
    // compares a report only with the master's figures of its time). Null: not reported.
    std::function<NodeHealth()> health;
};

class NodeWorker {
public:
    // Everything passed must outlive the worker. `disk` may be null (no LOCAL_DISK tier:
    // every task fails); `peers` may be null (promotions staged on other nodes fail).
    NodeWorker(NodeWorkerOptions options, MasterLink& master, NodeSegment& segment,
               NodeDisk* disk, PeerWriter* peers, const Clock& clock, MetricsRegistry& metrics);
    ~NodeWorker();
    NodeWorker(const NodeWorker&) = delete;
    NodeWorker& operator=(const NodeWorker&) = delete;

    NodeId id() const { return id_.load(); }
    bool registered() const { return id() != kNoNode; }

    // Registers, then registers again the DRAM ranges and disk records held before it
    // registered (what is written after belongs to the new registration). Holding ranges, it
    // registers with NodeSpec::holds_memory and beats once right after reporting them.
    Status Register();
    // For harnesses that registered the node with the master themselves (store tests).
    void Attach(NodeId id) { id_.store(id); }
    // Leaves the master gracefully (its replicas are dropped there); no-op when not registered.
    Status Leave();
    // Ends waits in progress (the staging retry) and keeps Heartbeat from registering again.
    void RequestStop();
    bool stopping() const { return stopping_.load(); }

    // One heartbeat (drops reported first). UnknownNode -> registered again (the status of
    // the beat is returned either way); a reply lost on the way (fault point
    // "heartbeat.reply") is not acted on, and the master sends it again.
    Status Heartbeat();
    // Reports the records the disk dropped by itself since the last call; how many.
    size_t FlushDrops();
    bool has_drops() const;
    // Called (on the dropping thread) when a drop is queued, so a heartbeat thread can wake.
    void SetDropNotifier(std::function<void()> notify);

    // The long-polls, as the master answers them (empty after `wait` without work).
    Result<std::vector<OffloadTask>> PollOffloads(NodeId id, size_t max,
                                                  std::chrono::milliseconds wait);
    Result<std::vector<PromotionTask>> PollPromotions(NodeId id, size_t max,
                                                      std::chrono::milliseconds wait);
    // One task of node `id` (the id it was handed out to); true when the master took it.
    bool RunOffload(NodeId id, const OffloadTask& task);
    // Several, written to disk together (one journal commit: DiskStore::WriteMany), each
    // then answered to the master as RunOffload does; how many the master took. The bytes
    // are copied out of the segment first, so keep a batch's total small.
    size_t RunOffloadBatch(NodeId id, std::span<const OffloadTask> tasks);
    bool RunPromotion(NodeId id, const PromotionTask& task);
    // The same with the object's bytes already read (a reader's read of the same LOCAL_DISK
    // object, Node::TakeDiskRead): the disk is not read again.
    bool RunPromotion(NodeId id, const PromotionTask& task,
                      std::span<const std::byte> read_already);

    // Synchronous drivers: fetch what is queued now (no wait) and do it all.
    struct Ran {
        size_t tasks = 0;  // handed out
        size_t done = 0;   // taken by the master
    };
    Ran RunOffloads(size_t max);
    Ran RunPromotions(size_t max);

private:
    Status Fault(const char* point) const;
    // One heartbeat and what its reply asks; UnknownNode when the master no longer knows us.
    Status BeatOnce();
    // Report what was held before registering as `id` (Register lists it first).
    void RegisterMemoryRanges(NodeId id, const std::vector<HeldRange>& held);
    void RegisterDiskRecords(NodeId id, const std::vector<DiskObjectInfo>& records);
    // Offers again, as registration `id`, the records whose answer was lost or transient (those
    // the disk still holds); how many were offered.
    size_t ReofferDiskRecords(NodeId id);
    Status CopyToStaging(NodeId id, const PromotionTask& task, std::span<const std::byte> bytes);
    // Between two NotReady answers; false = give up.
    bool WaitForRoom(Nanos deadline, std::chrono::milliseconds& backoff);
    // An offload's record from its disk write until the master's answer about it: a drop of
    // it meanwhile is held, not reported (see reporting_offloads_). Begin returns the drops
    // seen so far, for the other two: Dropped says whether the disk dropped the record since;
    // End ends the hold and queues such a drop for the next flush (a copy the master took
    // meanwhile, by this offload, a twin of it or a registration's disk list, goes; one it
    // never had is answered NotFound). QueueDrop queues a drop.
    uint64_t BeginOffloadReport(const OffloadTask& task);
    // An offload's end, its disk write done (`st`): the drops it caused first, then the
    // master's answer (or the failure told); true when the master took the copy.
    bool ReportOffload(NodeId id, const OffloadTask& task, Status st, uint64_t drops_at_begin);
    bool DroppedSince(const OffloadTask& task, uint64_t drops_at_begin) const;
    void EndOffloadReport(const OffloadTask& task, uint64_t drops_at_begin);
    void QueueDrop(DiskDelete drop) MC_REQUIRES(mu_);

    const NodeWorkerOptions options_;
    MasterLink& master_;
    NodeSegment& segment_;
    NodeDisk* const disk_;
    PeerWriter* const peers_;
    const Clock& clock_;
    MetricsRegistry& metrics_;
    Counter& offloads_ok_;
    Counter& offloads_failed_;
    Counter& promotions_ok_;
    Counter& promotions_failed_;
    Counter& registrations_;
    Histogram& promotion_work_seconds_;
    // The two phases of that work that can wait: the source's disk read, and the staging
    // (PromotionAllocStart, with its waits for DRAM room).
    Histogram& promotion_read_seconds_;
    Histogram& promotion_staging_seconds_;

    std::atomic<NodeId> id_{kNoNode};
    std::atomic<bool> stopping_{false};
    // The seq of the last heartbeat reply acted on, and the registration it belongs to
    // (Heartbeat's thread only).
    uint64_t applied_ = 0;
    NodeId applied_for_ = kNoNode;
    // Disk records to offer the master again, as registration `reoffer_for_` (Register's and
    // Heartbeat's thread only).
    std::vector<DiskObjectInfo> reoffer_;
    NodeId reoffer_for_ = kNoNode;

    mutable Mutex mu_;
    // One FlushDrops at a time, held through its reports: when FlushDrops returns, every drop
    // queued before the call has reached the master (RunOffload relies on it).
    Mutex flush_mu_;
    std::deque<DiskDelete> dropped_ MC_GUARDED_BY(mu_);  // disk records to report
    // Records of offloads not yet answered by the master, and whether the disk dropped them.
    // A drop reported before the master has the copy is ignored by it (NotFound), and the
    // copy it then takes is a record the disk no longer holds (ResourcesFaultTest.DiskFull, a
    // small disk with offloads written in parallel). So such a drop waits for the answer, and
    // one before the report turns the offload into a failure (the MEMORY copy stays).
    struct OffloadReport {
        int writers = 0;     // offloads of this record under way (a task handed out again)
        uint64_t drops = 0;  // times the disk dropped it since the first of them began
    };
    std::map<std::pair<std::string, Generation>, OffloadReport> reporting_offloads_
        MC_GUARDED_BY(mu_);
    std::function<void()> drop_notify_ MC_GUARDED_BY(mu_);
};

}  // namespace mooncake
