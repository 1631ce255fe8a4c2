// The inside of MasterStore: object metadata shards, the node table, task queues, metric
// handles. Only core/store_*.cc include this.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/admission_sketch.h"
#include "core/adaptive_policy.h"
#include "core/eviction_policy.h"
#include "core/departed_objects.h"
#include "core/master_store.h"
#include "core/metrics.h"
#include "core/segment_allocator.h"
#include "core/thread_annotations.h"

namespace mooncake {

struct Replica {
    Tier tier = Tier::kMemory;
    ReplicaState state = ReplicaState::kProcessing;
    NodeId node = kNoNode;
    uint64_t offset = 0;  // MEMORY: range start in the node's segment
    uint32_t pins = 0;    // sources of in-flight offload/promotion
};

struct PromotionState {
    NodeId holder = kNoNode;
    Nanos start{0};       // admission time (latency histogram)
    Nanos deadline{0};    // reaper expires the task after this
    bool delivered = false;
    std::optional<Replica> staging;  // PROCESSING MEMORY range, once allocated
};

struct OffloadState {
    NodeId node = kNoNode;  // holder of the MEMORY source and of the disk it writes to
    Nanos start{0};
    Nanos deadline{0};
    bool delivered = false;
    bool evict_after = false;  // offload-on-evict: drop MEMORY once the disk copy exists
    bool cleaning = false;     // queued by the watermark round (counted in clean_pending_bytes)
};

struct ObjectMeta {
    const std::string* key = nullptr;  // the map's key (stable: unordered_map nodes do not move)
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    ClientId put_client = 0;
    Nanos put_deadline{0};  // while the MEMORY replica is PROCESSING
    std::vector<Replica> replicas;
    Nanos lease_expiry{0};
    uint64_t recency = 0;
    uint64_t hash = 0;  // AdmissionSketch::Hash(key)
    bool in_lru = false;
    std::list<ObjectMeta*>::iterator lru_it;
    PolicyMeta policy;  // eviction_policy state (core/eviction_policy.h)
    std::optional<OffloadState> offload;
    std::optional<PromotionState> promotion;

    Replica* Find(Tier tier, ReplicaState state);
    const Replica* Find(Tier tier, ReplicaState state) const;
    bool HasComplete(Tier tier) const { return Find(tier, ReplicaState::kComplete) != nullptr; }
    bool Leased(Nanos now) const { return lease_expiry > now; }
};

struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, ObjectMeta> objects MC_GUARDED_BY(mu);
    // Objects with a COMPLETE MEMORY replica, most recently used first.
    std::list<ObjectMeta*> lru MC_GUARDED_BY(mu);
    // eviction_policy=hit_density: the same objects, one LRU list per access class.
    PolicyLists policy_lists MC_GUARDED_BY(mu);
};

struct TaskRef {
    std::string key;
    Generation generation;
};

struct NodeState {
    NodeId id = kNoNode;
    NodeSpec spec;
    std::atomic<int64_t> last_heartbeat_ns{0};

    mutable std::mutex segment_mu;
    SegmentAllocator segment MC_GUARDED_BY(segment_mu);

    // Leaves in the lock order: nothing else is locked while one of these is held.
    std::mutex queue_mu;
    std::condition_variable work_cv;
    std::deque<TaskRef> offload_queue MC_GUARDED_BY(queue_mu);
    std::deque<TaskRef> promotion_queue MC_GUARDED_BY(queue_mu);
    HeartbeatReply pending MC_GUARDED_BY(queue_mu);  // not sent yet
    HeartbeatReply unconfirmed MC_GUARDED_BY(queue_mu);  // sent, the node has not confirmed it
    bool gone MC_GUARDED_BY(queue_mu) = false;  // expired/unregistered: wake long-polls

    std::atomic<uint64_t> disk_used{0};
    std::atomic<uint64_t> memory_objects{0};
    std::atomic<uint64_t> disk_objects{0};
    std::atomic<uint64_t> offload_pending{0};
    // The first registration of this name in this master's lifetime: the master restarted (or
    // the node is new), so what the node reports holding is adopted even for unknown keys.
    // A later registration of the name claims unknown keys only from `departed`.
    bool first_of_name = false;

    NodeState(NodeId id_, const NodeSpec& spec_)
        : id(id_), spec(spec_), segment(spec_.segment_capacity) {}
    bool has_disk() const { return spec.disk_capacity > 0; }
};

// Metric handles, looked up once.
struct StoreMetrics {
    explicit StoreMetrics(MetricsRegistry& registry);

    Counter& promotion_attempts;
    Counter& promotion_queued;
    Counter& promotion_completed;
    Counter& promotion_failed_admission;
    Counter& promotion_failed_watermark;
    Counter& promotion_failed_queue_full;
    Counter& promotion_failed_alloc;
    Counter& promotion_failed_io;
    Counter& promotion_deduplicated;
    Counter& promotion_cancelled;
    Counter& promotion_expired;
    Counter& promotion_retried;
    Counter& promotion_proactive;
    Gauge& promotion_in_flight;
    Histogram& promotion_latency;

