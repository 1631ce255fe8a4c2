// Promotion: LOCAL_DISK objects read often enough come back to MEMORY.
//
// Gates, in order: admission sketch (applied by GetReplicaList) -> DRAM pressure -> dedup ->
// cap -> admit. The holder node (whose disk has the bytes) executes the task:
// PromotionObjectHeartbeat -> PromotionAllocStart -> write bytes -> NotifyPromotionSuccess.
// Every exit path (failure, expiry, Remove, node expiry, new generation) goes through
// EndPromotion, which frees the staging and unpins the source, so nothing leaks.
#include <algorithm>
#include <cassert>

#include "core/store_internals.h"

namespace mooncake {

uint64_t StoreInternals::PromotionBytesLimit() const {
    uint64_t knob = config.promotion_inflight_bytes_limit();
    return knob > 0 ? knob : std::max<uint64_t>(dram.Capacity() / 4, 1);
}

StoreInternals::GateResult StoreInternals::TryPromote(std::string_view key,
                                                      Generation generation, uint64_t size,
                                                      uint64_t hash, uint32_t estimate,
                                                      Trigger trigger) {
    const bool counted = trigger == Trigger::kHit;
    // Gate 2: DRAM pressure.
    if (trigger != Trigger::kManualForce) {
        uint64_t capacity = dram.Capacity();
        bool over_high = static_cast<double>(dram.Used()) >=
                         config.eviction_high_watermark_ratio() * static_cast<double>(capacity);
        bool refused = false;
        if (config.promotion_strict_watermark() && over_high) {
            refused = true;  // the RFC's interlock, for operators who ask for it
        } else if (dram.LargestFreeExtent() < SegmentAllocator::RoundUp(size)) {
            // A full cache: promote by displacing colder objects, as a Put would.
            bool compare = config.promotion_compare_victims() && trigger != Trigger::kManual;
            // ---- promotion_gate=adaptive (core/adaptive_policy.h): the arm that hits most in
            // the miniature simulations judges; its model is LRU, so only with that order.
            const bool adaptive = trigger != Trigger::kManual && gate_applies &&
                                  config.promotion_gate() == "adaptive";
            const AdaptivePromotionGate::Arm arm = gate.Current();
            if (adaptive) compare = arm == AdaptivePromotionGate::Arm::kCompare;
            if (adaptive && arm == AdaptivePromotionGate::Arm::kNever) {
                refused = true;
            } else {
                VictimInfo victims = PeekVictims(size);
                refused = !victims.found || (compare && estimate <= victims.max_estimate);
            }
            if (adaptive && counted) gate.CountDecision(arm, !refused);
            // ---- end promotion_gate
        }
        if (refused) {
            if (counted) m.promotion_failed_watermark.Inc();
            if (trigger != Trigger::kManual) RememberRefused(key, generation);
            return GateResult::kWatermarkGated;
        }
    }
    Shard& shard = table.ShardFor(key);
    std::shared_ptr<NodeState> holder;
    {
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(std::string(key));
        if (it == shard.objects.end()) return GateResult::kNotEligible;
        ObjectMeta& meta = it->second;
        const Replica* source = meta.CompleteDisk();
        if (meta.generation != generation || !meta.DiskOnly()) {
            return GateResult::kNotEligible;
        }
        // Gate 3: one task per key.
        if (meta.promotion) {
            if (counted) m.promotion_deduplicated.Inc();
            return GateResult::kDeduplicated;
        }
        // Gate 4: the cap, reserved atomically so racing admissions cannot overshoot it.
        int64_t tasks = promotion_in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
        uint64_t bytes = promotion_in_flight_bytes.fetch_add(size, std::memory_order_relaxed) + size;
        if (tasks > config.promotion_queue_limit() ||
            (tasks > 1 && bytes > PromotionBytesLimit())) {
            promotion_in_flight.fetch_sub(1, std::memory_order_relaxed);
            promotion_in_flight_bytes.fetch_sub(size, std::memory_order_relaxed);
            if (counted) m.promotion_failed_queue_full.Inc();
            return GateResult::kQueueFull;
        }
        // Gate 5: admit. The source stays on disk until the task ends.
        holder = nodes.Get(source->node);
        if (!holder) {
            promotion_in_flight.fetch_sub(1, std::memory_order_relaxed);
            promotion_in_flight_bytes.fetch_sub(size, std::memory_order_relaxed);
            return GateResult::kNotEligible;
        }
        meta.PinSource(Tier::kLocalDisk);
        Nanos now = clock.Now();
        meta.promotion = PromotionState{
            source->node, now, now + std::chrono::seconds(config.promotion_task_timeout_sec()),
            false, std::nullopt};
        m.promotion_queued.Inc();
        m.promotion_in_flight.Inc();
        holder->Push(TaskQueue::kPromotion, {std::string(key), generation});
    }
    (void)hash;
    return GateResult::kQueued;
}

void StoreInternals::RememberRefused(std::string_view key, Generation generation) {
    int64_t limit = config.promotion_retry_limit();
    if (limit <= 0) return;
    Nanos now = clock.Now();
    MutexLock lock(retry_mu);
    auto it = retry.find(std::string(key));
    if (it != retry.end()) {
        it->second.generation = generation;
        it->second.expiry = now + std::chrono::milliseconds(config.promotion_retry_ttl_ms());
        return;
    }
    if (retry.size() >= static_cast<size_t>(limit)) retry.erase(retry.begin());  // bounded
    Nanos backoff = std::chrono::milliseconds(50);
    retry.emplace(std::string(key),
                  RetryCandidate{generation, now + backoff,
                                 now + std::chrono::milliseconds(config.promotion_retry_ttl_ms()),
                                 backoff});
}

size_t MasterStore::RetryRefusedCandidates() {
    constexpr size_t kBudget = 16;  // per call; each try may scan every shard's cold end
    Nanos now = clock_.Now();
    std::vector<std::pair<std::string, Generation>> due;
    {
        MutexLock lock(in_->retry_mu);
        if (in_->retry.empty()) return 0;
        for (auto it = in_->retry.begin(); it != in_->retry.end() && due.size() < kBudget;) {
            if (it->second.expiry <= now) {
                it = in_->retry.erase(it);
                continue;
            }
            if (it->second.next_try <= now) due.emplace_back(it->first, it->second.generation);
            ++it;
        }
    }
    size_t queued = 0;
    for (auto& [key, generation] : due) {
        uint64_t size = 0;
        uint64_t hash = 0;
        bool eligible = false;
        {
            Shard& shard = in_->table.ShardFor(key);
            MutexLock lock(shard.mu);
            auto it = shard.objects.find(key);
            if (it != shard.objects.end() && it->second.generation == generation &&
                it->second.Promotable()) {
                size = it->second.size;
                hash = it->second.hash;
                eligible = true;
            }
        }
        StoreInternals::GateResult result = StoreInternals::GateResult::kNotEligible;
        if (eligible) {
            result = in_->TryPromote(key, generation, size, hash, in_->sketch.Estimate(hash),
                                     StoreInternals::Trigger::kRetry);
        }
        MutexLock lock(in_->retry_mu);
        auto it = in_->retry.find(key);
        if (it == in_->retry.end()) continue;
        if (result == StoreInternals::GateResult::kWatermarkGated ||
            result == StoreInternals::GateResult::kQueueFull) {
            it->second.backoff = std::min<Nanos>(it->second.backoff * 2, std::chrono::seconds(5));
            it->second.next_try = now + it->second.backoff;
        } else {
            if (result == StoreInternals::GateResult::kQueued) {
                in_->m.promotion_retried.Inc();
                ++queued;
            }
            in_->retry.erase(it);
        }
    }
    return queued;
}

size_t MasterStore::ProactivePromotionScan() {
    struct Pick {
        std::string key;
        Generation generation;
        uint64_t size;
        uint64_t hash;
        uint32_t estimate;
    };
    const size_t budget = static_cast<size_t>(config_.proactive_promotion_budget());
    const uint32_t threshold = static_cast<uint32_t>(config_.proactive_promotion_threshold());
    std::vector<Pick> picks;
    for (size_t i = 0; i < ObjectTable::kShardCount && picks.size() < budget; ++i) {
        size_t s = in_->proactive_cursor.fetch_add(1) % ObjectTable::kShardCount;
        Shard& shard = in_->table.shard(s);
        MutexLock lock(shard.mu);
        for (auto& [key, meta] : shard.objects) {
            if (picks.size() >= budget) break;
            if (!meta.Promotable()) continue;
            uint32_t estimate = in_->sketch.Estimate(meta.hash);
            if (estimate >= threshold) {
                picks.push_back({key, meta.generation, meta.size, meta.hash, estimate});
            }
        }
    }
    // Hottest first, so the budget goes where it helps most.
    std::sort(picks.begin(), picks.end(),
              [](const Pick& a, const Pick& b) { return a.estimate > b.estimate; });
    size_t queued = 0;
    for (const Pick& p : picks) {
        if (in_->TryPromote(p.key, p.generation, p.size, p.hash, p.estimate,
                            StoreInternals::Trigger::kProactive) ==
            StoreInternals::GateResult::kQueued) {
            in_->m.promotion_proactive.Inc();
            ++queued;
        }
    }
    return queued;
}

std::vector<PromotionTask> MasterStore::PromotionObjectHeartbeat(NodeId node_id, size_t max,
                                                                 Nanos wait) {
    return in_->DrainQueue<PromotionTask>(
        node_id, TaskQueue::kPromotion, max, wait,
        [&](ObjectMeta& meta, const TaskRef& ref) -> std::optional<PromotionTask> {
            if (!meta.promotion || meta.promotion->holder != node_id ||
                meta.promotion->delivered) {
                return std::nullopt;
            }
            meta.promotion->delivered = true;
            return PromotionTask{ref.key, meta.generation, meta.size, node_id,
                                 meta.promotion->start};
        });
}

namespace {

// The promotion task of (key, generation) that `node` may act on.
Result<ObjectMeta*> FindPromotion(Shard& shard, NodeId node, std::string_view key,
                                  Generation generation)
    MC_REQUIRES(shard.mu) {
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) {
        return Status::NotFound("key " + QuoteKey(key) + " does not exist");
    }
    ObjectMeta& meta = it->second;
    if (meta.generation != generation) {
        return Status::StaleGeneration("generation " + std::to_string(generation) + " of " +
                                       QuoteKey(key) + " is not the current one");
    }
    if (!meta.promotion) {
        return Status::NotFound("no promotion task for " + QuoteKey(key) +
                                " (cancelled, expired or done)");
    }
    if (meta.promotion->holder != node) {
        return Status::IllegalClient("node " + std::to_string(node) +
                                     " does not hold the promotion task of " + QuoteKey(key));
    }
    return &meta;
}

}  // namespace

