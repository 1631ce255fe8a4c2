// StoreInternals: what several MasterStore operations share — shards, nodes, DRAM
// allocation, object teardown — and the metric handles.
#include "core/store_internals.h"

#include <algorithm>
#include <cassert>

namespace mooncake {

Replica* ObjectMeta::Find(Tier tier, ReplicaState state) {
    for (Replica& r : replicas) {
        if (r.tier == tier && r.state == state) return &r;
    }
    return nullptr;
}

const Replica* ObjectMeta::Find(Tier tier, ReplicaState state) const {
    for (const Replica& r : replicas) {
        if (r.tier == tier && r.state == state) return &r;
    }
    return nullptr;
}

namespace {

Counter& Failed(MetricsRegistry& r, const char* reason) {
    return r.GetCounter("promotion_failed_total",
                        "promotions refused or failed, by reason (the RFC's names)",
                        {{"reason", reason}});
}

}  // namespace

StoreMetrics::StoreMetrics(MetricsRegistry& r)
    : promotion_attempts(r.GetCounter(
          "promotion_attempts_total",
          "Gets of LOCAL_DISK-only objects that ran the promotion gates")),
      promotion_queued(r.GetCounter("promotion_queued_total", "promotion tasks admitted")),
      promotion_completed(r.GetCounter("promotion_completed_total",
                                       "promotions committed to MEMORY")),
      promotion_failed_admission(Failed(r, "admission_gated")),
      promotion_failed_watermark(Failed(r, "watermark_gated")),
      promotion_failed_queue_full(Failed(r, "queue_full")),
      promotion_failed_alloc(Failed(r, "alloc_failed")),
      promotion_failed_io(Failed(r, "io_failed")),
      promotion_deduplicated(r.GetCounter("promotion_deduplicated_total",
                                          "promotion triggers for a key that had a task")),
      promotion_cancelled(r.GetCounter(
          "promotion_cancelled_total",
          "promotion tasks ended by Remove, node expiry, eviction or a new generation")),
      promotion_expired(r.GetCounter("promotion_expired_total",
                                     "promotion tasks expired by the reaper")),
      promotion_retried(r.GetCounter("promotion_retried_total",
                                     "refused candidates queued on retry")),
      promotion_proactive(r.GetCounter("promotion_proactive_total",
                                       "promotions queued by the proactive scan")),
      promotion_in_flight(r.GetGauge("promotion_in_flight", "promotion tasks in flight")),
      promotion_latency(r.GetHistogram("promotion_latency_seconds",
                                       "promotion trigger to COMPLETE", LatencyBucketsSeconds())),
      offload_queued(r.GetCounter("offload_queued_total", "offload tasks queued")),
      offload_completed(r.GetCounter("offload_completed_total",
                                     "offloads whose LOCAL_DISK copy was committed")),
      offload_failed(r.GetCounter("offload_failed_total", "offloads the node reported failed")),
      offload_cancelled(r.GetCounter("offload_cancelled_total",
                                     "offload tasks ended by Remove, expiry or timeout")),
      offload_bytes(r.GetCounter("offload_bytes_total", "bytes committed to LOCAL_DISK")),
      offload_in_flight(r.GetGauge("offload_in_flight", "offload tasks in flight")),
      evictions(r.GetCounter("evictions_total", "MEMORY replicas evicted (dropped or offloaded)")),
      evicted_bytes(r.GetCounter("evicted_bytes_total", "DRAM bytes evicted")),
      gets_memory(r.GetCounter("gets_total", "GetReplicaList answers by best tier served",
                               {{"tier", "MEMORY"}})),
      gets_disk(r.GetCounter("gets_total", "GetReplicaList answers by best tier served",
                             {{"tier", "LOCAL_DISK"}})),
      get_misses(r.GetCounter("get_misses_total", "GetReplicaList of a missing key")),
      puts(r.GetCounter("puts_total", "Puts completed")),
      put_no_space(r.GetCounter("put_no_space_total", "PutStarts refused for lack of DRAM")),
      removes(r.GetCounter("removes_total", "objects removed")),
      nodes_expired(r.GetCounter("nodes_expired_total", "nodes expired by missed heartbeats")),
      nodes_replaced(r.GetCounter("nodes_replaced_total",
                                  "registrations replaced by a restarted node of the same name")) {}

StoreInternals::StoreInternals(MasterStore& store_, Config& config_, const Clock& clock_,
                               MetricsRegistry& registry, uint32_t epoch)
    : store(store_),
      config(config_),
      clock(clock_),
      m(registry),
      sketch(static_cast<uint64_t>(config_.promotion_sketch_width())),
      policy(ParseEvictionPolicy(config_.eviction_policy())),
      gate(registry, [this] { return DramCapacity(); },
           [this](uint64_t h) { return sketch.Estimate(h); }),  // promotion_gate hook
      next_generation((static_cast<uint64_t>(epoch) << 32) | 1),
      next_reply_seq((static_cast<uint64_t>(epoch) << 32) | 1) {
    // Node ids, like generations, carry the epoch: a node still holding the id an earlier
    // master gave it must get UnknownNode from this one, never another node's registration.
    // 31 bits of it, so an id stays positive on the wire (Thrift i64).
    // Scoped: the gauges below take callback locks, and the "nodes" callback takes nodes_mu
    // under them; holding nodes_mu across registration would invert that order.
    {
        std::unique_lock lock(nodes_mu);
        next_node_id = (static_cast<uint64_t>(epoch & 0x7FFFFFFFu) << 32) | 1;
    }
    registry.AddCallbackGauge("dram_capacity_bytes", "DRAM contributed by live nodes", {},
                              [this] { return static_cast<double>(DramCapacity()); });
    registry.AddCallbackGauge("dram_used_bytes", "DRAM allocated in live nodes' segments", {},
                              [this] { return static_cast<double>(DramUsed()); });
    registry.AddCallbackGauge("objects", "objects with at least one replica", {},
                              [this] { return static_cast<double>(live_objects.load()); });
    registry.AddCallbackGauge("memory_objects", "objects with a COMPLETE MEMORY replica", {},
                              [this] { return static_cast<double>(memory_objects.load()); });
    registry.AddCallbackGauge("nodes", "live nodes", {}, [this] {
        std::shared_lock lock(nodes_mu);
        return static_cast<double>(nodes.size());
    });
    registry.AddCallbackGauge("promotion_in_flight_bytes", "bytes of promotions in flight", {},
                              [this] {
                                  return static_cast<double>(promotion_in_flight_bytes.load());
                              });
    registry.AddCallbackGauge("disk_used_bytes", "LOCAL_DISK bytes held by live nodes", {},
                              [this] {
                                  uint64_t total = 0;
                                  for (auto& n : AllNodes()) total += n->disk_used.load();
                                  return static_cast<double>(total);
                              });
    registry.AddCallbackGauge("disk_capacity_bytes", "LOCAL_DISK capacity of live nodes", {},
                              [this] {
                                  uint64_t total = 0;
                                  for (auto& n : AllNodes()) total += n->spec.disk_capacity;
                                  return static_cast<double>(total);
                              });
}

size_t StoreInternals::ShardIndex(std::string_view key) const {
    return std::hash<std::string_view>{}(key) % kShardCount;
}

Shard& StoreInternals::ShardFor(std::string_view key) { return shards[ShardIndex(key)]; }

// ---------------- nodes ----------------

std::shared_ptr<NodeState> StoreInternals::GetNode(NodeId id) const {
    std::shared_lock lock(nodes_mu);
    auto it = nodes.find(id);
    return it == nodes.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<NodeState>> StoreInternals::AllNodes() const {
    std::shared_lock lock(nodes_mu);
    std::vector<std::shared_ptr<NodeState>> out;
    out.reserve(nodes.size());
    for (auto& [id, node] : nodes) out.push_back(node);
    return out;
}

bool StoreInternals::HoldsReplica(NodeId node, const std::string& key, Generation generation,
                                  Tier tier, uint64_t offset) {
    Shard& shard = ShardFor(key);
    std::lock_guard lock(shard.mu);
    auto it = shard.objects.find(key);
    if (it == shard.objects.end() || it->second.generation != generation) return false;
    const ObjectMeta& meta = it->second;
    auto same = [&](const Replica& r) {
        return r.tier == tier && r.node == node && (tier != Tier::kMemory || r.offset == offset);
    };
    if (std::any_of(meta.replicas.begin(), meta.replicas.end(), same)) return true;
    return meta.promotion && meta.promotion->staging && same(*meta.promotion->staging);
}

void StoreInternals::PushReleased(NodeId id, ReleasedRange range) {
    if (auto node = GetNode(id)) {
        std::lock_guard lock(node->queue_mu);
        node->pending.released.push_back(std::move(range));
    }
}

void StoreInternals::PushDiskDelete(NodeId id, DiskDelete del) {
    if (auto node = GetNode(id)) {
        std::lock_guard lock(node->queue_mu);
        node->pending.disk_deletes.push_back(std::move(del));
        node->work_cv.notify_all();
    }
}

// ---------------- DRAM ----------------

std::optional<StoreInternals::Allocation> StoreInternals::TryAllocate(uint64_t size,
                                                                      NodeId preferred) {
    auto all = AllNodes();
    auto try_node = [&](NodeState& node) -> std::optional<Allocation> {
        std::lock_guard lock(node.segment_mu);
        if (auto offset = node.segment.Allocate(size)) return Allocation{node.id, *offset};
        return std::nullopt;
    };
    if (preferred != kNoNode) {
        for (auto& node : all) {
            if (node->id == preferred) {
                if (auto a = try_node(*node)) return a;
            }
        }
    }
    // Then the node with the most free room, so load spreads over the segments.
    std::vector<std::pair<uint64_t, NodeState*>> by_room;
    for (auto& node : all) {
        if (node->id == preferred) continue;
        std::lock_guard lock(node->segment_mu);
        if (node->segment.largest_free_extent() >= SegmentAllocator::RoundUp(size)) {
            by_room.emplace_back(node->segment.free_bytes(), node.get());
        }
    }
    std::sort(by_room.begin(), by_room.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [room, node] : by_room) {
        if (auto a = try_node(*node)) return a;
    }
    return std::nullopt;
}

void StoreInternals::FreeMemory(NodeId id, uint64_t offset, uint64_t size) {
    if (auto node = GetNode(id)) {
        std::lock_guard lock(node->segment_mu);
        node->segment.Free(offset, size);
    }
    NotifyRoom();
}

void StoreInternals::NotifyRoom() {
    std::lock_guard lock(room_mu);
    ++room_events;
    room_cv.notify_all();
}

Result<StoreInternals::Allocation> StoreInternals::AllocateWithEviction(uint64_t size,
                                                                        NodeId preferred,
                                                                        Nanos wait) {
    const auto give_up_at = std::chrono::steady_clock::now() + wait;
    const uint64_t need = SegmentAllocator::RoundUp(size);
    struct WaitingCount {  // this allocation's share of waiting_bytes while it waits
        std::atomic<uint64_t>& total;
        uint64_t bytes = 0;
        void Add(uint64_t b) {
            if (bytes == 0) total.fetch_add(bytes = b);
        }
        ~WaitingCount() {
            if (bytes != 0) total.fetch_sub(bytes);
        }
    } waiting{waiting_bytes};
    for (;;) {
        uint64_t seen_events;
        {
            std::lock_guard lock(room_mu);
            seen_events = room_events;
        }
        if (auto a = TryAllocate(size, preferred)) return *a;
        // Evict only when the DRAM already on its way out does not cover what the waiting
        // allocations (this one included) need. (Was: Evict on every wake-up, so a waiter that
        // lost the freed room to another queued one more victim each time, and racing Puts
        // drained DRAM far below capacity; ConcurrencyTest.PutsUnderPressureWait...)
        EvictResult evicted;
        const uint64_t wanted = waiting_bytes.load() + (waiting.bytes ? 0 : need);
        const uint64_t coming = evict_pending_bytes.load();
        if (coming < wanted) evicted = Evict(wanted - coming);
        if (evicted.freed > 0) continue;
        // Room is on its way while any offload is in flight: an offload-on-evict drops its
        // MEMORY copy when done, and any other (at PutEnd, manual, watermark clean) makes its
        // pinned MEMORY copy droppable. Only with none in flight is waiting pointless.
        // (Was: evict_pending_bytes only, so with offload at PutEnd a Put into DRAM full of
        // objects pinned by their disk writes failed at once instead of waiting; see
        // OffloadTest.PutWaitsForPutEndOffloadsInFlightBeforeGivingUp.)
        // Checked under room_mu, with the room events: EndOffload ends an offload's accounting
        // under room_mu with an event, after the DRAM it frees is free. So an offload that
        // ended after seen_events makes us look again, and one that ended before had freed its
        // room before TryAllocate looked: DRAM freed by another thread (an offload done, a
        // Remove) is never missed. (Was: NoSpace with free DRAM under concurrency;
        // ConcurrencyTest.PutsUnderPressureWaitWhileANodeDrainsOffloads.)
        bool nothing_coming;
        {
            std::lock_guard lock(room_mu);
            if (room_events != seen_events) continue;
            nothing_coming = evict_pending_bytes.load() == 0 && offload_in_flight.load() == 0;
        }
        if (nothing_coming) {
            return Status::NoSpace("DRAM is full and every evictable object is leased or "
                                   "pinned (" + FormatSize(DramUsed()) + " of " +
                                   FormatSize(DramCapacity()) + " in use)");
        }
        // Offloads in flight will free room: wait for one to finish, within the budget.
        waiting.Add(need);
        std::unique_lock lock(room_mu);
        if (!room_cv.wait_until(lock, give_up_at, [&] { return room_events != seen_events; })) {
            lock.unlock();
            if (auto a = TryAllocate(size, preferred)) return *a;
            return Status::NoSpace("DRAM is full; offloads in flight did not free room within " +
                                   std::to_string(config.put_wait_for_offload_ms()) + " ms");
        }
    }
}

uint64_t StoreInternals::DramCapacity() const {
    uint64_t total = 0;
    for (auto& node : AllNodes()) {
        std::lock_guard lock(node->segment_mu);
        total += node->segment.capacity();
    }
    return total;
}

uint64_t StoreInternals::DramUsed() const {
    uint64_t total = 0;
    for (auto& node : AllNodes()) {
        std::lock_guard lock(node->segment_mu);
        total += node->segment.used();
    }
    return total;
}

uint64_t StoreInternals::LargestFreeExtent() const {
    uint64_t best = 0;
    for (auto& node : AllNodes()) {
        std::lock_guard lock(node->segment_mu);
        best = std::max(best, node->segment.largest_free_extent());
    }
    return best;
}

// ---------------- object operations ----------------

void StoreInternals::LruTouch(Shard& shard, ObjectMeta& meta) {
    meta.recency = NextRecency();
    if (meta.in_lru) {
        shard.lru.splice(shard.lru.begin(), shard.lru, meta.lru_it);
        policy.Link(shard.policy_lists, &meta, meta.policy);  // eviction_policy hook
    } else if (meta.HasComplete(Tier::kMemory)) {
        policy.Link(shard.policy_lists, &meta, meta.policy);  // eviction_policy hook
        shard.lru.push_front(&meta);
        meta.lru_it = shard.lru.begin();
        meta.in_lru = true;
        memory_objects.fetch_add(1, std::memory_order_relaxed);
        memory_object_bytes.fetch_add(meta.size, std::memory_order_relaxed);
    }
}

void StoreInternals::LruUnlink(Shard& shard, ObjectMeta& meta) {
    if (!meta.in_lru) return;
    shard.lru.erase(meta.lru_it);
    policy.Unlink(shard.policy_lists, meta.policy);  // eviction_policy hook
    meta.in_lru = false;
    memory_objects.fetch_sub(1, std::memory_order_relaxed);
    memory_object_bytes.fetch_sub(meta.size, std::memory_order_relaxed);
}

void StoreInternals::DropReplica(Shard& shard, ObjectMeta& meta, size_t index) {
    Replica r = meta.replicas[index];
    meta.replicas.erase(meta.replicas.begin() + static_cast<ptrdiff_t>(index));
    auto node = GetNode(r.node);
    if (r.tier == Tier::kMemory) {
        if (r.state == ReplicaState::kProcessing) puts_in_progress.fetch_sub(1);
        if (r.state == ReplicaState::kComplete) {
            if (!meta.HasComplete(Tier::kMemory)) LruUnlink(shard, meta);
            if (node) node->memory_objects.fetch_sub(1, std::memory_order_relaxed);
        }
        PushReleased(r.node, {*meta.key, meta.generation, r.offset, meta.size});
        FreeMemory(r.node, r.offset, meta.size);
    } else {
        if (node && r.state == ReplicaState::kComplete) {
            node->disk_used.fetch_sub(meta.size, std::memory_order_relaxed);
            node->disk_objects.fetch_sub(1, std::memory_order_relaxed);
        }
        PushDiskDelete(r.node, {*meta.key, meta.generation});
    }
}

void StoreInternals::EndPromotion(ObjectMeta& meta) {
    PromotionState& p = *meta.promotion;
    if (p.staging) {
        PushReleased(p.staging->node, {*meta.key, meta.generation, p.staging->offset, meta.size});
        FreeMemory(p.staging->node, p.staging->offset, meta.size);
    }
    if (Replica* src = meta.Find(Tier::kLocalDisk, ReplicaState::kComplete)) {
        if (src->pins > 0) --src->pins;
    }
    meta.promotion.reset();
    promotion_in_flight.fetch_sub(1, std::memory_order_relaxed);
    promotion_in_flight_bytes.fetch_sub(meta.size, std::memory_order_relaxed);
    m.promotion_in_flight.Dec();
}

void StoreInternals::CancelTasks(ObjectMeta& meta) {
    if (meta.promotion) {
        EndPromotion(meta);
        m.promotion_cancelled.Inc();
    }
    if (meta.offload) {
        EndOffload(meta);
        m.offload_cancelled.Inc();
        NotifyRoom();
    }
}

void StoreInternals::EndOffload(ObjectMeta& meta) {
    if (Replica* src = meta.Find(Tier::kMemory, ReplicaState::kComplete)) {
        if (src->pins > 0) --src->pins;
    }
    uint64_t bytes = SegmentAllocator::RoundUp(meta.size);
    if (meta.offload->cleaning) clean_pending_bytes.fetch_sub(bytes);
    if (auto node = GetNode(meta.offload->node)) node->offload_pending.fetch_sub(1);
    {
        // Under room_mu with a room event (see AllocateWithEviction); callers that free the
        // offload's DRAM (NotifyOffloadSuccess, DestroyObject) drop it before calling this, so
        // a waiting allocation never sees "nothing in flight" before it can see the room.
        std::lock_guard lock(room_mu);
        if (meta.offload->evict_after) evict_pending_bytes.fetch_sub(bytes);
        offload_in_flight.fetch_sub(1, std::memory_order_relaxed);
        ++room_events;
        room_cv.notify_all();
    }
    meta.offload.reset();
    m.offload_in_flight.Dec();
}

void StoreInternals::EraseObject(Shard& shard, ObjectMeta& meta) {
    LruUnlink(shard, meta);
    std::string key = *meta.key;
    shard.objects.erase(key);
    live_objects.fetch_sub(1, std::memory_order_relaxed);
}

void StoreInternals::DestroyObject(Shard& shard, ObjectMeta& meta) {
    // Replicas first, tasks second: an offload's accounting ends (EndOffload) only once the
    // DRAM it was to free is free, so a waiting Put never sees "nothing in flight" before
    // it sees the room (see AllocateWithEviction). Unpinning a dropped source is a no-op.
    while (!meta.replicas.empty()) DropReplica(shard, meta, meta.replicas.size() - 1);
    CancelTasks(meta);
    EraseObject(shard, meta);
}

void StoreInternals::QueueOffload(ObjectMeta& meta, bool evict_after) {
    Replica* src = meta.Find(Tier::kMemory, ReplicaState::kComplete);
    assert(src != nullptr && !meta.offload);
    Nanos now = clock.Now();
    ++src->pins;
    meta.offload = OffloadState{src->node, now,
                                now + std::chrono::seconds(config.offload_task_timeout_sec()),
                                false, evict_after};
    if (evict_after) evict_pending_bytes.fetch_add(SegmentAllocator::RoundUp(meta.size));
    offload_in_flight.fetch_add(1, std::memory_order_relaxed);
    m.offload_in_flight.Inc();
    m.offload_queued.Inc();
    if (auto node = GetNode(src->node)) {
        node->offload_pending.fetch_add(1);
        std::lock_guard lock(node->queue_mu);
        node->offload_queue.push_back({*meta.key, meta.generation});
        node->work_cv.notify_all();
    }
}

bool StoreInternals::OffloadQueueFull(NodeId id) const {
    auto node = GetNode(id);
    return node && node->offload_pending.load() >=
                       static_cast<uint64_t>(config.offload_queue_limit());
}

ObjectView StoreInternals::MakeView(const ObjectMeta& meta, bool complete_only) const {
    ObjectView view;
    view.key = *meta.key;
    view.generation = meta.generation;
    view.size = meta.size;
    view.lease_expiry = meta.lease_expiry;
    view.recency = meta.recency;
    view.promotion_in_flight = meta.promotion.has_value();
    view.offload_in_flight = meta.offload.has_value();
    for (Tier tier : {Tier::kMemory, Tier::kLocalDisk}) {
        for (const Replica& r : meta.replicas) {
            if (r.tier != tier) continue;
            if (complete_only && r.state != ReplicaState::kComplete) continue;
            view.replicas.push_back({r.tier, r.state, r.node, r.offset, meta.size, r.pins});
        }
    }
    if (!complete_only && meta.promotion && meta.promotion->staging) {
        const Replica& s = *meta.promotion->staging;
        view.replicas.push_back({s.tier, s.state, s.node, s.offset, meta.size, s.pins});
    }
    return view;
}

void StoreInternals::UpdateSketchWindow() {
    int64_t knob = config.promotion_sketch_window();
    if (knob > 0) {
        sketch.set_window(static_cast<uint64_t>(knob));
        return;
    }
    // Auto: 8 x how many objects DRAM holds. The sketch should remember about as many reads
    // as it takes to cycle the cache a few times: shorter and a key read once per cache
    // lifetime never reaches the threshold, longer and old popularity outlives its use.
    uint64_t objects = memory_objects.load();
    uint64_t bytes = memory_object_bytes.load();
    uint64_t capacity = DramCapacity();
    uint64_t per_object = objects > 0 ? std::max<uint64_t>(bytes / objects, 1) : 0;
    uint64_t capacity_objects = per_object > 0 ? capacity / per_object : 0;
    sketch.set_window(std::max<uint64_t>(4096, capacity_objects * 8));
}

}  // namespace mooncake
