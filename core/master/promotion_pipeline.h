// The promotion pipeline: LOCAL_DISK objects read often enough come back to MEMORY.
//
// It owns every piece of promotion state the master keeps outside the objects themselves:
// the tasks and bytes in flight (the queue cap), the refused candidates remembered for retry
// (retry_mu_), the proactive scan's cursor, and the rules that start and end a task. It is
// also admission's only writer: every read, miss, new object and departed object is counted
// here (CountRead, CountMiss, CountNewObject, ForgetObject) into the store's sketch.
//
// Gates, in order: dedup of a task already in flight, admission (the key's read count
// against promotion_admission_threshold) -> DRAM pressure (the strict interlock, or room by displacing colder objects: the adaptive
// gate or the victim comparison may refuse) -> dedup (one task per key) -> cap
// (promotion_queue_limit and the byte budget) -> admit: pin the LOCAL_DISK source, deadline
// promotion_task_timeout_sec, queue on the holder node. Every attempt ends in exactly one
// PromotionOutcome (core/base/promotion_decision.h), counted here and nowhere else, and remembered
// as the key's last decision. Keys read in one batch are decided as a chain: one room
// decision for all of them, queued in the batch's order, so a request's prefix comes back
// whole. The holder executes the task through MasterStore's one-line calls into this class:
// Heartbeat (Deliver) -> AllocStart (Find, Stage) -> writes the bytes -> Succeeded (Commit),
// or Failed. Every exit path (commit, failure, expiry, Remove, node
// expiry, new generation) goes through End, which frees the staging range and drops the
// task state; the source's pin is derived from that state (ObjectMeta::SourcePinned), so
// nothing leaks.
//
// Locking: methods taking an ObjectMeta (or a Shard) run under that object's shard lock.
// OnReads, TryPromote, RetryRefused, ProactiveScan and the holder's protocol calls
// (Heartbeat .. Manual) take shard locks themselves, one at a time, and never while holding retry_mu_ (a leaf). The counters are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/master/adaptive_policy.h"
#include "core/master/admission_sketch.h"
#include "core/base/clock.h"
#include "core/master/dram_pool.h"
#include "core/base/knobs.h"
#include "core/base/master_types.h"
#include "core/base/mutex.h"
#include "core/master/node_table.h"
#include "core/master/object.h"
#include "core/master/object_lifecycle.h"
#include "core/master/object_table.h"
#include "core/base/promotion_decision.h"
#include "core/base/status.h"
#include "core/master/store_metrics.h"
#include "core/base/thread_annotations.h"

namespace mooncake {

// The objects an allocation would displace (the eviction order's cold end), not touched.
struct VictimInfo {
    bool found = false;
    uint32_t max_estimate = 0;
};

// A reader's Get of a LOCAL_DISK-only object, handed to the pipeline after the shard lock
// is released.
struct DiskRead {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    uint32_t reads = 0;        // its admission count, this read included
    bool in_flight = false;    // a promotion task existed when it was read
};

class PromotionPipeline {
public:
    enum class Trigger { kHit, kManual, kManualForce, kRetry, kProactive, kPrefetch };
    using PeekVictims = std::function<VictimInfo(uint64_t size)>;

    // promotion_gate=adaptive judges only when `gate_applies` (its miniature simulations model
    // LRU, so only with that eviction order); `peek` is the eviction engine's PeekVictims.
    PromotionPipeline(const Config& config, const Clock& clock, ObjectTable& table,
                      NodeTable& nodes, DramPool& dram, StoreMetrics& m, AdmissionSketch& sketch,
                      AdaptivePromotionGate& gate, bool gate_applies, PeekVictims peek,
                      ObjectLifecycle& objects)
        : config_(config), clock_(clock), table_(table), nodes_(nodes), dram_(dram), m_(m),
          sketch_(sketch), gate_(gate), gate_applies_(gate_applies), peek_(std::move(peek)),
          objects_(objects) {}

    // promotion_admission_threshold as the gates read it (0 acts as 1).
    uint32_t AdmissionThreshold() const;

