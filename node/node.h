// Node: the daemon's node -- the threads and long-polls around a NodeWorker
// (core/node/node_worker.h), which does the work and holds the rules.
//
//  - registration: Start registers, retrying with backoff until the master answers;
//  - heartbeat thread (every heartbeat_interval, and at once when the disk dropped a record):
//    NodeWorker::Heartbeat;
//  - offload thread: long-polls offload tasks and runs them;
//  - promotion: one thread long-polls promotion tasks (a task starts within milliseconds of
//    its admission; a burst arrives in one answer) and hands them to a few workers. The
//    poller fetches more only when the workers are nearly idle, so tasks wait in the master
//    (where Remove and expiry can still cancel them cheaply), not here. A task waiting here
//    whose object a reader has just read from disk takes the reader's bytes and goes first
//    (TakeDiskRead): no second disk read, and it ends as soon as a worker is free.
//
// Thread-safety: Start/Stop from one thread; the loops are internal.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/clock.h"
#include "core/base/knobs.h"
#include "core/base/master_link.h"
#include "core/base/master_types.h"
#include "core/base/mutex.h"
#include "core/node/node_worker.h"
#include "core/base/status.h"
#include "core/disk/device.h"
#include "node/disk_read_sink.h"

namespace mooncake {

class Counter;
class DataTransport;
class DiskHealth;
class DiskStore;
class DiskNodeDisk;
class MetricsRegistry;
class Segment;

struct NodeOptions {
    NodeSpec spec;  // name (advertised RPC address), data address, capacities
    std::chrono::milliseconds heartbeat_interval{1000};
    std::chrono::milliseconds poll_wait{1000};  // long-poll wait of the work loops
    int promotion_workers = 8;                  // promotions worked on at once
    // Offloads written at once. Each is a durable disk write; written together they share
    // the disk store's journal flushes (group commit), so N workers write up to N objects per
    // fdatasync instead of one. 0: as many as the disk store has background slots
    // (DiskStore::background_slots, a quarter of disk_queue_depth); promotion reads have
    // slots of their own (IoPriority::kPromotion).
    int offload_workers = 0;
    // The disk's corruption count, reported to the master with the disk figures (may be null).
    const DiskHealth* disk_health = nullptr;
};

class Node final : public DiskReadSink {
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

    // A reader read (key, generation) from this node's disk: a promotion of it waiting here
    // for a worker takes the bytes and goes to the front (see DiskReadSink).
    bool TakeDiskRead(std::string_view key, Generation generation, AlignedBuffer& buffer,
                      uint64_t size) override MC_EXCLUDES(mu_);

    NodeId id() const { return worker_->id(); }
    bool registered() const { return worker_->registered(); }

private:
    class TransportPeers;

    // A task a long-poll handed this node as registration `id`; a promotion may carry the
    // bytes a reader read (TakeDiskRead; empty when none), so it need not read the disk.
    template <typename Task>
    struct Queued {
        NodeId id = kNoNode;
        Task task;
        AlignedBuffer read_already;
    };
    // Tasks a long-poll handed this node, waiting for one of `workers` threads. Each waiter
    // has a condition of its own (all under mu_): a task taken wakes the poller only when the
    // queue runs low, and a task queued wakes a worker of its lane, not every thread of the
    // node. (Was one condition for all: every task taken woke all 16 workers, both pollers and
    // the heartbeat; under the engine load at 4 KiB pages the daemon switched threads 100k
    // times a second, 74k after, and used 1.12 CPUs against 0.91 for the same work.)
    template <typename Task>
    struct Lane {
        const char* what;  // "offload" / "promotion", for logs
        size_t workers;
        std::deque<Queued<Task>> queued;  // GUARDED_BY(mu_)
        CondVar has_work;                 // a task was queued, or stopping
        CondVar runs_low;                 // queued fell under `workers`, or stopping
    };

    void HeartbeatLoop() MC_EXCLUDES(mu_);
    // Long-polls the master for `lane`'s tasks whenever its workers are about to run dry, so
    // the rest stay queued on the master (where Remove and eviction can still cancel them).
    template <typename Task, typename Poll, typename Received>
    void PollLoop(Lane<Task>& lane, Poll poll, Received received) MC_EXCLUDES(mu_);
    // A worker of `lane`: takes the first task queued, and the ones after it (of the same
    // registration) while `more(taken, next)` says so, and runs them together.
    template <typename Task, typename More, typename Run>
    void WorkLoop(Lane<Task>& lane, More more, Run run) MC_EXCLUDES(mu_);
    // Promotions: one at a time (each its own read, staging and copy).
    struct TakeOne {
        template <typename Taken, typename Task>
        bool operator()(const Taken&, const Task&) const {
            return false;
        }
    };
    // Offloads of small values: several at a time, written with one journal commit
    // (NodeWorker::RunOffloadBatch). Each page its own commit held an engine's puts, which
    // wait for offloads to free DRAM, behind one flush per page (bench/results/engine.md).
    // Values are copied out of the segment for a batch, and batches in flight are writes
    // that LOCAL_DISK reads wait behind: up to 128 KiB (32 pages of 4 KiB); a larger value
    // goes alone, uncopied. (Engine load at 64 KiB pages: 4 MiB batches had 2-3 calls over
    // 100 ms a run; 256 KiB none but reads' p99 25-28 ms; 128 KiB 20-26 ms and as many
    // requests/s; 64 KiB, no batching of such pages, 19-20 ms but puts' p99 25-30 ms.)
    struct TakeOffloads {
        static constexpr size_t kMaxTasks = 32;
        static constexpr uint64_t kMaxBytes = 128 << 10;
        bool operator()(const std::vector<Queued<OffloadTask>>& taken,
                        const OffloadTask& next) const;
    };
    // Sleeps up to `d` unless stopping; false when stopping.
    bool Pause(std::chrono::milliseconds d) MC_EXCLUDES(mu_);

    const NodeOptions options_;
    Segment& segment_;
    DiskStore* const disk_;
    const Config& config_;
    MetricsRegistry& metrics_;
    SteadyClock clock_;
    std::unique_ptr<DiskNodeDisk> node_disk_;
    std::unique_ptr<TransportPeers> peers_;
    std::unique_ptr<NodeWorker> worker_;
    Counter& promotion_batches_;  // long-polls that returned work
    Counter& promotion_tasks_;    // tasks those returned
    Counter& promotions_fed_;     // waiting tasks handed a reader's bytes (TakeDiskRead)

    std::atomic<bool> running_{false};
    Mutex mu_;
    CondVar cv_;
    bool drops_pending_ MC_GUARDED_BY(mu_) = false;  // the disk dropped a record: beat early
    Lane<OffloadTask> offloads_;
    Lane<PromotionTask> promotions_;
    std::vector<std::thread> threads_;
};

}  // namespace mooncake
