#include "daemon/node.h"

#include <cstring>

#include "core/disk/disk_store.h"
#include "core/metrics.h"
#include "daemon/disk_health.h"
#include "daemon/fault_injection.h"
#include "daemon/segment.h"
#include "spdlog/spdlog.h"
#include "thrift/data_transport.h"

namespace mooncake {
namespace {

using SteadyTime = std::chrono::steady_clock;

// Disk records re-registered per call, to keep each frame well under the RPC frame limit.
constexpr size_t kReportChunk = 2000;
// How long a promotion waits for the master to free DRAM for its staging range.
constexpr auto kStagingWait = std::chrono::milliseconds(2000);

}  // namespace

Node::Node(NodeOptions options, MasterLink& master, Segment& segment, DiskStore* disk,
           DataTransport& peers, const Config& config, MetricsRegistry& metrics)
    : options_(std::move(options)),
      master_(master),
      segment_(segment),
      disk_(disk),
      peers_(peers),
      config_(config),
      metrics_(metrics),
      offloads_ok_(metrics.GetCounter("node_offloads_total", "offload tasks this node did",
                                      {{"result", "ok"}})),
      offloads_failed_(metrics.GetCounter("node_offloads_total", "offload tasks this node did",
                                          {{"result", "failed"}})),
      promotions_ok_(metrics.GetCounter("node_promotions_total",
                                        "promotion tasks this node did", {{"result", "ok"}})),
      promotions_failed_(metrics.GetCounter("node_promotions_total",
                                            "promotion tasks this node did",
                                            {{"result", "failed"}})),
      reregistrations_(metrics.GetCounter("node_registrations_total",
                                          "times this node registered with the master")),
      promotion_batches_(metrics.GetCounter(
          "node_promotion_batches_total",
          "promotion long-polls that returned work (tasks per round trip = tasks / batches)")),
      promotion_tasks_(metrics.GetCounter("node_promotion_tasks_received_total",
                                          "promotion tasks received by long-polls")),
      promotion_work_seconds_(metrics.GetHistogram(
          "node_promotion_work_seconds",
          "seconds from hand-out to commit of a promotion on this node (disk read, staging, "
          "copy, commit)",
          LatencyBucketsSeconds())) {
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
        // Runs on whichever thread dropped the record; queue it, the heartbeat loop reports.
        disk_->SetDropListener([this](const DiskObjectInfo& info, DropReason reason) {
            spdlog::debug("disk dropped {} gen {} ({})", QuoteKey(info.key), info.generation,
                          reason == DropReason::kCorrupt ? "corrupt" : "evicted");
            std::lock_guard lock(mu_);
            dropped_.push_back({info.key, info.generation});
            cv_.notify_all();
        });
    }
}

Node::~Node() {
    Stop();
    metrics_.RemoveCallbackGauge("local_segment_capacity_bytes");
    metrics_.RemoveCallbackGauge("local_segment_held_bytes");
    if (disk_ != nullptr) {
        disk_->SetDropListener(nullptr);
        metrics_.RemoveCallbackGauge("local_disk_capacity_bytes");
        metrics_.RemoveCallbackGauge("local_disk_used_bytes");
        metrics_.RemoveCallbackGauge("local_disk_objects");
    }
}

bool Node::Pause(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [this] { return !running_.load(); });
    return running_.load();
}

Status Node::Register() {
    auto id = master_.RegisterNode(options_.spec);
    if (!id.ok()) return id.status();
    id_.store(*id);
    reregistrations_.Inc();
    spdlog::info("node '{}' registered with the master as node {} (segment {}, disk {})",
                 options_.spec.name, *id, FormatSize(options_.spec.segment_capacity),
                 FormatSize(options_.spec.disk_capacity));
    RegisterMemoryRanges(*id);
    RegisterDiskRecords(*id);
    return Status::Ok();
}

void Node::RegisterMemoryRanges(NodeId id) {
    // The master decides, per range, whether it serves it again (core/store_rejoin.cc); a
    // range it refuses, or never hears of, must not stay readable under our name.
    std::vector<Segment::HeldRange> held = segment_.Held();
    size_t adopted = 0, refused = 0;
    for (size_t begin = 0; begin < held.size(); begin += kReportChunk) {
        const size_t end = std::min(held.size(), begin + kReportChunk);
        std::vector<MemoryReplicaReport> chunk;
        for (size_t i = begin; i < end; ++i) {
            chunk.push_back({held[i].key, held[i].generation, held[i].length, held[i].offset});
        }
        auto result = master_.RegisterMemoryReplicas(id, chunk);
        for (size_t i = 0; i < chunk.size(); ++i) {
            if (result.ok() && i < result->size() && (*result)[i].ok()) {
                ++adopted;
                continue;
            }
            ++refused;
            segment_.Release(chunk[i].key, chunk[i].generation, chunk[i].offset);
        }
        if (!result.ok()) {
            spdlog::warn("re-registering DRAM ranges failed: {}", result.status().ToString());
            for (size_t i = end; i < held.size(); ++i) {
                segment_.Release(held[i].key, held[i].generation, held[i].offset);
            }
            break;
        }
    }
    if (!held.empty()) {
        spdlog::info("re-registered {} DRAM ranges ({} refused)", adopted, refused);
    }
}

