// The promotion pipeline (core/master/promotion_pipeline.h): the gates, the task's life and the
// retry of refused candidates.
#include "core/master/promotion_pipeline.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "core/base/segment_allocator.h"
#include "core/master/task_delivery.h"

namespace mooncake {

namespace {

// Refusals that may pass later, when DRAM, the queue or the evidence changes: the candidate
// is remembered and retried (promotion_retry_*), so a hot key read while the cap was full is
// not left on disk until its next read.
bool IsRetriable(PromotionOutcome outcome) {
    return outcome == PromotionOutcome::kWatermarkGated || outcome == PromotionOutcome::kNoRoom ||
           outcome == PromotionOutcome::kVictimsHotter ||
           outcome == PromotionOutcome::kGateRefused || outcome == PromotionOutcome::kQueueFull;
}

// The node holding an object's promotion task, if it has one (FindTask's `holder`).
std::optional<NodeId> PromotionHolder(const ObjectMeta& meta) {
    if (!meta.promotion) return std::nullopt;
    return meta.promotion->holder;
}

}  // namespace

uint64_t PromotionPipeline::BytesLimit() const {
    uint64_t knob = config_.promotion_inflight_bytes_limit();
    return knob > 0 ? knob : std::max<uint64_t>(dram_.Capacity() / 4, 1);
}

bool PromotionPipeline::Reserve(uint64_t size) {
    // Reserved atomically so racing admissions cannot overshoot the cap.
    int64_t tasks = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
    uint64_t bytes = in_flight_bytes_.fetch_add(size, std::memory_order_relaxed) + size;
    if (tasks > config_.promotion_queue_limit() || (tasks > 1 && bytes > BytesLimit())) {
        Unreserve(size);
        return false;
    }
    return true;
}

void PromotionPipeline::Unreserve(uint64_t size) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    in_flight_bytes_.fetch_sub(size, std::memory_order_relaxed);
}

uint32_t PromotionPipeline::AdmissionThreshold() const {
    return static_cast<uint32_t>(std::max<int64_t>(1, config_.promotion_admission_threshold()));
}

uint32_t PromotionPipeline::CountNewObject(ObjectMeta& meta, uint64_t sketch_hash) {
    meta.hash = sketch_hash;
    return sketch_.Seed(meta.reads(), meta.hash);
}

void PromotionPipeline::CountPut(ObjectMeta& meta, uint64_t sketch_hash, uint64_t size) {
    const uint32_t reads = CountNewObject(meta, sketch_hash);
    // promotion_gate hook; the class and time are the eviction order's (set by its OnPut)
    gate_.OnPut(meta.hash, size, reads, meta.eviction.cls, meta.eviction.last_access);
}

void PromotionPipeline::CountMiss(std::string_view key) {
    if (config_.promotion_on_hit()) sketch_.Increment(AdmissionSketch::Hash(key));
}

std::optional<PromotionPipeline::CountedRead> PromotionPipeline::CountRead(
    ObjectMeta& meta, std::string_view key, std::vector<DiskRead>& disk_reads) {
    if (!config_.promotion_on_hit()) return std::nullopt;
    const uint32_t reads = sketch_.Increment(meta.reads());
    // Readable and not in MEMORY: LOCAL_DISK only, OnReads' to judge.
    if (!meta.HasComplete(Tier::kMemory)) {
        disk_reads.push_back(
            {std::string(key), meta.generation, meta.size, reads, bool(meta.promotion)});
    }
    return CountedRead{meta.hash, reads, meta.eviction.cls, meta.eviction.last_access};
}

void PromotionPipeline::AfterRead(const CountedRead& read, uint64_t size) {
    sketch_.CountElsewhere();
    gate_.OnGet(read.hash, size, read.reads, AdmissionThreshold(), read.cls, read.at);
}

PromotionOutcome PromotionPipeline::Decided(std::string_view key, Generation generation,
                                            PromotionOutcome outcome, uint32_t reads) {
    m_.PromotionOutcomeCounter(outcome).Inc();
    m_.promotion_attempts.Inc();
    decisions_.Record(key, {outcome, reads, AdmissionThreshold(), clock_.Now(), generation});
    return outcome;
}

