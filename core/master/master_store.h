// MasterStore: the master's metadata and every tier rule of mooncake-tier.
//
// It owns object metadata (sharded), the nodes and their DRAM segment allocators, eviction,
// offload and promotion policy, the admission sketch and the metrics. It moves no object
// bytes: nodes do, told by the tasks it hands out. The daemon adapts it to RPC; the trace
// replay drives it directly with a ManualClock.
//
// Thread-safety: every public method may be called from any thread. Object metadata lives in
// ObjectTable::kShardCount shards, one mutex each; the Get path takes only its key's shard
// lock (plus lock-free sketch and counter updates). Lock order, outermost first:
//   MasterStore::eviction_mu_ -> Shard::mu (one at a time) -> NodeTable::mu_ ->
//   leaves: SegmentSpace::mu_, NodeState::queue_mu_, DramPool::room_mu_,
//           PromotionPipeline::retry_mu_ (never held with a shard lock),
//           DepartedObjects::mu_, AdaptivePromotionGate::mu_, SoftPinTrust::mu_, HitDensityEstimator's mutexes.
// (MetricsRegistry's callback mutex is held while a gauge callback takes NodeTable::mu_.)
// The annotated ones (core/base/mutex.h) are checked by scripts/thread-safety.sh (clang
// -Wthread-safety); the promotion pipeline's own state is core/master/promotion_pipeline.h.
// No method calls back into the caller while holding a lock.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/clock.h"
#include "core/base/knobs.h"
#include "core/base/master_types.h"
#include "core/base/metrics.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "core/base/tenant.h"
#include "core/base/thread_annotations.h"
#include "core/master/adaptive_policy.h"
#include "core/master/admission_sketch.h"
#include "core/master/departed_objects.h"
#include "core/master/dram_pool.h"
#include "core/master/eviction_order.h"
#include "core/master/node_table.h"
#include "core/master/object.h"
#include "core/master/object_lifecycle.h"
#include "core/master/object_table.h"
#include "core/master/offload_pipeline.h"
#include "core/master/group_table.h"
#include "core/master/pin_table.h"
#include "core/master/promotion_pipeline.h"
#include "core/master/put_hint.h"
#include "core/master/removal_journal.h"
#include "core/master/soft_pin_trust.h"
#include "core/master/store_metrics.h"
#include "core/master/tenant_ledger.h"

namespace mooncake {

// Whose objects an eviction round may take (tenants, core/master/tenant_ledger.h).
struct EvictionScope {
    enum Kind {
        kAnyone,        // no tenant has a MEMORY quota: every object
        kOnlyTenant,    // `tenant`'s own (it is over its quota)
        kUnprotected,   // `tenant`'s own, and any tenant's not within a MEMORY quota
    } kind = kAnyone;
    std::string tenant;
    // Non-zero: only objects read less recently than this (recency below it) are taken (a
    // drain's copy makes room only by evicting colder data than itself).
    uint64_t colder_than = 0;
    // Non-empty: only objects with a MEMORY copy on one of these nodes (a drain's targets).
    std::vector<NodeId> on_nodes;
    // The tenants' part of the filter a round collects with (empty for kAnyone);
    // MasterStore::RoundFilter adds the rest.
    CandidateFilter Filter(const TenantLedger& ledger) const;  // store_tenants.cc
};

// The parts it is made of own their state and their lock: ObjectTable (shards), NodeTable
// (nodes, their queues and segments), DramPool, EvictionOrder, OffloadPipeline,
// PromotionPipeline. MasterStore wires them and holds what several of its operations share —
// the eviction engine, object teardown, the tallies — which it offers the pipelines as
// ObjectLifecycle (core/master/object_lifecycle.h). Its operations are spread over
// core/master/master_store.cc and store_*.cc, one file per concern.
class MasterStore final : private ObjectTallies, private ObjectLifecycle {
public:
    // `epoch` makes generations and node ids unique across master restarts: pass a value no
    // earlier master used (the daemon derives it from the wall clock, daemon/roles.cc). config, clock and metrics
    // must outlive the store.
    MasterStore(Config& config, const Clock& clock, MetricsRegistry& metrics, uint32_t epoch);
    ~MasterStore();
    MasterStore(const MasterStore&) = delete;
    MasterStore& operator=(const MasterStore&) = delete;

