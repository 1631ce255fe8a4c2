#include "node/node.h"

#include <algorithm>
#include <utility>

#include "core/disk/disk_store.h"
#include "core/node/disk_node_disk.h"
#include "core/base/metrics.h"
#include "node/disk_health.h"
#include "node/fault_injection.h"
#include "node/segment.h"
#include "spdlog/spdlog.h"
#include "net/data_transport.h"

namespace mooncake {
namespace {

// NodeOptions::offload_workers, 0 resolved: one per background slot of the disk store, so its
// journal's group commits take as many writes as it can run (without a disk there is nothing
// to write; one worker answers the master's tasks with the error).
size_t OffloadWorkers(const NodeOptions& options, const DiskStore* disk) {
    if (options.offload_workers > 0) return static_cast<size_t>(options.offload_workers);
    return disk != nullptr ? disk->background_slots() : 1;
}

}  // namespace

// The worker's PeerWriter seam over the daemon's data channel.
class Node::TransportPeers final : public PeerWriter {
public:
    explicit TransportPeers(DataTransport& transport) : transport_(transport) {}
    Status WriteMemory(std::string_view address, std::string_view key, Generation generation,
                       uint64_t offset, std::span<const std::byte> data) override {
        return transport_.WriteMemory(address, key, generation, offset, data);
    }

private:
    DataTransport& transport_;
};

Node::Node(NodeOptions options, MasterLink& master, Segment& segment, DiskStore* disk,
           DataTransport& peers, const Config& config, MetricsRegistry& metrics)
    : options_(std::move(options)),
      segment_(segment),
      disk_(disk),
      config_(config),
      metrics_(metrics),
      node_disk_(disk != nullptr ? std::make_unique<DiskNodeDisk>(*disk) : nullptr),
      peers_(std::make_unique<TransportPeers>(peers)),
      promotion_batches_(metrics.GetCounter(
          "node_promotion_batches_total",
          "promotion long-polls that returned work (tasks per round trip = tasks / batches)")),
      promotion_tasks_(metrics.GetCounter("node_promotion_tasks_received_total",
                                          "promotion tasks received by long-polls")),
      promotions_fed_(metrics.GetCounter(
          "node_promotions_fed_total",
          "promotions waiting for a worker that were handed the bytes of a reader's read of "
          "the same LOCAL_DISK object (they do not read the disk again)")),
      offloads_{"offload", OffloadWorkers(options_, disk), {}, {}, {}},
      promotions_{"promotion", static_cast<size_t>(std::max(1, options_.promotion_workers)), {}, {},
                  {}} {
    NodeWorkerOptions worker_options;
    worker_options.spec = options_.spec;
    worker_options.room_wait = NodeWorkerOptions::RoomWait::kSleep;  // offloads run meanwhile
    worker_options.sleep = [this](std::chrono::milliseconds d) { return Pause(d); };
#ifdef MOONCAKE_FAULT_INJECTION
    // Live only in mooncaked-fault (node/fault_injection.h).
    worker_options.fault = [](const char* point) { return fault::Hit(point); };
#endif
    worker_options.health = [this] {
        NodeHealth health;
        if (disk_ != nullptr) {
            health.disk_used = disk_->allocated_bytes();
            health.disk_objects = disk_->object_count();
        }
        if (options_.disk_health != nullptr) health.disk_corruptions = options_.disk_health->total();
        return health;
    };
    worker_ = std::make_unique<NodeWorker>(std::move(worker_options), master, segment_,
                                           node_disk_.get(), peers_.get(), clock_, metrics);
    worker_->SetDropNotifier([this] {
        MutexLock lock(mu_);
        drops_pending_ = true;
        cv_.NotifyAll();
    });
    metrics.AddCallbackGauge("local_segment_capacity_bytes", "DRAM segment of this node", {},
                             [this] { return static_cast<double>(segment_.capacity()); });
    metrics.AddCallbackGauge("local_segment_held_bytes",
                             "bytes of this node's segment holding object bytes", {},
                             [this] { return static_cast<double>(segment_.bytes_held()); });
    if (disk_ != nullptr) {
        metrics.AddCallbackGauge("local_disk_capacity_bytes", "LOCAL_DISK data region of this node", {},
                                 [this] { return static_cast<double>(disk_->capacity()); });
        metrics.AddCallbackGauge("local_disk_used_bytes",
                                 "LOCAL_DISK bytes allocated to this node's records (whole 4 KiB "
                                 "blocks per object; the master's disk_used_bytes counts the same)",
                                 {}, [this] { return static_cast<double>(disk_->allocated_bytes()); });
        metrics.AddCallbackGauge("local_disk_objects", "objects in this node's LOCAL_DISK store", {},
                                 [this] { return static_cast<double>(disk_->object_count()); });
    }
}

Node::~Node() {
    Stop();
    worker_->SetDropNotifier(nullptr);
    metrics_.RemoveCallbackGauge("local_segment_capacity_bytes");
    metrics_.RemoveCallbackGauge("local_segment_held_bytes");
    if (disk_ != nullptr) {
        metrics_.RemoveCallbackGauge("local_disk_capacity_bytes");
        metrics_.RemoveCallbackGauge("local_disk_used_bytes");
        metrics_.RemoveCallbackGauge("local_disk_objects");
    }
}

bool Node::Pause(std::chrono::milliseconds d) {
    MutexLock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + d;
    while (running_.load()) {
        if (!cv_.WaitUntil(mu_, deadline)) break;
    }
    return running_.load();
}

Status Node::Start(const std::atomic<bool>& give_up) {
    running_.store(true);
    auto backoff = std::chrono::milliseconds(100);
    for (;;) {
        Status st = worker_->Register();
        if (st.ok()) break;
        // A refused token (or none, where the master wants one) does not fix itself.
        if (give_up.load() || st.Is(StatusCode::kIllegalClient)) {
            running_.store(false);
            if (st.Is(StatusCode::kIllegalClient)) return st;
            return Status::Unavailable("gave up registering: " + st.ToString());
        }
        spdlog::warn("registering with the master failed ({}); retrying in {} ms",
                     st.ToString(), backoff.count());
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    }
    threads_.emplace_back([this] { HeartbeatLoop(); });
    threads_.emplace_back([this] {
        PollLoop(offloads_, [this](NodeId id) {
            return worker_->PollOffloads(id, static_cast<size_t>(config_.offload_batch_max()),
                                         options_.poll_wait);
        }, [](size_t) {});
    });
    threads_.emplace_back([this] {
        PollLoop(promotions_, [this](NodeId id) {
            return worker_->PollPromotions(id, static_cast<size_t>(config_.promotion_batch_max()),
                                           options_.poll_wait);
        }, [this](size_t n) {
            promotion_batches_.Inc();
            promotion_tasks_.Inc(static_cast<double>(n));
        });
    });
    for (size_t i = 0; i < offloads_.workers; ++i) {
        threads_.emplace_back([this] {
            WorkLoop(offloads_, TakeOffloads{},
                     [this](std::vector<Queued<OffloadTask>>& work) {
                         std::vector<OffloadTask> tasks;
                         tasks.reserve(work.size());
                         for (auto& q : work) tasks.push_back(std::move(q.task));
                         worker_->RunOffloadBatch(work.front().id, tasks);
                     });
        });
    }
    for (size_t i = 0; i < promotions_.workers; ++i) {
        threads_.emplace_back([this] {
            WorkLoop(promotions_, TakeOne{}, [this](std::vector<Queued<PromotionTask>>& work) {
                const Queued<PromotionTask>& q = work.front();
                std::span<const std::byte> bytes;
                if (q.read_already.size() > 0) bytes = q.read_already.span().first(q.task.size);
                worker_->RunPromotion(q.id, q.task, bytes);
            });
        });
    }
    return Status::Ok();
}

void Node::Stop() {
    if (!running_.exchange(false)) return;
    worker_->RequestStop();
    // Through mu_: a loop that saw running_ true and is about to wait holds mu_ until it waits,
    // so the wake-up cannot fall between its check and its sleep (a lost one hung Stop's join).
    { MutexLock lock(mu_); }
    cv_.NotifyAll();
    for (CondVar* cv : {&offloads_.has_work, &offloads_.runs_low, &promotions_.has_work,
                        &promotions_.runs_low}) {
        cv->NotifyAll();
    }
    // Leaving wakes our long-polls on the master at once (it marks the node gone).
    Status st = worker_->Leave();
    if (!st.ok()) spdlog::warn("leaving the master: {}", st.ToString());
    for (auto& t : threads_) t.join();
    threads_.clear();
}

void Node::HeartbeatLoop() {
    auto next = std::chrono::steady_clock::now();
    while (running_.load()) {
        {
            MutexLock lock(mu_);
            while (running_.load() && !drops_pending_) {
                if (!cv_.WaitUntil(mu_, next)) break;
            }
            drops_pending_ = false;
        }
        if (!running_.load()) break;
        if (!worker_->registered()) continue;
        if (std::chrono::steady_clock::now() < next) {
            worker_->FlushDrops();  // woken early just to report drops
            continue;
        }
        next = std::chrono::steady_clock::now() + options_.heartbeat_interval;
        (void)worker_->Heartbeat();  // logs its own failures
    }
}

bool Node::TakeDiskRead(std::string_view key, Generation generation, AlignedBuffer& buffer,
                        uint64_t size) {
    if (!running_.load() || size == 0 || buffer.size() < size) return false;
    MutexLock lock(mu_);
    auto& queued = promotions_.queued;
    auto it = std::find_if(queued.begin(), queued.end(), [&](const Queued<PromotionTask>& q) {
        return q.task.generation == generation && q.task.size == size && q.task.key == key;
    });
    if (it == queued.end() || it->read_already.size() > 0) return false;
    Queued<PromotionTask> fed = std::move(*it);
    queued.erase(it);
    fed.read_already = std::move(buffer);
    // First in line: it needs no disk slot, only a worker, and its reader's next read (or
    // another reader's) of the object then finds MEMORY.
    queued.push_front(std::move(fed));
    promotions_fed_.Inc();
    promotions_.has_work.NotifyOne();
    return true;
}

template <typename Task, typename Poll, typename Received>
void Node::PollLoop(Lane<Task>& lane, Poll poll, Received received) {
    while (running_.load()) {
        {
            // Fetch only when the workers are about to run dry.
            MutexLock lock(mu_);
            while (running_.load() && lane.queued.size() >= lane.workers) {
                lane.runs_low.Wait(mu_);
            }
        }
        NodeId id = worker_->id();
        if (id == kNoNode) {
            Pause(std::chrono::milliseconds(100));
            continue;
        }
        auto started = std::chrono::steady_clock::now();
        Result<std::vector<Task>> tasks = poll(id);
        if (!tasks.ok()) {
            spdlog::debug("{} poll: {}", lane.what, tasks.status().ToString());
            Pause(std::chrono::milliseconds(200));
            continue;
        }
        if (!tasks->empty()) {
            received(tasks->size());
            MutexLock lock(mu_);
            for (Task& task : *tasks) lane.queued.push_back({id, std::move(task), {}});
            // One worker; a worker that leaves tasks queued wakes the next (WorkLoop), so as
            // many wake as the tasks need however many each takes.
            lane.has_work.NotifyOne();
        } else if (std::chrono::steady_clock::now() - started < options_.poll_wait / 2) {
            // Empty well before the wait: the master does not know us (yet). Do not spin.
            Pause(std::chrono::milliseconds(50));
        }
    }
}

template <typename Task, typename More, typename Run>
void Node::WorkLoop(Lane<Task>& lane, More more, Run run) {
    std::vector<Queued<Task>> work;
    for (;;) {
        work.clear();
        {
            MutexLock lock(mu_);
            while (running_.load() && lane.queued.empty()) lane.has_work.Wait(mu_);
            if (!running_.load()) return;
            const size_t queued = lane.queued.size();
            do {
                work.push_back(std::move(lane.queued.front()));
                lane.queued.pop_front();
            } while (!lane.queued.empty() && lane.queued.front().id == work.front().id &&
                     more(std::as_const(work), lane.queued.front().task));
            // The poller waits for the queue to fall under `workers`: wake it at that step only.
            if (queued >= lane.workers && lane.queued.size() < lane.workers) {
                lane.runs_low.NotifyOne();
            }
            if (!lane.queued.empty()) lane.has_work.NotifyOne();  // the rest, for the next
        }
        run(work);
    }
}

bool Node::TakeOffloads::operator()(const std::vector<Queued<OffloadTask>>& taken,
                                    const OffloadTask& next) const {
    // As many as there are, not a share per worker: a batch is one commit however many it
    // holds, and shares of ~2 tasks (32 workers, the poller refilling at 32 queued) gave
    // 490-530 requests/s at 4 KiB pages against 610-720 (bench/results/engine.md).
    if (taken.size() >= kMaxTasks) return false;
    uint64_t bytes = next.size;
    for (const auto& q : taken) bytes += q.task.size;
    return bytes <= kMaxBytes;
}

}  // namespace mooncake