Result<ReplicaDesc> MasterStore::PromotionAllocStart(NodeId node, std::string_view key,
                                                     Generation generation, uint64_t size) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    if (!in_->nodes.Get(node)) return Status::UnknownNode("node " + std::to_string(node));
    Shard& shard = in_->table.ShardFor(key);
    {
        MutexLock lock(shard.mu);
        Result<ObjectMeta*> found = FindPromotion(shard, node, key, generation);
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
    Result<DramPool::Allocation> alloc = in_->AllocateWithEviction(size, node, Nanos(0));
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = FindPromotion(shard, node, key, generation);
    if (!found.ok() || (*found)->promotion->staging) {
        // Cancelled meanwhile (or a racing duplicate call won): give the DRAM back.
        if (alloc.ok()) in_->dram.Free(alloc->node, alloc->offset, size);
        if (!found.ok()) return found.status();
        const Replica& s = *(*found)->promotion->staging;
        return ReplicaDesc{s.tier, s.state, s.node, s.offset, size, 0};
    }
    ObjectMeta& meta = **found;
    if (!alloc.ok() && in_->dram.evict_pending_bytes() > 0) {
        // Eviction is offloading colder objects to make room: the task stays; retry shortly.
        return Status::NotReady("DRAM for " + QuoteKey(key) +
                                " is being freed by offloads in flight; retry");
    }
    if (!alloc.ok()) {
        in_->EndPromotion(meta);
        in_->m.promotion_failed_alloc.Inc();
        return alloc.status();
    }
    meta.promotion->staging =
        Replica{Tier::kMemory, ReplicaState::kProcessing, alloc->node, alloc->offset, 0};
    meta.promotion->deadline =
        clock_.Now() + std::chrono::seconds(config_.promotion_task_timeout_sec());
    return ReplicaDesc{Tier::kMemory, ReplicaState::kProcessing, alloc->node, alloc->offset, size,
                       0};
}

