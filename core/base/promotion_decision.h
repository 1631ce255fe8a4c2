// A promotion decision: why a key is (or is not) on its way back to MEMORY.
//
// Every promotion attempt (a reader's Get or batch, a retry of a refused candidate, the
// proactive scan, a manual promote) ends in exactly one outcome of the first group, counted
// once (promotion_attempts_total is the sum of them); a queued task later ends in one outcome
// of the second group. The RFC's
// reason names (admission_gated, watermark_gated, queue_full, alloc_failed, io_failed) mean
// exactly what the RFC means; refusals it has no name for have their own.
//
// PromotionDecisionLog remembers the last decision per key (bounded), so an operator can ask
// "why is this key not in MEMORY?" (`mooncakectl stat KEY`, `hot`, the FUSE view's xattr).
//
// Thread-safety: PromotionDecisionLog may be called from any thread (a mutex per stripe, a
// leaf: never held while taking another lock).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/base/clock.h"
#include "core/base/mutex.h"
#include "core/base/thread_annotations.h"
#include "core/base/types.h"

namespace mooncake {

enum class PromotionOutcome : uint8_t {
    // ---- a Get's attempt ----
    kQueued,          // admitted: a task is queued on the holder
    kDeduplicated,    // a task for the key is in flight already
    kAdmissionGated,  // read count below promotion_admission_threshold        (RFC)
    kWatermarkGated,  // promotion_strict_watermark and DRAM at its watermark   (RFC)
    kNoRoom,          // DRAM full and nothing in it can be evicted now
    kVictimsHotter,   // compare victims: what it would displace is read as often
    kGateRefused,     // the adaptive gate's evidence: displacing loses hits here
    kQueueFull,       // promotion_queue_limit or the byte budget                (RFC)
    kStale,           // the object changed (removed, rewritten, its node gone) meanwhile
    // ---- a queued task's end ----
    kCompleted,       // committed: the key is in MEMORY
    kAllocFailed,     // no DRAM could be had when the holder asked             (RFC)
    kIoFailed,        // the holder could not read or write the bytes           (RFC)
    kExpired,         // promotion_task_timeout_sec passed
    kCancelled,       // Remove, node expiry or eviction of the object ended it
};
inline constexpr size_t kPromotionOutcomes = 14;
inline constexpr size_t kAttemptOutcomes = 9;  // the first group
static_assert(static_cast<size_t>(PromotionOutcome::kCompleted) == kAttemptOutcomes);
static_assert(static_cast<size_t>(PromotionOutcome::kCancelled) + 1 == kPromotionOutcomes);

// The metric label (promotion_failed_total{reason=...}) or state name: snake_case.
std::string_view PromotionOutcomeName(PromotionOutcome outcome);
// One line for an operator: what the outcome means.
std::string_view PromotionOutcomeMeaning(PromotionOutcome outcome);
// An outcome refuses the promotion (no task queued and none in flight).
bool IsRefusal(PromotionOutcome outcome);

struct PromotionDecision {
    PromotionOutcome outcome = PromotionOutcome::kQueued;
    uint32_t reads = 0;      // the key's admission count when it was decided
    uint32_t threshold = 0;  // promotion_admission_threshold then (0 read as 1)
    Nanos at{0};             // the store clock's time of the decision
    Generation generation = kNoGeneration;  // of the object it was about
};

class PromotionDecisionLog {
public:
    // Remembers about `capacity` keys' last decisions; the oldest are forgotten first.
    explicit PromotionDecisionLog(size_t capacity = 1 << 16);

    void Record(std::string_view key, const PromotionDecision& decision);
    // A task's end: keeps the reads and threshold of the decision that queued it.
    void RecordEnd(std::string_view key, PromotionOutcome outcome, Nanos at);
    std::optional<PromotionDecision> Last(std::string_view key) const;

private:
    static constexpr size_t kStripes = 64;
    struct Stripe {
        mutable Mutex mu;
        std::unordered_map<std::string, PromotionDecision> last MC_GUARDED_BY(mu);
        std::deque<std::string> order MC_GUARDED_BY(mu);  // insertion order, for the bound
    };
    Stripe& StripeFor(std::string_view key) const;

    size_t per_stripe_;
    mutable std::array<Stripe, kStripes> stripes_;
};

}  // namespace mooncake