    // ---------------- clients: object lifecycle ----------------

    // Allocates DRAM for `size` bytes (in `preferred`'s segment first, else the segment with
    // most room; evicting LRU objects if needed, waiting up to put_wait_for_offload_ms for
    // offloads in flight) and records a PROCESSING MEMORY replica, invisible to readers.
    // Errors: InvalidArgument (key, size 0, size > max_value_size or any segment),
    // AlreadyExists, NoSpace.
    // `hint` (optional) is what the engine knows about the block (core/master/put_hint.h); only
    // eviction_policy=hit_density reads it.
    // `pin` (core/master/pin_table.h): soft (evicted after unpinned objects while it lasts) and hard
    // (never evicted; NoSpace past hard_pin_max_ratio of DRAM), its group, and its copies:
    // with replicas > 1, up to that many MEMORY ranges on distinct nodes (PutStartReply::copies;
    // AllocateCopies), as many as can be placed now; 0 is InvalidArgument.
    Result<PutStartReply> PutStart(ClientId client, std::string_view key, uint64_t size,
                                   NodeId preferred = kNoNode, const PutHint* hint = nullptr,
                                   const PutConfig& pin = {});
    // Marks the put COMPLETE (grants no lease). Only the client that started it.
    // With enable_offload and !offload_on_evict, queues the offload to LOCAL_DISK now.
    Status PutEnd(ClientId client, std::string_view key, Generation generation);
    // Abandons a put: frees its DRAM and forgets the key.
    Status PutRevoke(ClientId client, std::string_view key, Generation generation);

    // COMPLETE replicas, MEMORY first; grants a read lease of default_kv_lease_ttl, refreshes
    // recency, and may trigger promotion (the reply is not changed by it).
    // Errors: InvalidArgument, NotFound, NotReady (put still in progress).
    Result<ObjectView> GetReplicaList(std::string_view key);
    // A batch is read as an engine reads a request's prefix: in order. After the reads, soft
    // pins cover the prefix (CoverPrefixWithSoftPins).
    std::vector<Result<ObjectView>> BatchGetReplicaList(std::span<const std::string> keys);
    // `keys` are an engine's request prefix in order: a block's KV is of use only with every
    // block before it, so a live soft pin on a later key keeps each earlier key (that has none
    // as long) soft-pinned until the same time. Such a covering pin is not renewed by reads of
    // its own key: it lasts while a later block's pin does and the prefix is read again. Free
    // when no Put ever carried a soft pin.
    void CoverPrefixWithSoftPins(std::span<const std::string> keys);

    // Removes the key: refused with HasLease while leased unless `force`. Cancels its tasks and
    // frees its DRAM; disk copies are deleted by their nodes (told at the next heartbeat).
    Status Remove(std::string_view key, bool force = false);
    std::vector<Status> BatchRemove(std::span<const std::string> keys, bool force = false);
    // Removes every key of `scope` starting with `prefix` (a stored-key prefix: scoped
    // already); returns how many were removed. Leased keys are skipped unless `force` (their
    // count is returned in `skipped`). With a removal writer (below) whose write fails,
    // nothing is removed and `error` says why.
    size_t RemoveByPrefix(std::string_view prefix, bool force, size_t* skipped = nullptr,
                          Status* error = nullptr, const KeyScope& scope = KeyScope::Default());

    // Master high availability: every removal (Remove, BatchRemove, RemoveByPrefix) is made
    // durable by `writer` (the leader: etcd) before it is applied and acknowledged, so the
    // next leader refuses the copies the nodes had not deleted yet (core/master/removal_journal.h).
    // A failed write removes nothing and is the Remove's error. Null: removals are not
    // recorded (one master, no HA).
    void SetRemovalWriter(RemovalJournal::Writer writer);