    Counter& offload_queued;
    Counter& offload_completed;
    Counter& offload_failed;
    Counter& offload_cancelled;
    Counter& offload_bytes;
    Gauge& offload_in_flight;

    Counter& evictions;
    Counter& evicted_bytes;
    Counter& gets_memory;
    Counter& gets_disk;
    Counter& get_misses;
    Counter& puts;
    Counter& put_no_space;
    Counter& removes;
    Counter& nodes_expired;
    Counter& nodes_replaced;
};

// A refused promotion candidate, remembered for retry when room appears.
struct RetryCandidate {
    Generation generation = kNoGeneration;
    Nanos next_try{0};
    Nanos expiry{0};
    Nanos backoff{0};
};

class StoreInternals {
public:
    static constexpr size_t kShardCount = 64;

    StoreInternals(MasterStore& store, Config& config, const Clock& clock,
                   MetricsRegistry& registry, uint32_t epoch);

    MasterStore& store;
    Config& config;
    const Clock& clock;
    StoreMetrics m;
    AdmissionSketch sketch;
    EvictionPolicy policy;  // the eviction_policy knob, read once at start
    AdaptivePromotionGate gate;  // promotion_gate=adaptive (core/adaptive_policy.h)

    std::array<Shard, kShardCount> shards;
    Shard& ShardFor(std::string_view key);
    size_t ShardIndex(std::string_view key) const;

    // Generations: epoch << 32 | counter.
    std::atomic<uint64_t> next_generation;
    Generation NewGeneration() { return next_generation.fetch_add(1, std::memory_order_relaxed); }
    // Heartbeat reply seqs: store-unique (epoch-prefixed, like generations), so a node's
    // confirmation of an earlier registration's reply never matches a later one's.
    std::atomic<uint64_t> next_reply_seq;
    std::atomic<uint64_t> recency_clock{1};
    uint64_t NextRecency() { return recency_clock.fetch_add(1, std::memory_order_relaxed); }

    // ---- nodes ----
    mutable std::shared_mutex nodes_mu;
    std::map<NodeId, std::shared_ptr<NodeState>> nodes MC_GUARDED_BY(nodes_mu);
    NodeId next_node_id MC_GUARDED_BY(nodes_mu) = 1;
    // Names that registered in this master's lifetime (see NodeState::first_of_name).
    std::unordered_set<std::string> names_seen MC_GUARDED_BY(nodes_mu);
    // Per name, the latest incarnations a newer process replaced (bounded): they may not
    // register again (MasterStore::RegisterNode).
    std::unordered_map<std::string, std::deque<uint64_t>> superseded MC_GUARDED_BY(nodes_mu);
    DepartedObjects departed;  // what left with a node and may come back with it
    std::shared_ptr<NodeState> GetNode(NodeId id) const;
    std::vector<std::shared_ptr<NodeState>> AllNodes() const;
    void PushReleased(NodeId node, ReleasedRange range);
    // Whether `node` holds a replica of (key, generation) in `tier` (MEMORY: at `offset`),
    // in any state, including a promotion's staging range. Takes the key's shard lock.
    bool HoldsReplica(NodeId node, const std::string& key, Generation generation, Tier tier,
                      uint64_t offset);
    void PushDiskDelete(NodeId node, DiskDelete del);

    // ---- DRAM ----
    struct Allocation {
        NodeId node;
        uint64_t offset;
    };
    // One attempt, no eviction: `preferred` first, then the node with the most free room.
    std::optional<Allocation> TryAllocate(uint64_t size, NodeId preferred);
    void FreeMemory(NodeId node, uint64_t offset, uint64_t size);
    // Allocates, evicting LRU objects for room; waits up to `wait` (real time) for offloads
    // in flight. NoSpace when room cannot be had.
    Result<Allocation> AllocateWithEviction(uint64_t size, NodeId preferred, Nanos wait);
    uint64_t DramCapacity() const;
    uint64_t DramUsed() const;
    uint64_t LargestFreeExtent() const;
    std::atomic<uint64_t> live_objects{0};
    std::atomic<int64_t> puts_in_progress{0};  // PROCESSING MEMORY replicas of unended Puts
    std::atomic<uint64_t> memory_objects{0};  // objects with a COMPLETE MEMORY replica
    std::atomic<uint64_t> memory_object_bytes{0};

