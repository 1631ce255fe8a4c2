// Node: the byte work of a node, driven by its master.
//
//  - registration: registers its segment and disk, then re-registers the LOCAL_DISK records
//    the disk store recovered (a restarted node serves its objects again);
//  - heartbeat loop (every heartbeat_interval): forgets the ranges the master released,
//    deletes the disk records it was told to, reports records the disk store dropped, and
//    registers again if the master no longer knows it (master restart, expiry);
//  - offload loop: long-polls offload tasks, copies each range of its own segment to disk
//    (background priority), reports success or failure;
//  - promotion: one thread long-polls promotion tasks (a task starts within milliseconds of
//    its admission; a burst arrives in one answer) and hands them to a few workers, which read
//    the disk (source pinned meanwhile), stage DRAM with PromotionAllocStart, write the bytes
//    there (memcpy when staged in this node's own segment, the data channel otherwise), and
//    report. The poller fetches more only when the workers are nearly idle, so tasks wait in
//    the master (where Remove and expiry can still cancel them cheaply), not here.
//
// Thread-safety: Start/Stop from one thread; the loops are internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/knobs.h"
#include "core/master_types.h"
#include "core/status.h"
#include "daemon/master_link.h"

namespace mooncake {

class Counter;
class DataTransport;
class DiskHealth;
class DiskStore;
class Histogram;
class MetricsRegistry;
class Segment;

struct NodeOptions {
    NodeSpec spec;  // name (advertised RPC address), data address, capacities
    std::chrono::milliseconds heartbeat_interval{1000};
    std::chrono::milliseconds poll_wait{1000};  // long-poll wait of the work loops
    int promotion_workers = 4;                  // promotions worked on at once
    // The disk's corruption count, reported to the master with the disk figures (may be null).
    const DiskHealth* disk_health = nullptr;
};

class Node {
public:
    // Everything passed must outlive the node. `disk` may be null (no LOCAL_DISK tier);
    // `peers` writes promotions staged on other nodes.
    Node(NodeOptions options, MasterLink& master, Segment& segment, DiskStore* disk,
         DataTransport& peers, const Config& config, MetricsRegistry& metrics);
    ~Node();

    // Registers, retrying while the master refuses or cannot be reached, until `give_up`
    // becomes true (shutdown) -> kUnavailable. Then starts the loops.
    Status Start(const std::atomic<bool>& give_up);
    // Stops the loops and leaves the master gracefully (its replicas are dropped there).
    void Stop();

    NodeId id() const { return id_.load(); }
    bool registered() const { return id_.load() != kNoNode; }

private:
    Status Register();
    void RegisterDiskRecords(NodeId id);
    void RegisterMemoryRanges(NodeId id);
    void HeartbeatLoop();
    void OffloadLoop();
    void PromotionPollLoop();
    void PromotionWorker();
    void DoOffload(NodeId id, const OffloadTask& task);
    void DoPromotion(NodeId id, const PromotionTask& task);
    Status CopyToStaging(NodeId id, const PromotionTask& task, std::span<const std::byte> bytes);
    void FlushDrops(NodeId id);
    // Sends the node's own disk figures when they changed since the last report (or `force`).
    void ReportHealth(NodeId id, bool force);
    // Sleeps up to `d` unless stopping; false when stopping.
    bool Pause(std::chrono::milliseconds d);

    const NodeOptions options_;
    MasterLink& master_;
    Segment& segment_;
    DiskStore* const disk_;
    DataTransport& peers_;
    const Config& config_;
    MetricsRegistry& metrics_;
    Counter& offloads_ok_;
    Counter& offloads_failed_;
    Counter& promotions_ok_;
    Counter& promotions_failed_;
    Counter& reregistrations_;
    Counter& promotion_batches_;  // long-polls that returned work
    Counter& promotion_tasks_;    // tasks those returned
    Histogram& promotion_work_seconds_;

    std::atomic<NodeId> id_{kNoNode};
    std::atomic<bool> running_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<DiskDelete> dropped_;  // GUARDED_BY(mu_): disk records to report
    NodeHealth last_health_;          // heartbeat thread only: last reported
    std::deque<std::pair<NodeId, PromotionTask>> promotions_;  // GUARDED_BY(mu_): to work on
    std::vector<std::thread> threads_;
};

}  // namespace mooncake