    // Master high availability: tombstones of keys removed while their node was away
    // (core/master/departed_objects.h), handed to etcd by the leader and loaded by the next one.
    void KeepTombstones(bool on);
    std::vector<std::pair<std::string, Generation>> TakeNewTombstones();
    void AddTombstones(const std::vector<std::pair<std::string, Generation>>& tombstones);

    // True when the key has a COMPLETE replica. Not an access. With `prefetch` (the caller's
    // ExistOptions.prefetch_to_memory) or the knob prefetch_on_exist, a LOCAL_DISK-only key
    // with no promotion in flight is requested for promotion past the admission gate
    // (PromotionPipeline::Prefetch), counted in prefetch_on_exist_total.
    Result<bool> Exists(std::string_view key, bool prefetch = false);
    std::vector<Result<bool>> BatchExists(std::span<const std::string> keys, bool prefetch = false);

    // ---------------- nodes ----------------

    // A node's name must not belong to a live node (InvalidArgument otherwise).
    Result<NodeId> RegisterNode(const NodeSpec& spec);
    // Refreshes liveness; returns what the node must release or delete. `applied` is the seq
    // of the last reply the node acted on: everything in it is forgotten, everything sent
    // since is sent again. kAppliedAll (in-process callers, which cannot lose a reply)
    // confirms whatever was sent before.
    static constexpr uint64_t kAppliedAll = ~uint64_t{0};
    Result<HeartbeatReply> Heartbeat(NodeId node, uint64_t applied = kAppliedAll);
    // Graceful leave: the same cleanup as expiry.
    Status UnregisterNode(NodeId node);
    // What a node registering again holds (core/master/store_rejoin.cc has the rules): its LOCAL_DISK
    // records and the committed ranges of its DRAM segment. One Status per report; the node
    // deletes (disk) or forgets (DRAM) whatever is refused with StaleGeneration or NotFound,
    // and forgets refused DRAM ranges in any case.
    Result<std::vector<Status>> RegisterDiskReplicas(NodeId node,
                                                     std::span<const DiskReplicaReport> reports);
    Result<std::vector<Status>> RegisterMemoryReplicas(
        NodeId node, std::span<const MemoryReplicaReport> reports);
    // The node's disk dropped a record (disk eviction, or a checksum failure).
    Status ReportDiskReplicaDropped(NodeId node, std::string_view key, Generation generation);
    // The node's own disk figures and corruption count, kept for Nodes() (`nodes`, `check`).
    Status ReportNodeHealth(NodeId node, const NodeHealth& health);

    // ---------------- nodes: offload work ----------------

    // Up to `max` pending offload tasks for `node`, oldest first; leftovers stay queued.
    // With `wait` > 0, blocks up to that long (real time) while there is none.
    std::vector<OffloadTask> OffloadObjectHeartbeat(NodeId node, size_t max, Nanos wait = Nanos(0));
    // The node wrote (key, generation) to its disk: adds the COMPLETE LOCAL_DISK replica,
    // unpins the source, and (offload on evict) drops the MEMORY replica.
    Status NotifyOffloadSuccess(NodeId node, std::string_view key, Generation generation);
    // Unpins the source; the DRAM copy stays.
    Status NotifyOffloadFailure(NodeId node, std::string_view key, Generation generation);

    // ---------------- nodes: promotion work ----------------