void Node::RegisterDiskRecords(NodeId id) {
    if (disk_ == nullptr) return;
    std::vector<DiskObjectInfo> records = disk_->List();
    size_t adopted = 0, refused = 0;
    for (size_t begin = 0; begin < records.size(); begin += kReportChunk) {
        std::vector<DiskReplicaReport> chunk;
        for (size_t i = begin; i < std::min(records.size(), begin + kReportChunk); ++i) {
            chunk.push_back({records[i].key, records[i].generation, records[i].size});
        }
        auto result = master_.RegisterDiskReplicas(id, chunk);
        if (!result.ok()) {
            spdlog::warn("re-registering disk records failed: {}", result.status().ToString());
            return;
        }
        for (size_t i = 0; i < result->size() && i < chunk.size(); ++i) {
            const Status& st = (*result)[i];
            if (st.ok()) {
                ++adopted;
                continue;
            }
            ++refused;
            // The master knows a newer incarnation, or the key was removed while we were away:
            // this record can never be read again.
            if (st.Is(StatusCode::kStaleGeneration) || st.Is(StatusCode::kNotFound)) {
                (void)disk_->Remove(chunk[i].key, chunk[i].generation);
            }
            spdlog::debug("disk record {} refused: {}", QuoteKey(chunk[i].key), st.ToString());
        }
    }
    if (!records.empty()) {
        spdlog::info("re-registered {} disk records ({} refused)", adopted, refused);
    }
}