std::optional<PromotionOutcome> PromotionPipeline::JudgeRoom(const RoomNeed& need,
                                                             uint32_t estimate, Trigger trigger) {
    if (trigger == Trigger::kManualForce) return std::nullopt;
    const uint64_t capacity = dram_.Capacity();
    const uint64_t used = dram_.Used();
    const bool over_high = static_cast<double>(used) >=
                           config_.eviction_high_watermark_ratio() * static_cast<double>(capacity);
    if (config_.promotion_strict_watermark() && over_high) {
        return PromotionOutcome::kWatermarkGated;  // the RFC's interlock, when asked for
    }
    if (dram_.LargestFreeExtent() >= SegmentAllocator::RoundUp(need.largest) &&
        capacity - std::min(used, capacity) >= need.bytes) {
        return std::nullopt;  // free room: nothing is displaced
    }
    // A full cache: promote by displacing colder objects, as a Put would.
    const bool manual = trigger == Trigger::kManual;
    bool compare = config_.promotion_compare_victims() && !manual;
    // promotion_gate=adaptive (core/master/adaptive_policy.h): the arm the evidence supports judges;
    // its model is LRU, so only with that order.
    const bool gate_adaptive = gate_applies_ && config_.promotion_gate() == "adaptive";
    // A prefetch serves the read its probe announces. The gate's simulations promote at a
    // read, which is then served from disk, so a refusing arm's evidence leaves out the very
    // read a prefetch is for: under the adaptive gate a prefetch displaces as `always` does.
    // An operator's fixed comparison still judges it, counting the announced read.
    const bool prefetch = trigger == Trigger::kPrefetch;
    if (prefetch) {
        ++estimate;
        if (gate_adaptive) compare = false;
    }
    const bool adaptive = !manual && !prefetch && gate_adaptive;
    const AdaptivePromotionGate::Arm arm = gate_.Current();
    if (adaptive) compare = arm == AdaptivePromotionGate::Arm::kCompare;
    std::optional<PromotionOutcome> refusal;
    if (adaptive && arm == AdaptivePromotionGate::Arm::kNever) {
        refusal = PromotionOutcome::kGateRefused;
    } else {
        VictimInfo victims = peek_(need.bytes);
        if (!victims.found) {
            refusal = PromotionOutcome::kNoRoom;
        } else if (compare && estimate <= victims.max_estimate) {
            refusal = PromotionOutcome::kVictimsHotter;
        }
    }
    if (adaptive && trigger == Trigger::kHit) {
        for (size_t i = 0; i < need.keys; ++i) gate_.CountDecision(arm, !refusal);
    }
    return refusal;
}

PromotionOutcome PromotionPipeline::Admit(std::string_view key, Generation generation,
                                          uint64_t size, uint32_t reads) {
    Shard& shard = table_.ShardFor(key);
    MutexLock lock(shard.mu);
    // Decided under the shard lock: a queued task's end (Commit, Fail) also takes it, so
    // the key's last decision and the funnel never show the end before the start.
    auto decided = [&](PromotionOutcome outcome) { return Decided(key, generation, outcome, reads); };
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) return decided(PromotionOutcome::kStale);
    ObjectMeta& meta = it->second;
    if (meta.generation != generation) return decided(PromotionOutcome::kStale);
    // Gate 3: one task per key.
    if (meta.promotion) return decided(PromotionOutcome::kDeduplicated);
    if (!meta.DiskOnly()) return decided(PromotionOutcome::kStale);  // promoted or rewritten
    // Gate 4: the cap.
    if (!Reserve(size)) return decided(PromotionOutcome::kQueueFull);
    // Gate 5: admit. The source stays on disk until the task ends.
    const Replica* source = meta.CompleteDisk();
    std::shared_ptr<NodeState> holder = nodes_.Get(source->node);
    if (!holder) {
        Unreserve(size);
        return decided(PromotionOutcome::kStale);
    }
    Nanos now = clock_.Now();
    meta.promotion = PromotionState{
        source->node, now, now + std::chrono::seconds(config_.promotion_task_timeout_sec()),
        false, std::nullopt};
    m_.promotion_in_flight.Inc();
    decided(PromotionOutcome::kQueued);
    holder->Push(TaskQueue::kPromotion, {std::string(key), generation});
    return PromotionOutcome::kQueued;
}