    std::vector<PromotionTask> PromotionObjectHeartbeat(NodeId node, size_t max,
                                                        Nanos wait = Nanos(0));
    // Checks holder, generation and size, allocates DRAM (the holder's segment first) and
    // stages an invisible PROCESSING MEMORY replica; resets the task's deadline. When room is
    // on its way (eviction queued offloads), NotReady: the task stays, call again shortly.
    // When room cannot be had, the task is dropped (alloc_failed) and NoSpace returned.
    Result<ReplicaDesc> PromotionAllocStart(NodeId node, std::string_view key,
                                            Generation generation, uint64_t size);
    // Commits the staged replica COMPLETE with fresh recency, unpins the source, ends the task.
    // For a task that was cancelled or expired meanwhile: commits nothing (staging freed),
    // returns NotFound or StaleGeneration.
    Status NotifyPromotionSuccess(NodeId node, std::string_view key, Generation generation);
    // Idempotent: frees the staging, unpins the source, counts io_failed once.
    Status NotifyPromotionFailure(NodeId node, std::string_view key, Generation generation);

    // ---------------- admin (never an access: no lease, no recency, no sketch) ----------------

    Result<ObjectView> Stat(std::string_view key) const;  // every replica, any state
    std::vector<ObjectView> List(const ListOptions& options) const;  // sorted by key
    std::vector<NodeInfo> Nodes() const;
    // One live node's registration (name, addresses); nullopt if it is not registered.
    std::optional<NodeSpec> NodeSpecOf(NodeId id) const;
    std::vector<TaskView> Tasks() const;
    // LOCAL_DISK-only keys of `scope` by sketch estimate, hottest first.
    std::vector<HotKey> Hot(size_t limit, const KeyScope& scope = KeyScope::Default()) const;
    // Manual tier moves. promote bypasses admission; it respects DRAM pressure unless `force`.
    Result<ManualOutcome> Promote(std::string_view key, bool force);
    Result<ManualOutcome> Offload(std::string_view key);  // LOCAL_DISK copy, MEMORY kept
    Result<ManualOutcome> Evict(std::string_view key);    // drop MEMORY (offload first if needed)

    // ---- draining a node (Mooncake's drain jobs; store_drain.cc. daemon/drain_jobs.h runs
    // them: it moves the bytes, these decide) ----
    // Sets a node's segment state: placement allocates only on kOk nodes. UnknownNode if the
    // node is not live.
    Status SetSegmentState(NodeId node, SegmentState state);
    // Every COMPLETE MEMORY copy on `node` now: what a drain of it moves.
    std::vector<DrainUnit> DrainUnits(NodeId node) const;
    // Moving one unit off `from`. kDone: nothing to copy (the object has another MEMORY copy,
    // and this one is dropped now; or it is gone, or no longer in MEMORY there). kCopy: a
    // range reserved on another kOk node (one of `targets` if any are given; if none has
    // room, the coldest objects colder than this one evicted once), the unit's bytes to be
    // copied there, then DrainEnd. DrainUnits lists the hottest first.
    // NoSpace when no node has room; Busy while the copy is a task's source, or while a node
    // that registered again reports what it holds and room would need an eviction (later again).
    Result<DrainStep> DrainStart(NodeId from, const DrainUnit& unit,
                                 std::span<const NodeId> targets = {});
    // After a kCopy step: `copied`, the target becomes a COMPLETE MEMORY copy and the copy on
    // `from` goes (Busy: it stays while an offload that began meanwhile reads it; a later
    // DrainStart drops it). Not copied, or the object changed meanwhile (removed, put again:
    // NotFound), or the target left (Unavailable): the target's range is freed.
    Status DrainEnd(NodeId from, const DrainUnit& unit, const DrainStep& step, bool copied);
    // Runtime tuning through the knob table (SetMode::kRuntime), all or nothing.
    Status Tune(const std::vector<std::pair<std::string, std::string>>& assignments);

    // ---------------- tenants (core/master/tenant_ledger.h, store_tenants.cc) ----------------

