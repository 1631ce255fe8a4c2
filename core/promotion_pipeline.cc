// The promotion pipeline (core/promotion_pipeline.h): the gates, the task's life and the
// retry of refused candidates.
#include "core/promotion_pipeline.h"

#include <algorithm>
#include <vector>

#include "core/segment_allocator.h"

namespace mooncake {

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

PromotionPipeline::GateResult PromotionPipeline::TryPromote(std::string_view key,
                                                            Generation generation,
                                                            uint64_t size, uint64_t hash,
                                                            uint32_t estimate, Trigger trigger) {
    const bool counted = trigger == Trigger::kHit;
    // Gate 2: DRAM pressure.
    if (trigger != Trigger::kManualForce) {
        uint64_t capacity = dram_.Capacity();
        bool over_high = static_cast<double>(dram_.Used()) >=
                         config_.eviction_high_watermark_ratio() * static_cast<double>(capacity);
        bool refused = false;
        if (config_.promotion_strict_watermark() && over_high) {
            refused = true;  // the RFC's interlock, for operators who ask for it
        } else if (dram_.LargestFreeExtent() < SegmentAllocator::RoundUp(size)) {
            // A full cache: promote by displacing colder objects, as a Put would.
            bool compare = config_.promotion_compare_victims() && trigger != Trigger::kManual;
            // ---- promotion_gate=adaptive (core/adaptive_policy.h): the arm that hits most in
            // the miniature simulations judges; its model is LRU, so only with that order.
            const bool adaptive = trigger != Trigger::kManual && gate_applies_ &&
                                  config_.promotion_gate() == "adaptive";
            const AdaptivePromotionGate::Arm arm = gate_.Current();
            if (adaptive) compare = arm == AdaptivePromotionGate::Arm::kCompare;
            if (adaptive && arm == AdaptivePromotionGate::Arm::kNever) {
                refused = true;
            } else {
                VictimInfo victims = peek_(size);
                refused = !victims.found || (compare && estimate <= victims.max_estimate);
            }
            if (adaptive && counted) gate_.CountDecision(arm, !refused);
            // ---- end promotion_gate
        }
        if (refused) {
            if (counted) m_.promotion_failed_watermark.Inc();
            if (trigger != Trigger::kManual) RememberRefused(key, generation);
            return GateResult::kWatermarkGated;
        }
    }
    Shard& shard = table_.ShardFor(key);
    MutexLock lock(shard.mu);
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) return GateResult::kNotEligible;
    ObjectMeta& meta = it->second;
    const Replica* source = meta.CompleteDisk();
    if (meta.generation != generation || !meta.DiskOnly()) return GateResult::kNotEligible;
    // Gate 3: one task per key.
    if (meta.promotion) {
        if (counted) m_.promotion_deduplicated.Inc();
        return GateResult::kDeduplicated;
    }
    // Gate 4: the cap.
    if (!Reserve(size)) {
        if (counted) m_.promotion_failed_queue_full.Inc();
        return GateResult::kQueueFull;
    }
    // Gate 5: admit. The source stays on disk until the task ends.
    std::shared_ptr<NodeState> holder = nodes_.Get(source->node);
    if (!holder) {
        Unreserve(size);
        return GateResult::kNotEligible;
    }
    meta.PinSource(Tier::kLocalDisk);
    Nanos now = clock_.Now();
    meta.promotion = PromotionState{
        source->node, now, now + std::chrono::seconds(config_.promotion_task_timeout_sec()),
        false, std::nullopt};
    m_.promotion_queued.Inc();
    m_.promotion_in_flight.Inc();
    holder->Push(TaskQueue::kPromotion, {std::string(key), generation});
    (void)hash;
    return GateResult::kQueued;
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

void PromotionPipeline::Stage(ObjectMeta& meta, NodeId node, uint64_t offset) {
    meta.promotion->staging = Replica{Tier::kMemory, ReplicaState::kProcessing, node, offset, 0};
    meta.promotion->deadline =
        clock_.Now() + std::chrono::seconds(config_.promotion_task_timeout_sec());
}

Replica PromotionPipeline::Commit(ObjectMeta& meta) {
    const Replica committed = *meta.promotion->staging;
    meta.promotion->staging.reset();  // moves into the object: End must not free it
    Nanos latency = clock_.Now() - meta.promotion->start;
    End(meta);
    m_.promotion_completed.Inc();
    m_.promotion_latency.Observe(std::chrono::duration<double>(latency).count());
    return committed;
}

void PromotionPipeline::End(ObjectMeta& meta) {
    PromotionState& p = *meta.promotion;
    if (p.staging) {
        if (auto node = nodes_.Get(p.staging->node)) {
            node->PushReleased({*meta.key, meta.generation, p.staging->offset, meta.size});
        }
        dram_.Free(p.staging->node, p.staging->offset, meta.size);
    }
    meta.UnpinSource(Tier::kLocalDisk);
    meta.promotion.reset();
    Unreserve(meta.size);
    m_.promotion_in_flight.Dec();
}

void PromotionPipeline::Cancel(ObjectMeta& meta) {
    End(meta);
    m_.promotion_cancelled.Inc();
}

bool PromotionPipeline::ExpireIfDue(ObjectMeta& meta, Nanos now) {
    if (!meta.promotion || meta.promotion->deadline >= now) return false;
    End(meta);
    m_.promotion_expired.Inc();
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
        uint64_t hash = 0;
        uint32_t estimate = 0;
        bool eligible = false;
        {
            Shard& shard = table_.ShardFor(key);
            MutexLock lock(shard.mu);
            auto it = shard.objects.find(key);
            if (it != shard.objects.end() && it->second.generation == generation &&
                it->second.Promotable()) {
                size = it->second.size;
                hash = it->second.hash;
                estimate = sketch_.Estimate(it->second.reads());
                eligible = true;
            }
        }
        GateResult result = GateResult::kNotEligible;
        if (eligible) {
            result = TryPromote(key, generation, size, hash, estimate, Trigger::kRetry);
        }
        MutexLock lock(retry_mu_);
        auto it = retry_.find(key);
        if (it == retry_.end()) continue;
        if (result == GateResult::kWatermarkGated || result == GateResult::kQueueFull) {
            it->second.backoff = std::min<Nanos>(it->second.backoff * 2, std::chrono::seconds(5));
            it->second.next_try = now + it->second.backoff;
        } else {
            if (result == GateResult::kQueued) {
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
        uint64_t hash;
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
                picks.push_back({key, meta.generation, meta.size, meta.hash, estimate});
            }
        }
    }
    // Hottest first, so the budget goes where it helps most.
    std::sort(picks.begin(), picks.end(),
              [](const Pick& a, const Pick& b) { return a.estimate > b.estimate; });
    size_t queued = 0;
    for (const Pick& p : picks) {
        if (TryPromote(p.key, p.generation, p.size, p.hash, p.estimate, Trigger::kProactive) ==
            GateResult::kQueued) {
            m_.promotion_proactive.Inc();
            ++queued;
        }
    }
    return queued;
}

}  // namespace mooncake