Status MasterStore::NotifyPromotionSuccess(NodeId node, std::string_view key,
                                           Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = in_->table.ShardFor(key);
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = FindPromotion(shard, node, key, generation);
    if (!found.ok()) return found.status();
    ObjectMeta& meta = **found;
    if (!meta.promotion->staging) {
        return Status::NotReady("promotion of " + QuoteKey(key) + " has no DRAM allocated yet");
    }
    const Replica committed = *meta.promotion->staging;
    meta.promotion->staging.reset();  // moves into the object: EndPromotion must not free it
    Nanos latency = clock_.Now() - meta.promotion->start;
    in_->EndPromotion(meta);
    meta.AddMemory(*in_, committed.node, committed.offset, /*first=*/true);
    in_->LruTouch(shard, meta);
    in_->m.promotion_completed.Inc();
    in_->m.promotion_latency.Observe(std::chrono::duration<double>(latency).count());
    if (config_.promotion_drop_source()) {
        const int i = meta.IndexOf(
            [](const Replica& r) { return r.tier == Tier::kLocalDisk && r.pins == 0; });
        if (i >= 0) in_->DropReplica(shard, meta, static_cast<size_t>(i));
    }
    return Status::Ok();
}

Status MasterStore::NotifyPromotionFailure(NodeId node, std::string_view key,
                                           Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = in_->table.ShardFor(key);
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = FindPromotion(shard, node, key, generation);
    if (!found.ok()) {
        // Already ended (a repeated report, or cancelled meanwhile): nothing left to undo.
        if (found.status().Is(StatusCode::kNotFound)) return Status::Ok();
        return found.status();
    }
    in_->EndPromotion(**found);
    in_->m.promotion_failed_io.Inc();
    return Status::Ok();
}