    struct TenantReport {
        std::vector<TenantRow> tenants;  // every tenant seen or registered, by name
        TenantQuota quota_sum;           // of the registered tenants
        uint64_t memory_capacity = 0;    // DRAM of the live nodes
        uint64_t disk_capacity = 0;      // LOCAL_DISK of the live nodes
        bool multi_tenant = false;       // strict: unregistered tenants' Puts are refused
        // A quota larger than the capacity, or quotas adding up past it: said, not hidden.
        std::vector<std::string> warnings;
    };
    TenantReport Tenants() const;
    // Persists a policy before it takes effect (one master: the policy file, written
    // atomically; HA: etcd). A failed write changes nothing and is the change's error.
    // Null: changes are kept in memory only.
    using TenantPolicyWriter = std::function<Status(const TenantPolicy&)>;
    void SetTenantPolicyWriter(TenantPolicyWriter writer);
    // Replaces the policy (the file at start, etcd at an HA takeover); not written back.
    Status LoadTenantPolicy(const TenantPolicy& policy);
    // Registers `tenant` or changes its quotas (`mooncakectl tenant set`). A tenant now over
    // its new MEMORY quota evicts its own coldest objects at its next Put or tick.
    Result<TenantReport> SetTenant(std::string_view tenant, TenantQuota quota);
    // Unregisters `tenant` (`mooncakectl tenant rm`). While it holds objects this is refused
    // unless `purge`, which removes them first (leased ones too). `removed`: objects purged.
    Result<TenantReport> RemoveTenant(std::string_view tenant, bool purge,
                                      size_t* removed = nullptr);
    const TenantLedger& tenant_ledger() const { return tenants_; }

    // ---------------- background work ----------------

    // Runs whatever is due at the clock's now: node expiry, the promotion reaper, stale-put
    // cleanup, watermark eviction, candidate retry, the proactive scan. The daemon calls it
    // every few ms from one thread; tests and the replay call it as virtual time advances.
    void Tick();
    // Individual steps, for tests.
    size_t ExpireNodes();
    // The master did not run for `gap` up to `now` (SIGSTOP, a paused VM, a swap storm): it
    // heard no heartbeat in that time, so every node lease gets the gap back (never past now).
    // Returns the nodes this kept from expiring (counted, logged). Tick calls it on a gap over
    // kMasterPause.
    size_t ForgiveMasterPause(Nanos now, Nanos gap);
    // Ticks come every few ms; one this late means the master was not running.
    static constexpr Nanos kMasterPause = std::chrono::seconds(1);
    // Puts, offload and promotion tasks past their timeouts (core/master/store_reap.cc).
    size_t ReapExpired();
    size_t RunWatermarkEviction();
    size_t RetryRefusedCandidates();
    size_t ProactivePromotionScan();
    // Tenants over a quota: MEMORY evicts their own coldest objects; LOCAL_DISK drops their
    // coldest disk-only objects (store_tenants.cc). Returns the replicas taken.
    size_t EnforceTenantQuotas();

    // ---------------- accounting (tests, metrics) ----------------

    struct Totals {
        uint64_t dram_capacity = 0;
        uint64_t dram_used = 0;         // allocator's view
        uint64_t dram_allocated = 0;    // sum of live MEMORY replica allocations (metadata view)
        uint64_t objects = 0;
        uint64_t pins = 0;              // sum of replica pins
        uint64_t promotion_tasks = 0;
        uint64_t offload_tasks = 0;
        uint64_t promotion_in_flight_bytes = 0;
    };
    Totals ComputeTotals() const;  // walks everything; for tests and invariant checks

    // The store's bookkeeping checked against a walk over everything (core/master/store_check.cc):
    // DRAM used = sum of live allocations, pins = sources of tasks in flight, the promotion
    // and offload funnels balance, gauges and per-node counts agree with the objects.
    // The walk is not one atomic snapshot: run it when the store is quiet (fault tests retry
    // it until the system settles).
    InvariantReport CheckInvariants() const;