PromotionOutcome PromotionPipeline::TryPromote(std::string_view key, Generation generation,
                                               uint64_t size, uint32_t estimate,
                                               Trigger trigger) {
    std::optional<PromotionOutcome> refusal = JudgeRoom({size, size, 1}, estimate, trigger);
    const PromotionOutcome outcome = refusal ? Decided(key, generation, *refusal, estimate)
                                             : Admit(key, generation, size, estimate);
    // A reader's refused candidate is retried when room may have appeared; a manual promote
    // answers its operator instead, and a retry's entry is RetryRefused's to keep or drop.
    const bool remember = trigger == Trigger::kHit || trigger == Trigger::kProactive;
    if (remember && IsRetriable(outcome)) RememberRefused(key, generation);
    return outcome;
}

void PromotionPipeline::OnReads(std::span<const DiskRead> reads) {
    // Gate 1, admission, and dedup of tasks already in flight, key by key.
    std::vector<const DiskRead*> admitted;
    // A batch naming a key twice reads it twice: the read that reaches the threshold admits
    // it, and a later one finds it admitted (deduplicated).
    std::unordered_set<std::string_view> admitted_keys;
    const uint32_t threshold = AdmissionThreshold();
    for (const DiskRead& read : reads) {
        if (read.in_flight || admitted_keys.count(read.key) != 0) {
            Decided(read.key, read.generation, PromotionOutcome::kDeduplicated, read.reads);
        } else if (read.reads < threshold) {
            Decided(read.key, read.generation, PromotionOutcome::kAdmissionGated, read.reads);
        } else {
            admitted_keys.insert(read.key);
            admitted.push_back(&read);
        }
    }
    if (admitted.size() == 1) {
        const DiskRead& read = *admitted.front();
        TryPromote(read.key, read.generation, read.size, read.reads, Trigger::kHit);
        return;
    }
    if (admitted.empty()) return;
    // A chain (a request's blocks, in prefix order): one room decision for all of them,
    // judged at the head's count, so the prefix comes back whole or not at all.
    RoomNeed need{0, 0, admitted.size()};
    for (const DiskRead* read : admitted) {
        need.bytes += SegmentAllocator::RoundUp(read->size);
        need.largest = std::max(need.largest, read->size);
    }
    std::optional<PromotionOutcome> refusal =
        JudgeRoom(need, admitted.front()->reads, Trigger::kHit);
    for (const DiskRead* read : admitted) {
        const PromotionOutcome outcome =
            refusal ? Decided(read->key, read->generation, *refusal, read->reads)
                    : Admit(read->key, read->generation, read->size, read->reads);
        if (IsRetriable(outcome)) RememberRefused(read->key, read->generation);
    }
}

std::optional<PromotionTask> PromotionPipeline::Deliver(ObjectMeta& meta, const TaskRef& ref,
                                                        NodeId node) {
    if (!meta.promotion || meta.promotion->holder != node || meta.promotion->delivered) {
        return std::nullopt;
    }
    meta.promotion->delivered = true;
    return PromotionTask{ref.key, meta.generation, meta.size, node, meta.promotion->start};
}

Result<ObjectMeta*> PromotionPipeline::Find(Shard& shard, NodeId node, std::string_view key,
                                            Generation generation) {
    return FindTask(shard, node, key, generation, "promotion", " (cancelled, expired or done)",
                    PromotionHolder);
}

