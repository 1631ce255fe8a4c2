#include "core/node/node_worker.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "core/disk/device.h"
#include "core/base/metrics.h"
#include "spdlog/spdlog.h"

namespace mooncake {
namespace {

// Records registered again per call, to keep each frame well under the RPC frame limit.
constexpr size_t kReportChunk = 2000;
constexpr std::chrono::milliseconds kNoWait{0};
// Refused disk records named one by one per registration (the rest are counted).
constexpr size_t kRefusalsLogged = 20;

// The synchronous drivers: what the master has queued for `id` now, each task run.
template <typename Poll, typename Run>
NodeWorker::Ran RunQueued(NodeId id, Poll poll, Run run) {
    NodeWorker::Ran ran;
    if (id == kNoNode) return ran;
    auto tasks = poll(id);
    if (!tasks.ok()) return ran;
    for (const auto& task : *tasks) {
        ++ran.tasks;
        ran.done += run(id, task);
    }
    return ran;
}

}  // namespace

NodeWorker::NodeWorker(NodeWorkerOptions options, MasterLink& master, NodeSegment& segment,
                       NodeDisk* disk, PeerWriter* peers, const Clock& clock,
                       MetricsRegistry& metrics)
    : options_(std::move(options)),
      master_(master),
      segment_(segment),
      disk_(disk),
      peers_(peers),
      clock_(clock),
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
      registrations_(metrics.GetCounter("node_registrations_total",
                                        "times this node registered with the master")),
      promotion_work_seconds_(metrics.GetHistogram(
          "node_promotion_work_seconds",
          "seconds a promotion worker of this node spent on one promotion (disk read, "
          "staging, copy, commit)",
          LatencyBucketsSeconds())),
      promotion_read_seconds_(metrics.GetHistogram(
          "node_promotion_read_seconds", "seconds a promotion's read of its LOCAL_DISK source took",
          LatencyBucketsSeconds())),
      promotion_staging_seconds_(metrics.GetHistogram(
          "node_promotion_staging_seconds",
          "seconds a promotion waited for its DRAM staging range (PromotionAllocStart, retries "
          "while offloads free room included)",
          LatencyBucketsSeconds())) {
    if (disk_ != nullptr) {
        // Runs on whichever thread dropped the record; queued, the next heartbeat reports it
        // (held while its offload's report is under way: reporting_offloads_).
        disk_->SetDropListener([this](const DiskObjectInfo& info, DropReason reason) {
            spdlog::debug("disk dropped {} gen {} ({})", QuoteKey(info.key), info.generation,
                          reason == DropReason::kCorrupt ? "corrupt" : "evicted");
            MutexLock lock(mu_);
            auto reporting = reporting_offloads_.find({info.key, info.generation});
            if (reporting != reporting_offloads_.end()) {
                ++reporting->second.drops;
                return;
            }
            QueueDrop({info.key, info.generation});
        });
    }
}

NodeWorker::~NodeWorker() {
    if (disk_ != nullptr) disk_->SetDropListener(nullptr);
}

Status NodeWorker::Fault(const char* point) const {
    return options_.fault ? options_.fault(point) : Status::Ok();
}

void NodeWorker::RequestStop() { stopping_.store(true); }

// ---------------- registration ----------------

Status NodeWorker::Register() {
    // What we hold is listed before the master knows us under the new id: once our segment
    // is open to new data, clients may write puts of the new registration into it (and the
    // master hands out offloads), and such a range, reported as if it were left from
    // before, would be refused (its put is still in flight) and released under the writer:
    // the object would be lost once the put ended.
    std::vector<HeldRange> held = segment_.Held();
    std::vector<DiskObjectInfo> records;
    if (disk_ != nullptr) records = disk_->List();
    // While the master has not heard what we hold, it must place nothing in our segment: a
    // new range there could overlap one we are about to report, and the report (refused)
    // would lose that object. holds_memory keeps the segment closed until our next
    // heartbeat, sent as soon as the ranges are reported (the disk records need no wait:
    // the node places its own disk writes).
    NodeSpec spec = options_.spec;
    spec.holds_memory = !held.empty();
    auto id = master_.RegisterNode(spec);
    if (!id.ok()) return id.status();
    id_.store(*id);
    registrations_.Inc();
    spdlog::info("node '{}' registered with the master as node {} (segment {}, disk {})",
                 options_.spec.name, *id, FormatSize(options_.spec.segment_capacity),
                 FormatSize(options_.spec.disk_capacity));
    RegisterMemoryRanges(*id, held);
    reoffer_.clear();  // everything held is listed again now
    if (spec.holds_memory) {
        if (Status beat = BeatOnce(); !beat.ok()) {
            // The next heartbeat opens it, then.
            spdlog::warn("the heartbeat that opens this node's segment again: {}",
                         beat.ToString());
        }
    }
    RegisterDiskRecords(*id, records);
    return Status::Ok();
}

void NodeWorker::RegisterMemoryRanges(NodeId id, const std::vector<HeldRange>& held) {
    // The master decides, per range, whether it serves it again (core/master/store_rejoin.cc); a
    // range it refuses, or never hears of, must not stay readable under our name.
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

namespace {

// An answer about one record that a later offer may change (the master was busy, or lost its
// lead, while it answered): the record is offered again rather than deleted.
bool WorthOfferingAgain(const Status& st) {
    return st.Is(StatusCode::kUnavailable) || st.Is(StatusCode::kTimeout) ||
           st.Is(StatusCode::kBusy) || st.Is(StatusCode::kNotReady) ||
           st.Is(StatusCode::kNotLeader);
}

}  // namespace

void NodeWorker::RegisterDiskRecords(NodeId id, const std::vector<DiskObjectInfo>& records) {
    if (disk_ == nullptr) return;
    // Every record the master refuses is deleted: the master will never list it, so nobody
    // can read it, and kept it would hold disk space and make `check` see more on this disk
    // than the master counts (the LOCAL_DISK drift). Refused: stale (the master holds another
    // incarnation), removed while this node was away, already on another node's disk (one
    // LOCAL_DISK copy per object), or not a valid record. Records whose answer was lost or
    // transient are offered again after the next beat (ReofferDiskRecords).
    size_t adopted = 0, refused = 0, logged = 0;
    std::map<std::string, size_t, std::less<>> refused_by_reason;
    std::vector<DiskObjectInfo> again;
    for (size_t begin = 0; begin < records.size(); begin += kReportChunk) {
        const size_t end = std::min(records.size(), begin + kReportChunk);
        std::vector<DiskReplicaReport> chunk;
        for (size_t i = begin; i < end; ++i) {
            chunk.push_back({records[i].key, records[i].generation, records[i].size});
        }
        auto result = master_.RegisterDiskReplicas(id, chunk);
        if (!result.ok()) {
            spdlog::warn("re-registering disk records failed: {}; {} record(s) will be offered "
                         "again after the next heartbeat",
                         result.status().ToString(), records.size() - begin);
            again.insert(again.end(), records.begin() + static_cast<ptrdiff_t>(begin),
                         records.end());
            break;
        }
        for (size_t i = 0; i < chunk.size(); ++i) {
            const Status st = i < result->size()
                                  ? (*result)[i]
                                  : Status::Unavailable("the master answered too few items");
            if (st.ok()) {
                ++adopted;
                continue;
            }
            if (WorthOfferingAgain(st)) {
                again.push_back(records[begin + i]);
                continue;
            }
            ++refused;
            const std::string reason(StatusCodeName(st.code()));
            ++refused_by_reason[reason];
            metrics_
                .GetCounter("node_disk_records_refused_total",
                            "disk records this node offered the master on registering that "
                            "the master refused, by reason (a status code); each was deleted",
                            {{"reason", reason}})
                .Inc();
            Status removed = disk_->Remove(chunk[i].key, chunk[i].generation);
            if (!removed.ok() && !removed.Is(StatusCode::kNotFound)) {
                spdlog::warn("deleting refused disk record {} gen {}: {}", QuoteKey(chunk[i].key),
                             chunk[i].generation, removed.ToString());
            }
            if (logged < kRefusalsLogged) {
                ++logged;
                spdlog::warn("disk record {} gen {} ({}) refused by the master, deleted: {}",
                             QuoteKey(chunk[i].key), chunk[i].generation,
                             FormatSize(chunk[i].size), st.ToString());
            }
        }
    }
    if (!again.empty()) {
        reoffer_ = std::move(again);
        reoffer_for_ = id;
    }
    if (refused > 0) {
        std::string reasons;
        for (const auto& [reason, n] : refused_by_reason) {
            reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(n);
        }
        spdlog::warn("{} disk record(s) refused by the master and deleted ({}){}", refused,
                     reasons, logged < refused ? "; the first ones are named above" : "");
    }
    if (!records.empty()) {
        spdlog::info("re-registered {} disk records ({} refused, {} to offer again)", adopted,
                     refused, reoffer_.size());
    }
}

size_t NodeWorker::ReofferDiskRecords(NodeId id) {
    if (reoffer_.empty()) return 0;
    std::vector<DiskObjectInfo> pending = std::move(reoffer_);
    reoffer_.clear();
    if (reoffer_for_ != id || disk_ == nullptr) return 0;  // registered again: all were listed
    // Only what the disk still holds (it may have evicted some meanwhile, and reported that).
    std::set<std::pair<std::string_view, Generation>> held;
    std::vector<DiskObjectInfo> now = disk_->List();
    for (const DiskObjectInfo& r : now) held.emplace(r.key, r.generation);
    std::erase_if(pending, [&](const DiskObjectInfo& r) {
        return held.count({r.key, r.generation}) == 0;
    });
    RegisterDiskRecords(id, pending);
    return pending.size();
}

Status NodeWorker::Leave() {
    NodeId id = id_.exchange(kNoNode);
    if (id == kNoNode) return Status::Ok();
    return master_.UnregisterNode(id);
}

// ---------------- heartbeat ----------------

void NodeWorker::SetDropNotifier(std::function<void()> notify) {
    MutexLock lock(mu_);
    drop_notify_ = std::move(notify);
}

void NodeWorker::QueueDrop(DiskDelete drop) {
    dropped_.push_back(std::move(drop));
    if (drop_notify_) drop_notify_();
}

bool NodeWorker::has_drops() const {
    MutexLock lock(mu_);
    return !dropped_.empty();
}

size_t NodeWorker::FlushDrops() {
    NodeId id = id_.load();
    if (id == kNoNode) return 0;
    MutexLock flushing(flush_mu_);
    std::deque<DiskDelete> drops;
    {
        MutexLock lock(mu_);
        drops.swap(dropped_);
    }
    for (const DiskDelete& d : drops) {
        Status st = master_.ReportDiskReplicaDropped(id, d.key, d.generation);
        if (!st.ok() && !st.Is(StatusCode::kNotFound) && !st.Is(StatusCode::kStaleGeneration)) {
            spdlog::debug("reporting dropped disk record {}: {}", QuoteKey(d.key), st.ToString());
        }
    }
    return drops.size();
}

Status NodeWorker::Heartbeat() {
    Status st = BeatOnce();
    if (!st.Is(StatusCode::kUnknownNode) || stopping_.load()) return st;
    spdlog::warn("the master no longer knows node {}; registering again", id_.load());
    Status registered = Register();
    if (registered.Is(StatusCode::kStaleGeneration)) {
        spdlog::error("another process registered as '{}' and replaced this one: {}",
                      options_.spec.name, registered.ToString());
    } else if (!registered.ok()) {
        spdlog::warn("registering again failed: {}", registered.ToString());
    }
    return st;
}

Status NodeWorker::BeatOnce() {
    NodeId id = id_.load();
    if (id == kNoNode) return Status::Unavailable("the node is not registered");
    FlushDrops();
    if (id != applied_for_) applied_ = 0;  // registered again: nothing confirmed there yet
    applied_for_ = id;
    auto reply = master_.Heartbeat(id, applied_);
    if (!reply.ok()) {
        if (!reply.status().Is(StatusCode::kUnknownNode)) {
            spdlog::warn("heartbeat failed: {}", reply.status().ToString());
        }
        return reply.status();
    }
    if (Status lost = Fault("heartbeat.reply"); !lost.ok()) {
        spdlog::warn("heartbeat reply dropped: {}", lost.ToString());
        return lost;
    }
    for (const ReleasedRange& r : reply->released) {
        segment_.Release(r.key, r.generation, r.offset);
    }
    if (disk_ != nullptr && !reply->disk_deletes.empty()) {
        // Together: one journal flush for the whole list, not one per record.
        std::vector<DiskRemoval> removals;
        removals.reserve(reply->disk_deletes.size());
        for (const DiskDelete& d : reply->disk_deletes) removals.push_back({d.key, d.generation});
        std::vector<Status> removed = disk_->RemoveMany(removals);
        for (size_t i = 0; i < std::min(removed.size(), removals.size()); ++i) {
            const Status& st = removed[i];
            if (!st.ok() && !st.Is(StatusCode::kNotFound)) {
                spdlog::warn("deleting disk record {}: {}", QuoteKey(removals[i].key),
                             st.ToString());
            }
        }
    }
    if (reply->seq != 0) applied_ = reply->seq;
    ReofferDiskRecords(id);
    if (options_.health) {
        NodeHealth health = options_.health();
        health.reported = true;
        if (Status st = master_.ReportNodeHealth(id, health); !st.ok()) {
            spdlog::debug("reporting disk health: {}", st.ToString());
        }
    }
    return Status::Ok();
}

// ---------------- offload ----------------

Result<std::vector<OffloadTask>> NodeWorker::PollOffloads(NodeId id, size_t max,
                                                          std::chrono::milliseconds wait) {
    return master_.OffloadObjectHeartbeat(id, max, wait);
}

uint64_t NodeWorker::BeginOffloadReport(const OffloadTask& task) {
    MutexLock lock(mu_);
    OffloadReport& report = reporting_offloads_[{task.key, task.generation}];
    ++report.writers;
    return report.drops;
}

bool NodeWorker::DroppedSince(const OffloadTask& task, uint64_t drops_at_begin) const {
    MutexLock lock(mu_);
    auto it = reporting_offloads_.find({task.key, task.generation});
    return it != reporting_offloads_.end() && it->second.drops > drops_at_begin;
}

void NodeWorker::EndOffloadReport(const OffloadTask& task, uint64_t drops_at_begin) {
    MutexLock lock(mu_);
    auto it = reporting_offloads_.find({task.key, task.generation});
    if (it == reporting_offloads_.end()) return;
    const bool dropped = it->second.drops > drops_at_begin;
    if (--it->second.writers == 0) reporting_offloads_.erase(it);
    if (dropped) QueueDrop({task.key, task.generation});
}

bool NodeWorker::RunOffload(NodeId id, const OffloadTask& task) {
    Status st;
    uint64_t drops_at_begin = 0;
    if (disk_ == nullptr) {
        st = Status::NotFound("this node has no LOCAL_DISK tier");
    } else {
        drops_at_begin = BeginOffloadReport(task);
        st = segment_.ReadRange(task.key, task.generation, task.source_offset, task.size,
                                [&](std::span<const std::byte> bytes) {
                                    MC_RETURN_IF_ERROR(Fault("disk.write"));
                                    return disk_->Write(task.key, task.generation, bytes,
                                                        IoPriority::kBackground);
                                });
        if (!st.ok()) EndOffloadReport(task, drops_at_begin);  // no record of ours is left
    }
    return ReportOffload(id, task, std::move(st), drops_at_begin);
}

size_t NodeWorker::RunOffloadBatch(NodeId id, std::span<const OffloadTask> tasks) {
    size_t taken = 0;
    if (disk_ == nullptr || tasks.size() < 2) {
        for (const OffloadTask& task : tasks) taken += RunOffload(id, task) ? 1 : 0;
        return taken;
    }
    // Each task's bytes are copied out of its range (a range is held steady only while
    // ReadRange runs), aligned so the disk writes them without another copy, then all are
    // written with one journal commit.
    std::vector<uint64_t> drops_at_begin(tasks.size());
    std::vector<Status> written(tasks.size());
    std::vector<AlignedBuffer> copies(tasks.size());
    std::vector<DiskWrite> items;
    std::vector<size_t> item_task;  // items[j] is tasks[item_task[j]]
    for (size_t i = 0; i < tasks.size(); ++i) {
        const OffloadTask& task = tasks[i];
        drops_at_begin[i] = BeginOffloadReport(task);
        written[i] = segment_.ReadRange(task.key, task.generation, task.source_offset, task.size,
                                        [&](std::span<const std::byte> bytes) {
                                            MC_RETURN_IF_ERROR(Fault("disk.write"));
                                            if (bytes.empty()) return Status::Ok();
                                            copies[i] = AlignedBuffer(bytes.size());
                                            std::memcpy(copies[i].data(), bytes.data(),
                                                        bytes.size());
                                            return Status::Ok();
                                        });
        if (!written[i].ok()) continue;
        items.push_back({task.key, task.generation, copies[i].span().first(task.size)});
        item_task.push_back(i);
    }
    std::vector<Status> answers = disk_->WriteMany(items, IoPriority::kBackground);
    for (size_t j = 0; j < answers.size(); ++j) written[item_task[j]] = std::move(answers[j]);
    for (size_t i = 0; i < tasks.size(); ++i) {
        if (!written[i].ok()) EndOffloadReport(tasks[i], drops_at_begin[i]);  // none of ours
        taken += ReportOffload(id, tasks[i], std::move(written[i]), drops_at_begin[i]) ? 1 : 0;
    }
    return taken;
}

bool NodeWorker::ReportOffload(NodeId id, const OffloadTask& task, Status st,
                               uint64_t drops_at_begin) {
    if (st.ok()) {
        (void)Fault("offload.before_report");
        // The write may have evicted older records to make room: the master hears of those
        // drops before of this copy, so it never counts more on the disk than the disk holds
        // (with offloads written in parallel it did: ResourcesFaultTest.DiskFull).
        FlushDrops();
        if (DroppedSince(task, drops_at_begin)) {
            // Another write evicted this record already (a disk smaller than the writes in
            // flight): nothing on the disk to offer, so the offload failed; its MEMORY copy
            // stays.
            EndOffloadReport(task, drops_at_begin);
            st = Status::NotFound("the disk evicted the record before the master heard of it");
        }
    }
    if (st.ok()) {
        st = master_.NotifyOffloadSuccess(id, task.key, task.generation);
        // Dropped while the master took it: reported now, after the copy it removes.
        EndOffloadReport(task, drops_at_begin);
        if (st.ok()) {
            offloads_ok_.Inc();
            return true;
        }
        spdlog::debug("offload of {} not accepted: {}", QuoteKey(task.key), st.ToString());
        offloads_failed_.Inc();
        if (st.Is(StatusCode::kNotFound) || st.Is(StatusCode::kStaleGeneration)) {
            (void)disk_->Remove(task.key, task.generation);
        }
        return false;
    }
    offloads_failed_.Inc();
    spdlog::warn("offload of {} failed: {}", QuoteKey(task.key), st.ToString());
    Status told = master_.NotifyOffloadFailure(id, task.key, task.generation);
    if (!told.ok()) spdlog::debug("NotifyOffloadFailure: {}", told.ToString());
    return false;
}

NodeWorker::Ran NodeWorker::RunOffloads(size_t max) {
    return RunQueued(id_.load(), [&](NodeId id) { return PollOffloads(id, max, kNoWait); },
                     [&](NodeId id, const OffloadTask& task) { return RunOffload(id, task); });
}

// ---------------- promotion ----------------

Result<std::vector<PromotionTask>> NodeWorker::PollPromotions(NodeId id, size_t max,
                                                              std::chrono::milliseconds wait) {
    return master_.PromotionObjectHeartbeat(id, max, wait);
}

bool NodeWorker::WaitForRoom(Nanos deadline, std::chrono::milliseconds& backoff) {
    if (stopping_.load()) return false;
    if (options_.room_wait == NodeWorkerOptions::RoomWait::kRunOffloads) {
        return RunOffloads(options_.inline_offload_batch).done > 0;
    }
    if (clock_.Now() + backoff >= deadline) return false;
    if (options_.sleep) {
        if (!options_.sleep(backoff)) return false;
    } else {
        std::this_thread::sleep_for(backoff);
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
    return !stopping_.load();
}

Status NodeWorker::CopyToStaging(NodeId id, const PromotionTask& task,
                                 std::span<const std::byte> bytes) {
    // NotReady: the master is offloading colder objects to make room and keeps the task; ask
    // again (a repeated call hands back the same range once it is allocated).
    const Nanos started = clock_.Now();
    const Nanos deadline = started + options_.staging_wait;
    auto backoff = std::chrono::milliseconds(2);
    auto staged = master_.PromotionAllocStart(id, task.key, task.generation, task.size);
    while (!staged.ok() && staged.status().Is(StatusCode::kNotReady) &&
           WaitForRoom(deadline, backoff)) {
        staged = master_.PromotionAllocStart(id, task.key, task.generation, task.size);
    }
    promotion_staging_seconds_.Observe(
        std::chrono::duration<double>(clock_.Now() - started).count());
    if (!staged.ok()) return staged.status();
    if (staged->replica.node == id) {
        return segment_.Write(task.key, task.generation, staged->replica.offset, bytes);
    }
    if (staged->data_address.empty() || peers_ == nullptr) {
        return Status::Unavailable("the node of the staged range is gone");
    }
    return peers_->WriteMemory(staged->data_address, task.key, task.generation,
                               staged->replica.offset, bytes);
}

bool NodeWorker::RunPromotion(NodeId id, const PromotionTask& task) {
    return RunPromotion(id, task, {});
}

bool NodeWorker::RunPromotion(NodeId id, const PromotionTask& task,
                              std::span<const std::byte> read_already) {
    const Nanos started = clock_.Now();
    Status st;
    if (!read_already.empty()) {
        st = Fault("promotion.before_copy");
        if (st.ok()) st = CopyToStaging(id, task, read_already);
    } else if (disk_ == nullptr) {
        st = Status::NotFound("this node has no LOCAL_DISK tier");
    } else {
        // Pinned so disk eviction cannot take the source while we copy it.
        disk_->Pin(task.key, task.generation);
        AlignedBuffer buffer(AlignUp(task.size));
        std::span<std::byte> bytes = buffer.span().first(task.size);
        st = Fault("disk.read");
        if (st.ok()) {
            const Nanos read_start = clock_.Now();
            st = disk_->Read(task.key, task.generation, bytes, IoPriority::kPromotion);
            promotion_read_seconds_.Observe(
                std::chrono::duration<double>(clock_.Now() - read_start).count());
        }
        if (st.ok()) st = Fault("promotion.before_copy");
        if (st.ok()) st = CopyToStaging(id, task, bytes);
        disk_->Unpin(task.key, task.generation);
    }
    if (st.ok()) st = Fault("promotion.before_commit");
    if (st.ok()) {
        st = master_.NotifyPromotionSuccess(id, task.key, task.generation);
        if (st.ok()) {
            promotions_ok_.Inc();
            promotion_work_seconds_.Observe(
                std::chrono::duration<double>(clock_.Now() - started).count());
            return true;
        }
        // Cancelled or expired meanwhile: the master freed the staging itself.
        spdlog::debug("promotion of {} not committed: {}", QuoteKey(task.key), st.ToString());
        promotions_failed_.Inc();
        return false;
    }
    promotions_failed_.Inc();
    spdlog::debug("promotion of {} failed: {}", QuoteKey(task.key), st.ToString());
    // Frees any staging and unpins the source at once (idempotent on the master).
    Status told = master_.NotifyPromotionFailure(id, task.key, task.generation);
    if (!told.ok()) spdlog::debug("NotifyPromotionFailure: {}", told.ToString());
    return false;
}

NodeWorker::Ran NodeWorker::RunPromotions(size_t max) {
    return RunQueued(id_.load(), [&](NodeId id) { return PollPromotions(id, max, kNoWait); },
                     [&](NodeId id, const PromotionTask& task) { return RunPromotion(id, task); });
}

}  // namespace mooncake