size_t MasterStore::ReapPromotionTasks() {
    size_t reaped = 0;
    if (in_->promotion_in_flight.load() == 0 && in_->dram.offloads_in_flight() == 0) return 0;
    Nanos now = clock_.Now();
    for (Shard& shard : in_->table.shards()) {
        MutexLock lock(shard.mu);
        for (auto& [key, meta] : shard.objects) {
            if (meta.promotion && meta.promotion->deadline < now) {
                in_->EndPromotion(meta);
                in_->m.promotion_expired.Inc();
                ++reaped;
            }
            if (meta.offload && meta.offload->deadline < now) {
                in_->CancelTasks(meta);  // only the offload is left to cancel here
                ++reaped;
            }
        }
    }
    return reaped;
}

Result<ManualOutcome> MasterStore::Promote(std::string_view key, bool force) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Generation generation;
    uint64_t size;
    uint64_t hash;
    {
        Shard& shard = in_->table.ShardFor(key);
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
        hash = meta.hash;
    }
    auto trigger = force ? StoreInternals::Trigger::kManualForce : StoreInternals::Trigger::kManual;
    switch (in_->TryPromote(key, generation, size, hash, in_->sketch.Estimate(hash), trigger)) {
        case StoreInternals::GateResult::kQueued: return ManualOutcome::kQueued;
        case StoreInternals::GateResult::kDeduplicated: return ManualOutcome::kInFlight;
        case StoreInternals::GateResult::kWatermarkGated:
            return Status::NoSpace("DRAM is full and nothing evictable can make room for " +
                                   QuoteKey(key) + " (use --force to promote anyway)");
        case StoreInternals::GateResult::kQueueFull:
            return Status::Busy("promotion queue is full (promotion_queue_limit or the byte "
                                "budget); retry later");
        default: break;
    }
    return Status::NotReady("key " + QuoteKey(key) + " changed while promoting; retry");
}

}  // namespace mooncake