Status Node::Start(const std::atomic<bool>& give_up) {
    running_.store(true);
    auto backoff = std::chrono::milliseconds(100);
    for (;;) {
        Status st = Register();
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
    threads_.emplace_back([this] { OffloadLoop(); });
    threads_.emplace_back([this] { PromotionPollLoop(); });
    for (int i = 0; i < std::max(1, options_.promotion_workers); ++i) {
        threads_.emplace_back([this] { PromotionWorker(); });
    }
    return Status::Ok();
}

void Node::Stop() {
    if (!running_.exchange(false)) return;
    cv_.notify_all();
    // Leaving wakes our long-polls on the master at once (it marks the node gone).
    NodeId id = id_.exchange(kNoNode);
    if (id != kNoNode) {
        Status st = master_.UnregisterNode(id);
        if (!st.ok()) spdlog::warn("leaving the master: {}", st.ToString());
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
}

// ---------------- heartbeat ----------------

void Node::FlushDrops(NodeId id) {
    std::deque<DiskDelete> drops;
    {
        std::lock_guard lock(mu_);
        drops.swap(dropped_);
    }
    for (const DiskDelete& d : drops) {
        Status st = master_.ReportDiskReplicaDropped(id, d.key, d.generation);
        if (!st.ok() && !st.Is(StatusCode::kNotFound) && !st.Is(StatusCode::kStaleGeneration)) {
            spdlog::debug("reporting dropped disk record {}: {}", QuoteKey(d.key), st.ToString());
        }
    }
}

void Node::ReportHealth(NodeId id, bool force) {
    NodeHealth now;
    now.reported = true;
    if (disk_ != nullptr) {
        now.disk_used = disk_->allocated_bytes();
        now.disk_objects = disk_->object_count();
    }
    if (options_.disk_health != nullptr) now.disk_corruptions = options_.disk_health->total();
    if (!force && now.disk_used == last_health_.disk_used &&
        now.disk_objects == last_health_.disk_objects &&
        now.disk_corruptions == last_health_.disk_corruptions) {
        return;
    }
    Status st = master_.ReportNodeHealth(id, now);
    if (st.ok()) {
        last_health_ = now;
    } else {
        spdlog::debug("reporting disk health: {}", st.ToString());
    }
}

void Node::HeartbeatLoop() {
    auto next = SteadyTime::now();
    // The seq of the last reply acted on, confirmed with the next beat (until then the master
    // keeps sending its releases and deletes: acting on one twice is harmless, on none not).
    uint64_t applied = 0;
    NodeId applied_for = kNoNode;
    while (running_.load()) {
        {
            std::unique_lock lock(mu_);
            cv_.wait_until(lock, next, [this] { return !running_.load() || !dropped_.empty(); });
        }
        if (!running_.load()) break;
        NodeId id = id_.load();
        if (id == kNoNode) continue;
        FlushDrops(id);
        if (SteadyTime::now() < next) continue;  // woken early just to report drops
        next = SteadyTime::now() + options_.heartbeat_interval;

        if (id != applied_for) applied = 0;  // registered again: nothing confirmed there yet
        applied_for = id;
        auto reply = master_.Heartbeat(id, applied);
        if (!reply.ok()) {
            if (reply.status().Is(StatusCode::kUnknownNode) && running_.load()) {
                spdlog::warn("the master no longer knows node {}; registering again", id);
                Status st = Register();
                if (st.Is(StatusCode::kStaleGeneration)) {
                    spdlog::error("another process registered as '{}' and replaced this one: {}",
                                  options_.spec.name, st.ToString());
                } else if (!st.ok()) {
                    spdlog::warn("registering again failed: {}", st.ToString());
                }
            } else {
                spdlog::warn("heartbeat failed: {}", reply.status().ToString());
            }
            continue;
        }
        if (Status lost = MOONCAKE_FAULT_POINT("heartbeat.reply"); !lost.ok()) {
            spdlog::warn("heartbeat reply dropped: {}", lost.ToString());
            continue;
        }
        for (const ReleasedRange& r : reply->released) {
            segment_.Release(r.key, r.generation, r.offset);
        }
        if (disk_ != nullptr) {
            for (const DiskDelete& d : reply->disk_deletes) {
                Status st = disk_->Remove(d.key, d.generation);
                if (!st.ok() && !st.Is(StatusCode::kNotFound)) {
                    spdlog::warn("deleting disk record {}: {}", QuoteKey(d.key), st.ToString());
                }
            }
        }
        if (reply->seq != 0) applied = reply->seq;
        // Every beat: `check` compares a report only with the master's figures of its time.
        ReportHealth(id, /*force=*/true);
    }
}

// ---------------- offload ----------------

void Node::OffloadLoop() {
    while (running_.load()) {
        NodeId id = id_.load();
        if (id == kNoNode) {
            Pause(std::chrono::milliseconds(100));
            continue;
        }
        auto started = SteadyTime::now();
        auto tasks = master_.OffloadObjectHeartbeat(
            id, static_cast<size_t>(config_.offload_batch_max()), options_.poll_wait);
        if (!tasks.ok()) {
            spdlog::debug("offload poll: {}", tasks.status().ToString());
            Pause(std::chrono::milliseconds(200));
            continue;
        }
        for (const OffloadTask& task : *tasks) DoOffload(id, task);
        // An empty answer well before the wait means the master does not know us (yet):
        // do not spin.
        if (tasks->empty() && SteadyTime::now() - started < options_.poll_wait / 2) {
            Pause(std::chrono::milliseconds(50));
        }
    }
}

void Node::DoOffload(NodeId id, const OffloadTask& task) {
    Status st;
    if (disk_ == nullptr) {
        st = Status::NotFound("this node has no LOCAL_DISK tier");
    } else {
        auto lease = segment_.BeginRead(task.key, task.generation, task.source_offset, task.size);
        st = lease.ok() ? MOONCAKE_FAULT_POINT("disk.write") : lease.status();
        if (st.ok()) {
            st = disk_->Write(task.key, task.generation, {lease->data(), lease->size()},
                              IoPriority::kBackground);
        }
    }
    if (st.ok()) {
        (void)MOONCAKE_FAULT_POINT("offload.before_report");
        st = master_.NotifyOffloadSuccess(id, task.key, task.generation);
        if (st.ok()) {
            offloads_ok_.Inc();
            return;
        }
        spdlog::debug("offload of {} not accepted: {}", QuoteKey(task.key), st.ToString());
        offloads_failed_.Inc();
        // The master no longer wants this copy (key removed or rewritten, task cancelled):
        // nobody will ever read the record, so it must not hold disk space. On any other error
        // (the reply may just be lost) the record stays; re-registration reconciles it.
        if (st.Is(StatusCode::kNotFound) || st.Is(StatusCode::kStaleGeneration)) {
            (void)disk_->Remove(task.key, task.generation);
        }
        return;
    }
    offloads_failed_.Inc();
    spdlog::warn("offload of {} failed: {}", QuoteKey(task.key), st.ToString());
    Status told = master_.NotifyOffloadFailure(id, task.key, task.generation);
    if (!told.ok()) spdlog::debug("NotifyOffloadFailure: {}", told.ToString());
}

// ---------------- promotion ----------------

void Node::PromotionPollLoop() {
    const size_t workers = static_cast<size_t>(std::max(1, options_.promotion_workers));
    while (running_.load()) {
        {
            // Fetch only when the workers are about to run dry.
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return !running_.load() || promotions_.size() < workers; });
        }
        NodeId id = id_.load();
        if (id == kNoNode) {
            Pause(std::chrono::milliseconds(100));
            continue;
        }
        auto started = SteadyTime::now();
        auto tasks = master_.PromotionObjectHeartbeat(
            id, static_cast<size_t>(config_.promotion_batch_max()), options_.poll_wait);
        if (!tasks.ok()) {
            spdlog::debug("promotion poll: {}", tasks.status().ToString());
            Pause(std::chrono::milliseconds(200));
            continue;
        }
        if (!tasks->empty()) {
            promotion_batches_.Inc();
            promotion_tasks_.Inc(static_cast<double>(tasks->size()));
            std::lock_guard lock(mu_);
            for (PromotionTask& task : *tasks) promotions_.emplace_back(id, std::move(task));
            cv_.notify_all();
        } else if (SteadyTime::now() - started < options_.poll_wait / 2) {
            // Empty well before the wait: the master does not know us (yet). Do not spin.
            Pause(std::chrono::milliseconds(50));
        }
    }
}