    // ---- admission's counting: what gate 1 reads, fed here and nowhere else ----
    // A new incarnation of `key` (a Put's, or a rejoining node's report): its hash, and its
    // read count seeded from what the sketch remembers of the key (a removed object's reads,
    // misses). Returns the seeded count. Under the key's shard lock.
    uint32_t CountNewObject(ObjectMeta& meta, std::string_view key) {
        return CountNewObject(meta, AdmissionSketch::Hash(key));
    }
    // The same with `sketch_hash` = AdmissionSketch::Hash(key), when the caller has it.
    uint32_t CountNewObject(ObjectMeta& meta, uint64_t sketch_hash);
    // A Put's new object: CountNewObject, and the adaptive gate's sample of it.
    void CountPut(ObjectMeta& meta, uint64_t sketch_hash, uint64_t size);
    // Brings in the sketch's line for `sketch_hash` (a hint; nothing changes): a Put asks
    // early, so that CountPut's read of it does not wait for a cache miss of its own.
    void PrefetchCount(uint64_t sketch_hash) const { sketch_.Prefetch(sketch_hash); }
    // An object going away: the sketch keeps its reads for a later incarnation of the key.
    void ForgetObject(const ObjectMeta& meta) { sketch_.Fold(meta.reads(), meta.hash); }
    // A Get that found no object of `key` (promotion_on_hit): a miss is a request for the key
    // too, so a block that is put after a miss and read back later has the history an exact
    // frequency count would give.
    void CountMiss(std::string_view key);
    // What AfterRead needs of a read CountRead counted.
    struct CountedRead {
        uint64_t hash = 0;
        uint32_t reads = 0;  // the object's count, this read included
        int cls = 0;         // the read's hit-density class and time (the gate's density arm)
        Nanos at{0};
    };
    // A reader's Get of `meta` (promotion_on_hit; nullopt when off), under its shard lock.
    // Every read counts, MEMORY ones too, so the counts also say how hot the objects a
    // promotion would displace are; the count is the object's own (core/master/access_count.h:
    // no cache line beyond the ones the Get reads). A LOCAL_DISK-only object's read is added
    // to `disk_reads`, for OnReads to judge once the lock is released.
    std::optional<CountedRead> CountRead(ObjectMeta& meta, std::string_view key,
                                         std::vector<DiskRead>& disk_reads);
    // The same read after the shard lock is released: the sketch's aging and the adaptive
    // gate's sample.
    void AfterRead(const CountedRead& read, uint64_t size);
    // The reads of one Get or batch call, in the caller's order: every gate, each attempt
    // counted and remembered. Several admitted keys are decided as one chain. Call without
    // shard locks.
    void OnReads(std::span<const DiskRead> reads);
    // Gates 2..5 for (key, generation) from a retry, the proactive scan or a manual promote
    // (and a single Get). Takes the key's shard lock: call without it.
    PromotionOutcome TryPromote(std::string_view key, Generation generation, uint64_t size,
                                uint32_t estimate, Trigger trigger);
    // An engine's prefetching Exists of a LOCAL_DISK-only object (ExistOptions.
    // prefetch_to_memory, or the knob prefetch_on_exist): a promotion request for the read the
    // probe announces. As in Mooncake's RFC #4271 the probe is the hotness signal, so gate 1
    // (admission) is skipped, and the probe is no read (the read that follows is counted);
    // gates 2..5 are a Get's: room, one task per key, the cap. A refusal is not retried: the
    // read that follows runs a Get's trigger. Takes the key's shard lock: call without it.
    PromotionOutcome Prefetch(std::string_view key, Generation generation, uint64_t size,
                              uint32_t estimate) {
        return TryPromote(key, generation, size, estimate, Trigger::kPrefetch);
    }
    // The last promotion decision about this incarnation of the key, if it is remembered
    // (a decision about an earlier object of the same key is not this one's).
    std::optional<PromotionDecision> LastDecision(std::string_view key,
                                                  Generation generation) const {
        std::optional<PromotionDecision> d = decisions_.Last(key);
        if (d && d->generation != generation) return std::nullopt;
        return d;
    }
    // promotion_inflight_bytes_limit, or a quarter of DRAM when 0.
    uint64_t BytesLimit() const;