    // ---- eviction ----
    std::mutex eviction_mu;  // one evictor at a time, so rounds do not over-evict
    std::mutex room_mu;      // with room_cv: Puts waiting for offloads to free DRAM
    std::condition_variable room_cv;
    uint64_t room_events MC_GUARDED_BY(room_mu) = 0;  // bumped whenever DRAM may have freed
    std::atomic<uint64_t> evict_pending_bytes{0};  // MEMORY bytes queued for offload-then-drop
    // Bytes the allocations waiting in AllocateWithEviction need: eviction queues no more
    // offload-then-drop bytes than that, so racing waiters do not over-evict.
    std::atomic<uint64_t> waiting_bytes{0};
    std::atomic<uint64_t> clean_pending_bytes{0};  // MEMORY bytes queued for a disk copy only
    struct EvictResult {
        uint64_t freed = 0;    // DRAM freed now
        uint64_t pending = 0;  // DRAM that frees when queued offloads finish
        size_t victims = 0;
    };
    // Evicts about `target` bytes, least recently used first, never leased or pinned objects.
    EvictResult Evict(uint64_t target);
    struct VictimInfo {
        bool found = false;
        uint32_t max_estimate = 0;
    };
    // The objects an allocation of `size` would displace, without touching them.
    VictimInfo PeekVictims(uint64_t size);
    // Queues LOCAL_DISK copies (MEMORY kept) for the coldest `target` bytes lacking one.
    size_t Clean(uint64_t target);
    // Ends an offload task's accounting (pin, pending bytes, gauges); the caller counts it.
    void EndOffload(ObjectMeta& meta);
    void NotifyRoom();

    // ---- shared object operations (callers hold the shard lock) ----
    void LruTouch(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    void LruUnlink(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // Drops the replica at `index`, freeing DRAM or telling the node to delete its disk record.
    void DropReplica(Shard& shard, ObjectMeta& meta, size_t index) MC_REQUIRES(shard.mu);
    // Ends the object's tasks (counted as cancelled), freeing staging and unpinning.
    void CancelTasks(ObjectMeta& meta);
    // Removes the object from its shard (after CancelTasks + dropping every replica).
    void EraseObject(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // Drops everything the object holds and erases it.
    void DestroyObject(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    void QueueOffload(ObjectMeta& meta, bool evict_after);
    // The node has offload_queue_limit offload tasks in flight already: queue no more for it
    // (issue 3: per-node queues are bounded). Callers skip, defer or answer Busy.
    bool OffloadQueueFull(NodeId node) const;
    ObjectView MakeView(const ObjectMeta& meta, bool complete_only) const;

    // ---- task delivery ----
    // Hands a node up to `max` tasks from one of its queues, oldest first, waiting up to `wait`
    // (real time) while it is empty. `deliver(meta, ref)` runs under the key's shard lock and
    // returns the task, or nullopt when the queued entry is stale (removed, new generation,
    // task ended or delivered already); stale entries are dropped.
    template <typename Task, typename Deliver>
    std::vector<Task> DrainQueue(NodeId node_id, std::deque<TaskRef> NodeState::*queue,
                                 size_t max, Nanos wait, Deliver deliver) {
        std::vector<Task> out;
        auto node = GetNode(node_id);
        if (!node || max == 0) return out;
        std::deque<TaskRef>& q = (*node).*queue;
        const auto deadline = std::chrono::steady_clock::now() + wait;
        while (out.size() < max) {
            std::vector<TaskRef> refs;
            {
                std::unique_lock lock(node->queue_mu);
                if (out.empty() && wait.count() > 0) {
                    node->work_cv.wait_until(lock, deadline,
                                             [&] { return !q.empty() || node->gone; });
                }
                while (!q.empty() && refs.size() < max - out.size()) {
                    refs.push_back(std::move(q.front()));
                    q.pop_front();
                }
            }
            if (refs.empty()) break;
            for (TaskRef& ref : refs) {
                Shard& shard = ShardFor(ref.key);
                std::lock_guard lock(shard.mu);
                auto it = shard.objects.find(ref.key);
                if (it == shard.objects.end() || it->second.generation != ref.generation) {
                    continue;
                }
                if (std::optional<Task> task = deliver(it->second, ref)) {
                    out.push_back(std::move(*task));
                }
            }
        }
        return out;
    }

    // ---- promotion ----
    std::atomic<int64_t> promotion_in_flight{0};
    std::atomic<uint64_t> promotion_in_flight_bytes{0};
    std::atomic<int64_t> offload_in_flight{0};
    enum class Trigger { kHit, kManual, kManualForce, kRetry, kProactive };
    // Gates 2..5 (gate 1 is applied by the caller for hits). Returns the outcome.
    enum class GateResult { kQueued, kAdmissionGated, kWatermarkGated, kDeduplicated, kQueueFull,
                            kNotEligible };
    GateResult TryPromote(std::string_view key, Generation generation, uint64_t size,
                          uint64_t hash, uint32_t estimate, Trigger trigger);
    uint64_t PromotionBytesLimit() const;
    void EndPromotion(ObjectMeta& meta);  // frees staging, unpins source, erases the task

    std::mutex retry_mu;
    std::unordered_map<std::string, RetryCandidate> retry MC_GUARDED_BY(retry_mu);
    void RememberRefused(std::string_view key, Generation generation);
    std::atomic<size_t> proactive_cursor{0};

    // ---- ticks ----
    Nanos next_reap{0};
    Nanos next_proactive{0};
    void UpdateSketchWindow();
};

}  // namespace mooncake
