#include "core/base/promotion_decision.h"

#include <algorithm>
#include <functional>

namespace mooncake {

std::string_view PromotionOutcomeName(PromotionOutcome outcome) {
    switch (outcome) {
        case PromotionOutcome::kQueued: return "queued";
        case PromotionOutcome::kDeduplicated: return "deduplicated";
        case PromotionOutcome::kAdmissionGated: return "admission_gated";
        case PromotionOutcome::kWatermarkGated: return "watermark_gated";
        case PromotionOutcome::kNoRoom: return "no_room";
        case PromotionOutcome::kVictimsHotter: return "victims_hotter";
        case PromotionOutcome::kGateRefused: return "gate_refused";
        case PromotionOutcome::kQueueFull: return "queue_full";
        case PromotionOutcome::kStale: return "stale";
        case PromotionOutcome::kCompleted: return "completed";
        case PromotionOutcome::kAllocFailed: return "alloc_failed";
        case PromotionOutcome::kIoFailed: return "io_failed";
        case PromotionOutcome::kExpired: return "expired";
        case PromotionOutcome::kCancelled: return "cancelled";
    }
    return "unknown";
}

std::string_view PromotionOutcomeMeaning(PromotionOutcome outcome) {
    switch (outcome) {
        case PromotionOutcome::kQueued: return "admitted: a promotion task is queued";
        case PromotionOutcome::kDeduplicated: return "a promotion task for it is in flight";
        case PromotionOutcome::kAdmissionGated:
            return "read fewer times than promotion_admission_threshold";
        case PromotionOutcome::kWatermarkGated:
            return "promotion_strict_watermark is on and DRAM is at its high watermark";
        case PromotionOutcome::kNoRoom:
            return "DRAM is full and nothing in it can be evicted now";
        case PromotionOutcome::kVictimsHotter:
            return "the objects it would displace are read as often (promotion_compare_victims)";
        case PromotionOutcome::kGateRefused:
            return "the adaptive gate has evidence that displacing loses hits on this workload";
        case PromotionOutcome::kQueueFull:
            return "promotion_queue_limit or promotion_inflight_bytes_limit reached";
        case PromotionOutcome::kStale:
            return "the object changed (removed, rewritten or its node gone) while deciding";
        case PromotionOutcome::kCompleted: return "promoted: its MEMORY copy is committed";
        case PromotionOutcome::kAllocFailed: return "no DRAM could be had for the promotion";
        case PromotionOutcome::kIoFailed: return "the holder failed to read or write its bytes";
        case PromotionOutcome::kExpired: return "the task passed promotion_task_timeout_sec";
        case PromotionOutcome::kCancelled:
            return "the task was cancelled (Remove, node expiry or eviction)";
    }
    return "unknown";
}

bool IsRefusal(PromotionOutcome outcome) {
    return outcome != PromotionOutcome::kQueued && outcome != PromotionOutcome::kDeduplicated &&
           outcome != PromotionOutcome::kCompleted;
}

PromotionDecisionLog::PromotionDecisionLog(size_t capacity)
    : per_stripe_(std::max<size_t>(capacity / kStripes, 1)) {}

PromotionDecisionLog::Stripe& PromotionDecisionLog::StripeFor(std::string_view key) const {
    return stripes_[std::hash<std::string_view>{}(key) % kStripes];
}

void PromotionDecisionLog::Record(std::string_view key, const PromotionDecision& decision) {
    Stripe& s = StripeFor(key);
    MutexLock lock(s.mu);
    auto [it, inserted] = s.last.try_emplace(std::string(key), decision);
    if (!inserted) {
        it->second = decision;
        return;
    }
    s.order.emplace_back(key);
    while (s.last.size() > per_stripe_ && !s.order.empty()) {
        s.last.erase(s.order.front());
        s.order.pop_front();
    }
}

void PromotionDecisionLog::RecordEnd(std::string_view key, PromotionOutcome outcome, Nanos at) {
    Stripe& s = StripeFor(key);
    MutexLock lock(s.mu);
    auto it = s.last.find(std::string(key));
    if (it == s.last.end()) return;  // forgotten meanwhile: nothing to attach the end to
    it->second.outcome = outcome;
    it->second.at = at;
}

std::optional<PromotionDecision> PromotionDecisionLog::Last(std::string_view key) const {
    Stripe& s = StripeFor(key);
    MutexLock lock(s.mu);
    auto it = s.last.find(std::string(key));
    if (it == s.last.end()) return std::nullopt;
    return it->second;
}

}  // namespace mooncake