void Node::PromotionWorker() {
    for (;;) {
        std::pair<NodeId, PromotionTask> work;
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [this] { return !running_.load() || !promotions_.empty(); });
            if (!running_.load()) return;
            work = std::move(promotions_.front());
            promotions_.pop_front();
            cv_.notify_all();  // the poller may want more
        }
        DoPromotion(work.first, work.second);
    }
}

Status Node::CopyToStaging(NodeId id, const PromotionTask& task,
                           std::span<const std::byte> bytes) {
    // NotReady: the master is offloading colder objects to make room and keeps the task; ask
    // again shortly (a repeated call hands back the same range once it is allocated).
    auto deadline = SteadyTime::now() + kStagingWait;
    auto backoff = std::chrono::milliseconds(2);
    auto staged = master_.PromotionAllocStart(id, task.key, task.generation, task.size);
    while (!staged.ok() && staged.status().Is(StatusCode::kNotReady) &&
           SteadyTime::now() + backoff < deadline && running_.load()) {
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
        staged = master_.PromotionAllocStart(id, task.key, task.generation, task.size);
    }
    if (!staged.ok()) return staged.status();
    if (staged->replica.node == id) {
        return segment_.Write(task.key, task.generation, staged->replica.offset, bytes);
    }
    if (staged->data_address.empty()) {
        return Status::Unavailable("the node of the staged range is gone");
    }
    return peers_.WriteMemory(staged->data_address, task.key, task.generation,
                              staged->replica.offset, bytes);
}

void Node::DoPromotion(NodeId id, const PromotionTask& task) {
    auto started = SteadyTime::now();
    Status st;
    if (disk_ == nullptr) {
        st = Status::NotFound("this node has no LOCAL_DISK tier");
    } else {
        // Pinned so disk eviction cannot take the source while we copy it.
        disk_->Pin(task.key, task.generation);
        AlignedBuffer buffer(AlignUp(task.size));
        std::span<std::byte> bytes = buffer.span().first(task.size);
        st = MOONCAKE_FAULT_POINT("disk.read");
        if (st.ok()) st = disk_->Read(task.key, task.generation, bytes, IoPriority::kBackground);
        if (st.ok()) st = MOONCAKE_FAULT_POINT("promotion.before_copy");
        if (st.ok()) st = CopyToStaging(id, task, bytes);
        disk_->Unpin(task.key, task.generation);
    }
    if (st.ok()) st = MOONCAKE_FAULT_POINT("promotion.before_commit");
    if (st.ok()) {
        st = master_.NotifyPromotionSuccess(id, task.key, task.generation);
        if (st.ok()) {
            promotions_ok_.Inc();
            promotion_work_seconds_.Observe(
                std::chrono::duration<double>(SteadyTime::now() - started).count());
            return;
        }
        // Cancelled or expired meanwhile: the master freed the staging itself.
        spdlog::debug("promotion of {} not committed: {}", QuoteKey(task.key), st.ToString());
        promotions_failed_.Inc();
        return;
    }
    promotions_failed_.Inc();
    spdlog::debug("promotion of {} failed: {}", QuoteKey(task.key), st.ToString());
    // Frees any staging and unpins the source at once (idempotent on the master).
    Status told = master_.NotifyPromotionFailure(id, task.key, task.generation);
    if (!told.ok()) spdlog::debug("NotifyPromotionFailure: {}", told.ToString());
}

}  // namespace mooncake