void PromotionPipeline::Stage(ObjectMeta& meta, NodeId node, uint64_t offset) {
    meta.promotion->staging = Replica{Tier::kMemory, ReplicaState::kProcessing, node, offset};
    meta.promotion->deadline =
        clock_.Now() + std::chrono::seconds(config_.promotion_task_timeout_sec());
}

Replica PromotionPipeline::Commit(ObjectMeta& meta) {
    const Replica committed = *meta.promotion->staging;
    meta.promotion->staging.reset();  // moves into the object: End must not free it
    Nanos latency = clock_.Now() - meta.promotion->start;
    End(meta);
    m_.PromotionOutcomeCounter(PromotionOutcome::kCompleted).Inc();
    m_.promotion_latency.Observe(std::chrono::duration<double>(latency).count());
    decisions_.RecordEnd(*meta.key, PromotionOutcome::kCompleted, clock_.Now());
    return committed;
}

void PromotionPipeline::Fail(ObjectMeta& meta, PromotionOutcome outcome) {
    End(meta);
    m_.PromotionOutcomeCounter(outcome).Inc();
    decisions_.RecordEnd(*meta.key, outcome, clock_.Now());
}

void PromotionPipeline::End(ObjectMeta& meta) {
    PromotionState& p = *meta.promotion;
    if (p.staging) {
        if (auto node = nodes_.Get(p.staging->node)) {
            node->PushReleased({*meta.key, meta.generation, p.staging->offset, meta.size});
        }
        dram_.Free(p.staging->node, p.staging->offset, meta.size);
    }
    meta.promotion.reset();
    Unreserve(meta.size);
    m_.promotion_in_flight.Dec();
}

bool PromotionPipeline::ExpireIfDue(ObjectMeta& meta, Nanos now) {
    if (!meta.promotion || meta.promotion->deadline >= now) return false;
    Fail(meta, PromotionOutcome::kExpired);
    return true;
}

void PromotionPipeline::RememberRefused(std::string_view key, Generation generation) {
    int64_t limit = config_.promotion_retry_limit();
    if (limit <= 0) return;
    Nanos now = clock_.Now();
    MutexLock lock(retry_mu_);
    auto it = retry_.find(std::string(key));
    if (it != retry_.end()) {
        it->second.generation = generation;
        it->second.expiry = now + std::chrono::milliseconds(config_.promotion_retry_ttl_ms());
        return;
    }
    if (retry_.size() >= static_cast<size_t>(limit)) retry_.erase(retry_.begin());  // bounded
    Nanos backoff = std::chrono::milliseconds(50);
    retry_.emplace(std::string(key),
                   RetryCandidate{generation, now + backoff,
                                  now + std::chrono::milliseconds(config_.promotion_retry_ttl_ms()),
                                  backoff});
}

size_t PromotionPipeline::RetryRefused() {
    constexpr size_t kBudget = 16;  // per call; each try may scan every shard's cold end
    Nanos now = clock_.Now();
    std::vector<std::pair<std::string, Generation>> due;
    {
        MutexLock lock(retry_mu_);
        if (retry_.empty()) return 0;
        for (auto it = retry_.begin(); it != retry_.end() && due.size() < kBudget;) {
            if (it->second.expiry <= now) {
                it = retry_.erase(it);
                continue;
            }
            if (it->second.next_try <= now) due.emplace_back(it->first, it->second.generation);
            ++it;
        }
    }
    size_t queued = 0;
    for (auto& [key, generation] : due) {
        uint64_t size = 0;
        uint32_t estimate = 0;
        bool eligible = false;
        {
            Shard& shard = table_.ShardFor(key);
            MutexLock lock(shard.mu);
            auto it = shard.objects.find(key);
            if (it != shard.objects.end() && it->second.generation == generation &&
                it->second.Promotable()) {
                size = it->second.size;
                estimate = sketch_.Estimate(it->second.reads());
                eligible = true;
            }
        }
        std::optional<PromotionOutcome> result;
        if (eligible) result = TryPromote(key, generation, size, estimate, Trigger::kRetry);
        MutexLock lock(retry_mu_);
        auto it = retry_.find(key);
        if (it == retry_.end()) continue;
        if (result && IsRetriable(*result)) {
            it->second.backoff = std::min<Nanos>(it->second.backoff * 2, std::chrono::seconds(5));
            it->second.next_try = now + it->second.backoff;
        } else {
            if (result == PromotionOutcome::kQueued) {
                m_.promotion_retried.Inc();
                ++queued;
            }
            retry_.erase(it);
        }
    }
    return queued;
}