    Config& config() { return config_; }
    const Clock& clock() const { return clock_; }
    MetricsRegistry& metrics() { return registry_; }

private:
    // One reader's Get of `key` (lease, recency, admission count); a LOCAL_DISK-only object's
    // read is appended to `disk_reads` for the promotion pipeline.
    Result<ObjectView> Read(std::string_view key, std::vector<DiskRead>& disk_reads);
    InvariantReport Walk(Totals& totals) const;  // ComputeTotals and CheckInvariants
    // Removes `key` at whatever incarnation, making each removal durable first (Remove).
    Status RemoveWith(std::string_view key, bool force, Generation recorded);
    // Removes `key` when no removal writer is set or its incarnation is `recorded`; otherwise
    // removes nothing and sets `unrecorded` to the incarnation found.
    Status RemoveIfRecorded(std::string_view key, bool force, Generation recorded,
                            Generation* unrecorded);
    Status RecordRemovals(const RemovalJournal::Entries& entries);

    // ---- nodes (core/master/store_nodes.cc, store_rejoin.cc) ----
    void PushReleased(NodeId node, ReleasedRange range);
    void PushDiskDelete(NodeId node, DiskDelete del);
    // Whether `node` holds a replica of (key, generation) in `tier` (MEMORY: at `offset`),
    // in any state, including a promotion's staging range. Takes the key's shard lock.
    bool HoldsReplica(NodeId node, const std::string& key, Generation generation, Tier tier,
                      uint64_t offset);
    // Ends what a departed (or replaced) node held: its tasks cancelled, its replicas dropped,
    // what only it held remembered in `departed_` (it may come back with the node).
    void CleanupNode(const std::shared_ptr<NodeState>& node);
    Status RemoveNode(NodeId id);
    // A rejoining node's report of (key, generation), judged (store_rejoin.cc has the rules).
    Result<ObjectMeta*> Claim(Shard& shard, const NodeState& node, const std::string& key,
                              Generation generation, uint64_t size) MC_REQUIRES(shard.mu);
    void EraseIfEmpty(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // One Status per report (store_rejoin.cc).
    template <typename Report, typename Add>
    std::vector<Status> ForEachClaim(const NodeState& node, std::span<const Report> reports,
                                     Add add);

    // ---- DRAM and eviction (core/master/store_eviction.cc) ----
    // Allocates, evicting for room (EvictColdest); see DramPool::Allocate.
    // The room is for `key`'s object: its tenant's MEMORY quota is made first (MakeTenantRoom),
    // and tenants within their quotas keep their objects (EvictionScope).
    Result<DramPool::Allocation> AllocateWithEviction(std::string_view key, uint64_t size,
                                                      NodeId preferred, Nanos wait) override;
    // Up to `wanted` more MEMORY ranges for `key`'s copies (PutConfig::replicas), each on a
    // node other than `first` and the other copies', config.copy_nodes first. Best effort:
    // a copy is placed only where room can be had now (one eviction round, no wait), within
    // the tenant's quota and, hard-pinned, within hard_pin_max_ratio (reserved here).
    std::vector<DramPool::Allocation> AllocateCopies(std::string_view key, uint64_t size,
                                                     NodeId first, const PutConfig& config,
                                                     uint64_t wanted);
    void UncountHardPin(uint64_t bytes);
    struct EvictResult {
        uint64_t freed = 0;    // DRAM freed now
        uint64_t pending = 0;  // DRAM that frees when queued offloads finish
        size_t victims = 0;
    };
    // The scope of an allocation for `tenant`'s object.
    EvictionScope RoomScope(std::string_view tenant) const;
    // Evicts about `target` bytes, coldest first, never pinned objects (nor leased ones, under
    // the lease_blocks_eviction knob), only within `scope`.
    // Whether dropping `r` frees room placement can use: a COMPLETE MEMORY copy on a node
    // that takes data (a draining segment's room is of no use, and a drain is moving it) and,
    // when `on_nodes` is given (a drain's targets), on one of them. Under its shard lock.
    bool RoomWantedAt(const Replica& r, std::span<const NodeId> on_nodes) const;
    EvictResult EvictColdest(uint64_t target, const EvictionScope& scope = {});
    // Evicts `tenant`'s own coldest objects so that `adding` more bytes keep it within its
    // MEMORY quota. NoSpace when the object alone is over the quota, or its own objects
    // cannot make the room (counted in tenant_puts_refused_total by the caller).
    Status MakeTenantRoom(std::string_view tenant, uint64_t adding);
    // Drops `tenant`'s coldest LOCAL_DISK-only objects worth `excess` bytes.
    size_t TrimTenantDisk(std::string_view tenant, uint64_t excess);
    // Takes `meta`'s MEMORY copy for eviction (`bytes`: its DRAM range): dropped now, or
    // offloaded first (MEMORY goes when the copy lands). False when it cannot go yet (its
    // node's offload queue is full). The caller checked Evictable.
    // `on_nodes` (a drain's targets; empty: any): where a copy of several may be dropped.
    bool EvictVictim(Shard& shard, ObjectMeta& meta, uint64_t bytes, bool offload_enabled,
                     EvictResult& result, std::span<const NodeId> on_nodes = {})
        MC_REQUIRES(shard.mu);
    // An evicted object's group goes with it (core/master/group_table.h): each of `members`
    // that is evictable now, not pinned, is evicted too. Call without shard locks.
    void EvictGroupMembers(const std::vector<std::string>& members, bool offload_enabled,
                           const CandidateFilter& filter, EvictResult& result);
    // What a round in `scope` may take: the tenants' filter, and the drain's bounds
    // (colder_than, on_nodes); never an object whose MEMORY copies all lie on draining
    // segments (RoomWantedAt: an object needs one copy where room is wanted). Empty when nothing
    // is excluded (the common case).
    CandidateFilter RoundFilter(const EvictionScope& scope) const;
    // The lease_blocks_eviction knob's rule, read once per eviction round.
    LeaseRule lease_rule() const override {
        return config_.lease_blocks_eviction() ? LeaseRule::kLeaseBlocksEviction
                                               : LeaseRule::kReadsOnly;
    }
    // Whether eviction ranks soft-pinned objects last now (knob soft_pin_trust, SoftPinTrust).
    bool HonourSoftPins() const {
        return config_.soft_pin_trust() != "adaptive" || pin_trust_.Trusted();
    }
    // Up to `per_shard` bytes of every shard's coldest evictable objects, coldest first.
    ColdestFirst CollectCandidates(uint64_t per_shard, const CandidateFilter& filter = {});
    // The objects an allocation of `size` would displace, without touching them.
    VictimInfo PeekVictims(uint64_t size);
    // Queues LOCAL_DISK copies (MEMORY kept) for the coldest `target` bytes lacking one.
    size_t Clean(uint64_t target);

    // ---- object operations (core/master/store_lifecycle.cc; callers hold the shard lock) ----
    // A fresh recency, and (with a COMPLETE MEMORY replica) most recent in the eviction order.
    void LruTouch(Shard& shard, ObjectMeta& meta) override MC_REQUIRES(shard.mu);
    // A Put's end: listed as LruTouch does, but at the cold end of an order that ranks by
    // recency when the Put was a batch's partial tail (EvictionHook::cold_put).
    void ListPut(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // A read of `key` refreshes its group's other members in MEMORY (as Mooncake's group
    // lease refresh), so the group stays together in the eviction order. Call without shard
    // locks.
    void TouchGroup(std::string_view key);
    // Out of the eviction order (its last COMPLETE MEMORY replica went).
    void LruUnlink(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // Drops the replica at `index`, freeing DRAM or telling the node to delete its disk record.
    void DropReplica(Shard& shard, ObjectMeta& meta, size_t index) override MC_REQUIRES(shard.mu);
    ObjectTallies& tallies() override { return *this; }
    // A hard-pinned object's copies changed while it stays (its node left, a node rejoined
    // with one): its pin counts one copy's DRAM per MEMORY copy from now, and at least one
    // (the object's own room, reserved while it has none).
    void RecountHardPin(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // Ends the object's tasks (counted as cancelled), freeing staging and unpinning.
    void CancelTasks(ObjectMeta& meta);
    // Removes the object from its shard (after CancelTasks + dropping every replica).
    void EraseObject(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // Drops everything the object holds and erases it.
    void DestroyObject(Shard& shard, ObjectMeta& meta) MC_REQUIRES(shard.mu);
    // ObjectTallies: what ObjectMeta's transitions count.
    void PutsInProgress(int delta) override;
    void NodeMemoryObjects(NodeId node, int delta) override;
    void NodeDiskObjects(NodeId node, int delta, uint64_t bytes) override;
    void TenantObjects(std::string_view key, Tier tier, int delta, uint64_t size) override;
    void TenantLeaving(std::string_view key, int64_t bytes) override;
    void Promoted(std::string_view key) override;
    ObjectView MakeView(const ObjectMeta& meta, bool complete_only) const;
    void UpdateSketchWindow();

    Config& config_;
    const Clock& clock_;
    MetricsRegistry& registry_;
    StoreMetrics metrics_;
    AdmissionSketch sketch_;
    std::unique_ptr<EvictionOrder> order_;  // the eviction_policy knob, read once at start
    // promotion_gate=adaptive (core/master/adaptive_policy.h). Its miniature simulations model
    // LRU, so it judges only with that eviction order (else the fixed victim comparison does).
    const bool gate_applies_;
    AdaptivePromotionGate gate_;
    SoftPinTrust pin_trust_;  // whether eviction honours soft pins now
    // mutable: the const (admin) walks lock them as they read.
    mutable ObjectTable table_;
    mutable NodeTable nodes_;
    DepartedObjects departed_;  // what left with a node and may come back with it
    GroupTable groups_;         // objects put under a group id (ReplicateConfig.group_ids)
    RemovalJournal removals_;   // HA: removals made durable before they are acknowledged
    TenantLedger tenants_;      // quotas, usage and figures per tenant
    Mutex tenant_admin_mu_;     // one policy change at a time, written before it is applied
    TenantPolicyWriter tenant_writer_ MC_GUARDED_BY(tenant_admin_mu_);
    DramPool dram_;
    OffloadPipeline offload_;
    PromotionPipeline promotion_;  // after everything it is handed

    std::atomic<int64_t> puts_in_progress_{0};  // PROCESSING MEMORY replicas of unended Puts
    std::atomic<uint64_t> memory_objects_{0};  // objects with a COMPLETE MEMORY replica
    // Segments set to a state other than kOk (and not set back): while none, eviction does
    // not look where its victims' copies lie (RoomWantedAt).
    std::atomic<int64_t> draining_segments_{0};
    std::atomic<uint64_t> memory_object_bytes_{0};
    // DRAM bytes of hard-pinned objects (core/master/pin_table.h), reserved at PutStart.
    std::atomic<uint64_t> hard_pinned_bytes_{0};

    Mutex eviction_mu_;  // one evictor at a time, so rounds do not over-evict
    // When a clean round may be skipped: the clean share is used up only by allocations
    // dropping its copies, so a round that found it whole need not run again until new data
    // took a sixteenth of it, the round was held back (queues full, copies pinned), the share
    // changed, or a second passed (reads reorder the cold end).
    struct CleanGate {
        uint64_t target = 0;
        uint64_t allocated_mark = 0;  // dram_.allocated_bytes() at the last round
        Nanos next_due{0};
        bool held_back = true;
    };
    CleanGate clean_gate_ MC_GUARDED_BY(eviction_mu_);

    // ---- ticks (only Tick's thread) ----
    Nanos next_reap_{0};
    Nanos last_tick_{0};
    Nanos reap_shortest_timeout_{Nanos::max()};  // ReapExpired's, at its last pass
    Nanos next_proactive_{0};
};

}  // namespace mooncake