    // ---- the holder's protocol, whole (MasterStore's calls; each takes the shard lock) ----
    // Up to `max` tasks for `node`, waiting up to `wait` while it has none.
    std::vector<PromotionTask> Heartbeat(NodeId node, size_t max, Nanos wait);
    // DRAM for the task of (key, generation), evicting for room: the PROCESSING range to
    // write into (the same one again for a retried call). NotReady while offloads in flight
    // are freeing room; a failed allocation ends the task (kAllocFailed).
    Result<ReplicaDesc> AllocStart(NodeId node, std::string_view key, Generation generation,
                                   uint64_t size);
    // The bytes are in the staged range: it becomes the object's COMPLETE MEMORY replica
    // (most recent in the eviction order; with promotion_drop_source, the unpinned LOCAL_DISK
    // copy goes).
    Status Succeeded(NodeId node, std::string_view key, Generation generation);
    // The node could not copy: the task ends (kIoFailed). An ended task is Ok (repeated report).
    Status Failed(NodeId node, std::string_view key, Generation generation);
    // An operator's promote (force: past the strict watermark and the room gate).
    Result<ManualOutcome> Manual(std::string_view key, bool force);

    // ---- ending a task from outside the protocol (callers hold the object's shard lock) ----
    // Ends the task as cancelled: Remove, node expiry, the bytes went away.
    void Cancel(ObjectMeta& meta) { Fail(meta, PromotionOutcome::kCancelled); }
    // Ends the task as expired when its deadline has passed. True if it ended.
    bool ExpireIfDue(ObjectMeta& meta, Nanos now);

    // ---- refused candidates and the proactive scan (call without locks) ----
    // Remembers a candidate refused for room or by the cap, retried with backoff
    // (promotion_retry_*).
    void RememberRefused(std::string_view key, Generation generation);
    // Retries up to 16 due candidates; returns how many were queued.
    size_t RetryRefused();
    // Queues up to proactive_promotion_budget LOCAL_DISK-only keys whose estimate reaches
    // proactive_promotion_threshold, hottest first; returns how many were queued.
    size_t ProactiveScan();

    int64_t tasks_in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
    uint64_t bytes_in_flight() const { return in_flight_bytes_.load(std::memory_order_relaxed); }

private:
    // ---- the protocol's steps (callers hold the object's shard lock) ----
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
    // Ends a task for one of the task outcomes (kAllocFailed, kIoFailed, kCancelled,
    // kExpired): End, counted under it and remembered as the key's last decision.
    void Fail(ObjectMeta& meta, PromotionOutcome outcome);
    // Frees staging and forgets the task (its source's pin goes with it). Every exit path
    // ends here.
    void End(ObjectMeta& meta);

    // What a promotion (or a chain of them) needs of DRAM: `bytes` in all (whole allocation
    // units), the largest object in one piece, for `keys` keys.
    struct RoomNeed {
        uint64_t bytes = 0;
        uint64_t largest = 0;
        size_t keys = 1;
    };
    // Gate 2, DRAM pressure, judged at `estimate`: the refusal, or nullopt when the
    // promotion may take DRAM (free room, or colder objects it may displace).
    std::optional<PromotionOutcome> JudgeRoom(const RoomNeed& need, uint32_t estimate,
                                              Trigger trigger);
    // Gates 3..5 under the key's shard lock: dedup, the cap, admit; the outcome decided there.
    PromotionOutcome Admit(std::string_view key, Generation generation, uint64_t size,
                           uint32_t reads);
    // Counts one attempt's outcome (the outcome's counter and promotion_attempts_total) and
    // remembers it as the key's last decision: the one place an attempt is counted.
    PromotionOutcome Decided(std::string_view key, Generation generation,
                             PromotionOutcome outcome, uint32_t reads);
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
    ObjectLifecycle& objects_;

    std::atomic<int64_t> in_flight_{0};
    std::atomic<uint64_t> in_flight_bytes_{0};
    std::atomic<size_t> proactive_cursor_{0};
    PromotionDecisionLog decisions_;

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