size_t PromotionPipeline::ProactiveScan() {
    struct Pick {
        std::string key;
        Generation generation;
        uint64_t size;
        uint32_t estimate;
    };
    const size_t budget = static_cast<size_t>(config_.proactive_promotion_budget());
    const uint32_t threshold = static_cast<uint32_t>(config_.proactive_promotion_threshold());
    std::vector<Pick> picks;
    for (size_t i = 0; i < ObjectTable::kShardCount && picks.size() < budget; ++i) {
        size_t s = proactive_cursor_.fetch_add(1) % ObjectTable::kShardCount;
        Shard& shard = table_.shard(s);
        MutexLock lock(shard.mu);
        for (auto& [key, meta] : shard.objects) {
            if (picks.size() >= budget) break;
            if (!meta.Promotable()) continue;
            uint32_t estimate = sketch_.Estimate(meta.reads());
            if (estimate >= threshold) {
                picks.push_back({key, meta.generation, meta.size, estimate});
            }
        }
    }
    // Hottest first, so the budget goes where it helps most.
    std::sort(picks.begin(), picks.end(),
              [](const Pick& a, const Pick& b) { return a.estimate > b.estimate; });
    size_t queued = 0;
    for (const Pick& p : picks) {
        if (TryPromote(p.key, p.generation, p.size, p.estimate, Trigger::kProactive) ==
            PromotionOutcome::kQueued) {
            m_.promotion_proactive.Inc();
            ++queued;
        }
    }
    return queued;
}

// ---- the holder's protocol, whole ----

std::vector<PromotionTask> PromotionPipeline::Heartbeat(NodeId node, size_t max, Nanos wait) {
    return DeliverTasks<PromotionTask>(
        nodes_, table_, node, TaskQueue::kPromotion, max, wait,
        [&](ObjectMeta& meta, const TaskRef& ref) { return Deliver(meta, ref, node); });
}

Result<ReplicaDesc> PromotionPipeline::AllocStart(NodeId node, std::string_view key,
                                                  Generation generation, uint64_t size) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    if (!nodes_.Get(node)) return Status::UnknownNode("node " + std::to_string(node));
    Shard& shard = table_.ShardFor(key);
    {
        MutexLock lock(shard.mu);
        Result<ObjectMeta*> found = Find(shard, node, key, generation);
        if (!found.ok()) return found.status();
        ObjectMeta& meta = **found;
        if (size != meta.size) {
            return Status::InvalidArgument("size " + std::to_string(size) + " does not match " +
                                           QuoteKey(key) + " (" + std::to_string(meta.size) + ")");
        }
        if (meta.promotion->staging) {  // a retried call: hand back the same range
            const Replica& s = *meta.promotion->staging;
            return ReplicaDesc{s.tier, s.state, s.node, s.offset, meta.size, 0};
        }
    }
    // Allocation may evict, which takes other shards' locks: not under ours.
    Result<DramPool::Allocation> alloc = objects_.AllocateWithEviction(key, size, node, Nanos(0));
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = Find(shard, node, key, generation);
    if (!found.ok() || (*found)->promotion->staging) {
        // Cancelled meanwhile (or a racing duplicate call won): give the DRAM back.
        if (alloc.ok()) dram_.Free(alloc->node, alloc->offset, size);
        if (!found.ok()) return found.status();
        const Replica& s = *(*found)->promotion->staging;
        return ReplicaDesc{s.tier, s.state, s.node, s.offset, size, 0};
    }
    ObjectMeta& meta = **found;
    if (!alloc.ok() && dram_.evict_pending_bytes() > 0) {
        // Eviction is offloading colder objects to make room: the task stays; retry shortly.
        return Status::NotReady("DRAM for " + QuoteKey(key) +
                                " is being freed by offloads in flight; retry");
    }
    if (!alloc.ok() && alloc.status().Is(StatusCode::kBusy)) {
        // A node that registered again is reporting its DRAM (DramPool::Allocate): moments.
        return Status::NotReady(alloc.status().message());
    }
    if (!alloc.ok()) {
        Fail(meta, PromotionOutcome::kAllocFailed);
        return alloc.status();
    }
    Stage(meta, alloc->node, alloc->offset);
    return ReplicaDesc{Tier::kMemory, ReplicaState::kProcessing, alloc->node, alloc->offset, size,
                       0};
}

