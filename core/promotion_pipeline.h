// The promotion pipeline: LOCAL_DISK objects read often enough come back to MEMORY.
//
// It owns every piece of promotion state the master keeps outside the objects themselves:
// the tasks and bytes in flight (the queue cap), the refused candidates remembered for retry
// (retry_mu_), the proactive scan's cursor, and the rules that start and end a task.
//
// Gates, in order: admission sketch (applied by GetReplicaList, before TryPromote) -> DRAM
// pressure (the interlock) -> dedup (one task per key) -> cap (promotion_queue_limit and
// the byte budget) -> admit: pin the LOCAL_DISK source, deadline promotion_task_timeout_sec,
// queue on the holder node. The holder executes the task through MasterStore:
// PromotionObjectHeartbeat (Deliver) -> PromotionAllocStart (Find, Stage) -> writes the bytes
// -> NotifyPromotionSuccess (Commit). Every exit path (commit, failure, expiry, Remove, node
// expiry, new generation) goes through End, which frees the staging range and unpins the
// source, so nothing leaks.
//
// Locking: methods taking an ObjectMeta (or a Shard) run under that object's shard lock.
// TryPromote, RetryRefused and ProactiveScan take shard locks themselves, one at a time, and
// never while holding retry_mu_ (a leaf). The counters are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/adaptive_policy.h"
#include "core/admission_sketch.h"
#include "core/clock.h"
#include "core/dram_pool.h"
#include "core/knobs.h"
#include "core/master_types.h"
#include "core/mutex.h"
#include "core/node_table.h"
#include "core/object.h"
#include "core/object_table.h"
#include "core/status.h"
#include "core/store_metrics.h"
#include "core/thread_annotations.h"

namespace mooncake {

// The objects an allocation would displace (the eviction order's cold end), not touched.
struct VictimInfo {
    bool found = false;
    uint32_t max_estimate = 0;
};

class PromotionPipeline {
public:
    enum class Trigger { kHit, kManual, kManualForce, kRetry, kProactive };
    enum class GateResult { kQueued, kAdmissionGated, kWatermarkGated, kDeduplicated, kQueueFull,
                            kNotEligible };
    using PeekVictims = std::function<VictimInfo(uint64_t size)>;

    // promotion_gate=adaptive judges only when `gate_applies` (its miniature simulations model
    // LRU, so only with that eviction order); `peek` is the eviction engine's PeekVictims.
    PromotionPipeline(const Config& config, const Clock& clock, ObjectTable& table,
                      NodeTable& nodes, DramPool& dram, StoreMetrics& m, AdmissionSketch& sketch,
                      AdaptivePromotionGate& gate, bool gate_applies, PeekVictims peek)
        : config_(config), clock_(clock), table_(table), nodes_(nodes), dram_(dram), m_(m),
          sketch_(sketch), gate_(gate), gate_applies_(gate_applies), peek_(std::move(peek)) {}

    // Gates 2..5 for (key, generation). Takes the key's shard lock: call without it.
    GateResult TryPromote(std::string_view key, Generation generation, uint64_t size,
                          uint64_t hash, uint32_t estimate, Trigger trigger);
    // promotion_inflight_bytes_limit, or a quarter of DRAM when 0.
    uint64_t BytesLimit() const;

    // ---- the holder's protocol (callers hold the object's shard lock) ----
    // The task to hand `node` for a queued entry, or nullopt when stale or delivered already.
    std::optional<PromotionTask> Deliver(ObjectMeta& meta, const TaskRef& ref, NodeId node);
    // The promotion task of (key, generation) that `node` may act on.
    static Result<ObjectMeta*> Find(Shard& shard, NodeId node, std::string_view key,
                                    Generation generation) MC_REQUIRES(shard.mu);
    // DRAM was allocated for the task: stage it PROCESSING and restart its deadline.
    void Stage(ObjectMeta& meta, NodeId node, uint64_t offset);
    // Ends a staged task as committed: returns the staged replica, which the caller moves
    // into the object (End does not free it), and counts completed and the latency.
    Replica Commit(ObjectMeta& meta);
    // Frees staging, unpins the source, forgets the task. Every exit path ends here.
    void End(ObjectMeta& meta);
    // End, counted as cancelled (Remove, node expiry, the bytes went away).
    void Cancel(ObjectMeta& meta);
    // End, counted as expired, when the task's deadline has passed. True if it ended.
    bool ExpireIfDue(ObjectMeta& meta, Nanos now);

    // ---- refused candidates and the proactive scan (call without locks) ----
    // Remembers a candidate refused for room, retried with backoff (promotion_retry_*).
    void RememberRefused(std::string_view key, Generation generation);
    // Retries up to 16 due candidates; returns how many were queued.
    size_t RetryRefused();
    // Queues up to proactive_promotion_budget LOCAL_DISK-only keys whose estimate reaches
    // proactive_promotion_threshold, hottest first; returns how many were queued.
    size_t ProactiveScan();

    int64_t tasks_in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
    uint64_t bytes_in_flight() const { return in_flight_bytes_.load(std::memory_order_relaxed); }

private:
    // Reserves a slot under the cap; false (nothing reserved) when over it.
    bool Reserve(uint64_t size);
    void Unreserve(uint64_t size);

    const Config& config_;
    const Clock& clock_;
    ObjectTable& table_;
    NodeTable& nodes_;
    DramPool& dram_;
    StoreMetrics& m_;
    AdmissionSketch& sketch_;
    AdaptivePromotionGate& gate_;
    const bool gate_applies_;
    const PeekVictims peek_;

    std::atomic<int64_t> in_flight_{0};
    std::atomic<uint64_t> in_flight_bytes_{0};
    std::atomic<size_t> proactive_cursor_{0};

    // A refused candidate, remembered for retry when room appears.
    struct RetryCandidate {
        Generation generation = kNoGeneration;
        Nanos next_try{0};
        Nanos expiry{0};
        Nanos backoff{0};
    };
    Mutex retry_mu_;
    std::unordered_map<std::string, RetryCandidate> retry_ MC_GUARDED_BY(retry_mu_);
};

}  // namespace mooncake