Status PromotionPipeline::Succeeded(NodeId node, std::string_view key, Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = table_.ShardFor(key);
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = Find(shard, node, key, generation);
    if (!found.ok()) return found.status();
    ObjectMeta& meta = **found;
    if (!meta.promotion->staging) {
        return Status::NotReady("promotion of " + QuoteKey(key) + " has no DRAM allocated yet");
    }
    const Replica committed = Commit(meta);
    meta.AddMemory(objects_.tallies(), committed.node, committed.offset, /*first=*/true);
    objects_.Promoted(key);
    objects_.LruTouch(shard, meta);
    if (config_.promotion_drop_source()) {
        // The task has ended (Commit): its source is no longer pinned.
        const int i = meta.IndexOf([](const Replica& r) { return r.tier == Tier::kLocalDisk; });
        if (i >= 0) objects_.DropReplica(shard, meta, static_cast<size_t>(i));
    }
    return Status::Ok();
}

Status PromotionPipeline::Failed(NodeId node, std::string_view key, Generation generation) {
    return EndFailedTask(table_, node, key, generation, "promotion", PromotionHolder,
                         [&](ObjectMeta& meta) { Fail(meta, PromotionOutcome::kIoFailed); })
        .status();
}

Result<ManualOutcome> PromotionPipeline::Manual(std::string_view key, bool force) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Generation generation;
    uint64_t size;
    uint32_t estimate;
    {
        Shard& shard = table_.ShardFor(key);
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(std::string(key));
        if (it == shard.objects.end()) {
            return Status::NotFound("key " + QuoteKey(key) + " does not exist");
        }
        ObjectMeta& meta = it->second;
        if (meta.HasComplete(Tier::kMemory)) return ManualOutcome::kAlreadyThere;
        if (meta.promotion) return ManualOutcome::kInFlight;
        if (!meta.HasComplete(Tier::kLocalDisk)) {
            return Status::NotReady("key " + QuoteKey(key) + " is still being written");
        }
        generation = meta.generation;
        size = meta.size;
        estimate = sketch_.Estimate(meta.reads());
    }
    const Trigger trigger = force ? Trigger::kManualForce : Trigger::kManual;
    const PromotionOutcome outcome = TryPromote(key, generation, size, estimate, trigger);
    switch (outcome) {
        case PromotionOutcome::kQueued: return ManualOutcome::kQueued;
        case PromotionOutcome::kDeduplicated: return ManualOutcome::kInFlight;
        case PromotionOutcome::kWatermarkGated:
            return Status::NoSpace("not promoting " + QuoteKey(key) +
                                   ": promotion_strict_watermark is on and DRAM is at its high "
                                   "watermark (use --force to promote anyway)");
        case PromotionOutcome::kNoRoom:
            return Status::NoSpace("DRAM is full and nothing evictable can make room for " +
                                   QuoteKey(key) + " (use --force to promote anyway)");
        case PromotionOutcome::kQueueFull:
            return Status::Busy("promotion queue is full (promotion_queue_limit or the byte "
                                "budget); retry later");
        default: break;
    }
    return Status::NotReady("key " + QuoteKey(key) + " changed while promoting; retry");
}

}  // namespace mooncake
