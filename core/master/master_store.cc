// MasterStore: construction (its parts wired), the object lifecycle (Put, Get, Remove), ticks.
// Promotion's and offload's calls delegate to their pipelines (at the end); eviction, nodes
// and admin live in core/master/store_*.cc.
#include "core/master/master_store.h"

#include <algorithm>
#include <unordered_map>

#include "spdlog/spdlog.h"

#include "core/master/master_store.h"

namespace mooncake {
namespace {

// The gate simulates its density arm only with an order that switches to it.
AdaptivePromotionGate::Options GateOptions(const EvictionOrder& order) {
    AdaptivePromotionGate::Options options;
    if (order.SwitchesToDensity()) options.density_table = [&order] { return order.ScoreTable(); };
    return options;
}

}  // namespace

MasterStore::MasterStore(Config& config, const Clock& clock, MetricsRegistry& registry,
                         uint32_t epoch)
    : config_((SegmentAllocator::SetGranularity(config.dram_alloc_granularity()), config)),
      clock_(clock),
      registry_(registry),
      metrics_(registry),
      sketch_(static_cast<uint64_t>(config.promotion_sketch_width())),
      // eviction_policy=adaptive ranks by hit density while the gate follows its density arm.
      order_(EvictionOrder::Make(ParseEvictionPolicy(config.eviction_policy()),
                                 [this] {
                                     return config_.promotion_gate() == "adaptive" &&
                                            gate_.Current() ==
                                                AdaptivePromotionGate::Arm::kDensity;
                                 })),
      gate_applies_(order_->EvictsLeastRecent()),
      gate_(registry, [this] { return dram_.Capacity(); },
            [this] { return sketch_.agings(); }, GateOptions(*order_)),  // promotion_gate hook
      pin_trust_(registry, [this] { return dram_.Capacity(); }),
      table_(epoch),
      nodes_(epoch),
      tenants_(registry),
      dram_(nodes_, config),
      offload_(config, clock, table_, nodes_, dram_, metrics_, *this),
      promotion_(config, clock, table_, nodes_, dram_, metrics_, sketch_, gate_, gate_applies_,
                 [this](uint64_t size) { return PeekVictims(size); }, *this) {
    registry_.AddCallbackGauge("dram_capacity_bytes", "DRAM contributed by live nodes", {},
                               [this] { return static_cast<double>(dram_.Capacity()); });
    registry_.AddCallbackGauge("dram_used_bytes", "DRAM allocated in live nodes' segments", {},
                               [this] { return static_cast<double>(dram_.Used()); });
    registry_.AddCallbackGauge("objects", "objects with at least one replica", {},
                               [this] { return static_cast<double>(table_.live()); });
    registry_.AddCallbackGauge("memory_objects", "objects with a COMPLETE MEMORY replica", {},
                               [this] { return static_cast<double>(memory_objects_.load()); });
    registry_.AddCallbackGauge("nodes", "live nodes", {},
                               [this] { return static_cast<double>(nodes_.size()); });
    registry_.AddCallbackGauge(
        "nodes_reporting",
        "live nodes registered again that have not yet reported the DRAM ranges they hold: "
        "nothing new is placed in their segments, and no eviction makes room meanwhile",
        {}, [this] { return static_cast<double>(nodes_.ReportingCount()); });
    registry_.AddCallbackGauge("promotion_in_flight_bytes", "bytes of promotions in flight", {},
                               [this] {
                                   return static_cast<double>(promotion_.bytes_in_flight());
                               });
    registry_.AddCallbackGauge("disk_used_bytes", "LOCAL_DISK bytes allocated on live nodes (whole 4 KiB blocks per object)", {},
                               [this] {
                                   uint64_t total = 0;
                                   for (auto& n : nodes_.All()) total += n->disk_used.load();
                                   return static_cast<double>(total);
                               });
    registry_.AddCallbackGauge("disk_capacity_bytes", "LOCAL_DISK capacity of live nodes", {},
                               [this] { return static_cast<double>(nodes_.DiskCapacity()); });
}

MasterStore::~MasterStore() = default;

Result<PutStartReply> MasterStore::PutStart(ClientId client, std::string_view key, uint64_t size,
                                            NodeId preferred, const PutHint* hint,
                                            const PutConfig& pin) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    if (size == 0) return Status::InvalidArgument("size is 0; values are 1 byte or more");
    if (size > config_.max_value_size()) {
        return Status::InvalidArgument("size " + std::to_string(size) +
                                       " exceeds max_value_size (" +
                                       config_.GetText(KnobId::max_value_size) + ")");
    }
    if (pin.group.size() > GroupTable::kMaxGroupIdBytes) {
        return Status::InvalidArgument("group id of " + QuoteKey(key) + " is " +
                                       std::to_string(pin.group.size()) + " bytes (at most " +
                                       std::to_string(GroupTable::kMaxGroupIdBytes) + ")");
    }
    // A preferred node must be a live one: an unknown (or expired) id is the caller's error,
    // reported as such rather than silently ignored (issue 2, "Bad input: unknown node id").
    if (preferred != kNoNode && !nodes_.Get(preferred)) {
        return Status::UnknownNode("preferred node " + std::to_string(preferred) +
                                   " is not registered (expired?)");
    }
    const std::string_view tenant = TenantOfKey(key);
    if (!tenants_.Admits(tenant)) {
        tenants_.CountPutRefused(tenant);
        return Status::IllegalClient("tenant '" + std::string(tenant) +
                                     "' is not registered, and the store is in multi-tenant "
                                     "mode (mooncakectl tenant set " + std::string(tenant) + ")");
    }
    const uint64_t largest_segment = nodes_.LargestSegment();
    if (SegmentAllocator::RoundUp(size) > largest_segment) {
        // No room rather than a bad argument: a larger node would take it (Mooncake answers
        // NO_AVAILABLE_HANDLE here too, which engines read as "back off", not as a bug).
        return Status::NoSpace("size " + std::to_string(size) +
                               " is larger than any DRAM segment (largest " +
                               FormatSize(largest_segment) + ")");
    }
    // Hashed once: the shard, the index slot below and the index insert all use it.
    const uint64_t hash = KeyIndex::Hash(key);
    const uint64_t sketch_hash = AdmissionSketch::Hash(key);
    Shard& shard = table_.ShardForHash(hash);
    {
        MutexLock lock(shard.mu);
        // The index slot the insert below writes and the sketch line CountPut reads: their
        // cache misses overlap this lookup's rather than following the allocation one by one.
        shard.index.PrefetchSlot(hash);
        promotion_.PrefetchCount(sketch_hash);
        if (shard.objects.count(key)) {
            return Status::AlreadyExists("key " + QuoteKey(key) + " already exists");
        }
        // A new incarnation: an older one that left with a node must not come back.
        departed_.Forget(key);
    }
    if (pin.replicas == 0) {
        return Status::InvalidArgument("replicas is 0 for " + QuoteKey(key) +
                                       "; a value has 1 MEMORY copy or more");
    }
    // A hard pin reserves its bytes against hard_pin_max_ratio before any DRAM is taken (its
    // copies', if any, as they are placed: AllocateCopies).
    uint64_t hard_bytes = pin.hard ? SegmentAllocator::RoundUp(size) : 0;
    if (hard_bytes > 0) {
        const double cap =
            config_.hard_pin_max_ratio() * static_cast<double>(dram_.Capacity());
        const uint64_t before = hard_pinned_bytes_.fetch_add(hard_bytes);
        if (static_cast<double>(before + hard_bytes) > cap) {
            hard_pinned_bytes_.fetch_sub(hard_bytes);
            metrics_.put_no_space.Inc();
            return Status::NoSpace("a hard pin of " + QuoteKey(key) + " (" +
                                   FormatSize(hard_bytes) + ") would put hard-pinned objects past "
                                   "hard_pin_max_ratio (" +
                                   config_.GetText(KnobId::hard_pin_max_ratio) + " of " +
                                   FormatSize(dram_.Capacity()) + " DRAM; " +
                                   FormatSize(before) + " pinned)");
        }
        metrics_.hard_pinned_bytes.Set(static_cast<double>(before + hard_bytes));
    }
    Result<DramPool::Allocation> alloc = AllocateWithEviction(
        key, size, preferred, std::chrono::milliseconds(config_.put_wait_for_offload_ms()));
    if (!alloc.ok()) {
        UncountHardPin(hard_bytes);
        if (alloc.status().Is(StatusCode::kNoSpace)) {
            metrics_.put_no_space.Inc();
            if (tenants_.QuotaOf(tenant).memory_bytes != 0) tenants_.CountPutRefused(tenant);
        }
        return alloc.status();
    }
    std::vector<DramPool::Allocation> copies;
    if (pin.replicas > 1) {
        // Copies go on distinct nodes: no more than there are nodes besides the first's.
        const uint64_t wanted =
            std::min<uint64_t>(pin.replicas - 1, std::max<size_t>(nodes_.size(), 1) - 1);
        copies = AllocateCopies(key, size, alloc->node, pin, wanted);
        if (copies.size() + 1 < pin.replicas) {
            metrics_.put_copies_short.Inc();
            SPDLOG_DEBUG("put of {}: {} MEMORY copies of {} asked for", QuoteKey(key),
                         copies.size() + 1, pin.replicas);
        }
        if (pin.hard) hard_bytes += SegmentAllocator::RoundUp(size) * copies.size();
    }
    MutexLock lock(shard.mu);
    auto [created, inserted] = table_.Insert(shard, std::string(key), hash);
    if (!inserted) {  // raced with another Put of the same key
        dram_.Free(alloc->node, alloc->offset, size);
        for (const DramPool::Allocation& copy : copies) dram_.Free(copy.node, copy.offset, size);
        UncountHardPin(hard_bytes);
        return Status::AlreadyExists("key " + QuoteKey(key) + " already exists");
    }
    ObjectMeta& meta = *created;
    meta.generation = table_.NewGeneration();
    meta.size = size;
    meta.put_client = client;
    const Nanos now = clock_.Now();  // one reading for the deadline and the order's clock
    meta.put_deadline = now + std::chrono::seconds(config_.put_timeout_sec());
    order_->OnPut(meta, hint, now, memory_objects_.load());
    meta.eviction.cold_put = hint != nullptr && hint->last_partial && config_.partial_tail_cold();
    promotion_.CountPut(meta, sketch_hash, size);  // after the order's OnPut: the gate reads its class
    if (pin.soft || pin.hard) {
        ObjectPin held;
        if (pin.soft) {
            held.soft_ttl = pin.soft_ttl.count() > 0
                                ? pin.soft_ttl
                                : std::chrono::milliseconds(config_.default_kv_soft_pin_ttl_ms());
        }
        held.hard_bytes = hard_bytes;
        shard.eviction_lists.pins.Set(meta, held);
    }
    groups_.Join(key, pin.group);
    meta.StartPut(*this, alloc->node, alloc->offset);
    PutStartReply reply;
    reply.generation = meta.generation;
    reply.replica = {Tier::kMemory, ReplicaState::kProcessing, alloc->node, alloc->offset, size, 0};
    for (const DramPool::Allocation& copy : copies) {
        meta.StartPut(*this, copy.node, copy.offset);
        reply.copies.push_back(
            {Tier::kMemory, ReplicaState::kProcessing, copy.node, copy.offset, size, 0});
    }
    return reply;
}

std::vector<DramPool::Allocation> MasterStore::AllocateCopies(std::string_view key, uint64_t size,
                                                              NodeId first,
                                                              const PutConfig& config,
                                                              uint64_t wanted) {
    std::vector<DramPool::Allocation> copies;
    std::vector<NodeId> used{first};
    const std::string_view tenant = TenantOfKey(key);
    const uint64_t bytes = SegmentAllocator::RoundUp(size);
    const double hard_cap = config_.hard_pin_max_ratio() * static_cast<double>(dram_.Capacity());
    for (uint64_t i = 0; i < wanted; ++i) {
        const NodeId preferred = i < config.copy_nodes.size() ? config.copy_nodes[i] : kNoNode;
        // A hard-pinned object's copy is reserved as its first range was: one past the cap
        // is not placed (the put keeps those it has).
        if (config.hard) {
            const uint64_t before = hard_pinned_bytes_.fetch_add(bytes);
            if (static_cast<double>(before + bytes) > hard_cap) {
                hard_pinned_bytes_.fetch_sub(bytes);
                break;
            }
        }
        // A copy is DRAM like any other: within the tenant's quota (which counts the Put's
        // ranges only once they are recorded: this one and those before it are added), and
        // room made by evicting the coldest once (not waited for: a copy that finds no room
        // now is not placed).
        if (!MakeTenantRoom(tenant, bytes * (i + 2)).ok()) {
            UncountHardPin(config.hard ? bytes : 0);
            break;
        }
        std::optional<DramPool::Allocation> copy = dram_.TryAllocate(size, preferred, used);
        // Not while a node reports what it holds: eviction could take what it just reported,
        // for room on other nodes that may be there once it is done (DramPool::Allocate).
        if (!copy && !nodes_.AnyReporting()) {
            EvictColdest(bytes, RoomScope(tenant));
            copy = dram_.TryAllocate(size, preferred, used);
        }
        if (!copy) {
            UncountHardPin(config.hard ? bytes : 0);
            break;
        }
        used.push_back(copy->node);
        copies.push_back(*copy);
    }
    if (config.hard) {
        metrics_.hard_pinned_bytes.Set(static_cast<double>(hard_pinned_bytes_.load()));
    }
    return copies;
}

namespace {

// The object a client's PutEnd/PutRevoke names, checked: same generation, same client,
// still PROCESSING.
Result<ObjectMeta*> FindPut(Shard& shard, ClientId client, std::string_view key, uint64_t hash,
                            Generation generation)
    MC_REQUIRES(shard.mu) {
    // Through the shard's key index: no key copy, and the probe a Get takes.
    ObjectMeta* found = shard.index.Find(key, hash);
    if (found == nullptr) return Status::NotFound("no put of " + QuoteKey(key));
    ObjectMeta& meta = *found;
    if (meta.generation != generation) {
        return Status::StaleGeneration("generation " + std::to_string(generation) + " of " +
                                       QuoteKey(key) + " is not the current one (" +
                                       std::to_string(meta.generation) + ")");
    }
    if (meta.put_client != client) {
        return Status::IllegalClient("the put of " + QuoteKey(key) +
                                     " was started by another client");
    }
    return &meta;
}

}  // namespace

Status MasterStore::PutEnd(ClientId client, std::string_view key, Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    const uint64_t hash = KeyIndex::Hash(key);  // once, for the shard and the index
    Shard& shard = table_.ShardForHash(hash);
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = FindPut(shard, client, key, hash, generation);
    if (!found.ok()) return found.status();
    ObjectMeta& meta = **found;
    const Replica* mem = meta.EndPut(*this);
    if (mem == nullptr) return Status::Ok();  // already ended: idempotent
    const Nanos now = clock_.Now();
    shard.eviction_lists.pins.Refresh(meta, now);  // a soft pin starts
    const ObjectPin* pin = shard.eviction_lists.pins.Find(meta);
    pin_trust_.OnPut(meta.hash, meta.size, pin != nullptr ? pin->soft_ttl : Nanos{0}, now);
    ListPut(shard, meta);
    metrics_.puts.Inc();
    if (config_.enable_offload() && !config_.offload_on_evict()) {
        auto node = nodes_.Get(mem->node);
        // Beyond the node's queue bound the copy is made later, when the object is evicted.
        if (node && node->has_disk() && !offload_.QueueFull(node->id)) {
            offload_.Queue(meta, /*evict_after=*/false);
        }
    }
    return Status::Ok();
}

Status MasterStore::PutRevoke(ClientId client, std::string_view key, Generation generation) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    const uint64_t hash = KeyIndex::Hash(key);
    Shard& shard = table_.ShardForHash(hash);
    MutexLock lock(shard.mu);
    Result<ObjectMeta*> found = FindPut(shard, client, key, hash, generation);
    if (!found.ok()) return found.status();
    ObjectMeta& meta = **found;
    if (meta.HasComplete(Tier::kMemory)) {
        return Status::InvalidArgument("the put of " + QuoteKey(key) +
                                       " already ended; use Remove");
    }
    DestroyObject(shard, meta);
    return Status::Ok();
}

Result<ObjectView> MasterStore::Read(std::string_view key, std::vector<DiskRead>& disk_reads) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = table_.ShardFor(key);
    ObjectView view;
    std::optional<PromotionPipeline::CountedRead> counted;
    uint64_t hash = 0;
    {
        MutexLock lock(shard.mu);
        ObjectMeta* found = table_.Find(shard, key);
        if (found == nullptr) {
            metrics_.get_misses.Inc();
            promotion_.CountMiss(key);
            return Status::NotFound("key " + QuoteKey(key) + " does not exist");
        }
        ObjectMeta& meta = *found;
        if (!meta.Readable()) {
            return Status::NotReady("key " + QuoteKey(key) + " is still being written");
        }
        meta.lease_expiry = clock_.Now() + std::chrono::milliseconds(config_.default_kv_lease_ttl());
        shard.eviction_lists.pins.Refresh(meta, clock_.Now());  // as Mooncake's lease grant
        order_->OnGet(meta, clock_.Now(), memory_objects_.load());
        LruTouch(shard, meta);
        view = MakeView(meta, /*complete_only=*/true);
        (meta.HasComplete(Tier::kMemory) ? metrics_.gets_memory : metrics_.gets_disk).Inc();
        counted = promotion_.CountRead(meta, key, disk_reads);
        hash = meta.hash;
    }
    if (counted) promotion_.AfterRead(*counted, view.size);
    pin_trust_.OnGet(hash, view.size, clock_.Now());
    if (!groups_.empty()) TouchGroup(key);
    return view;
}

Result<ObjectView> MasterStore::GetReplicaList(std::string_view key) {
    std::vector<DiskRead> disk_reads;
    Result<ObjectView> view = Read(key, disk_reads);
    promotion_.OnReads(disk_reads);
    return view;
}

std::vector<Result<ObjectView>> MasterStore::BatchGetReplicaList(
    std::span<const std::string> keys) {
    std::vector<Result<ObjectView>> out;
    out.reserve(keys.size());
    std::vector<DiskRead> disk_reads;
    table_.Prefetch(keys);
    for (const std::string& key : keys) out.push_back(Read(key, disk_reads));
    // The batch's LOCAL_DISK reads, in its order: promoted as one chain.
    promotion_.OnReads(disk_reads);
    CoverPrefixWithSoftPins(keys);
    return out;
}

void MasterStore::CoverPrefixWithSoftPins(std::span<const std::string> keys) {
    if (!pin_trust_.active() || keys.size() < 2) return;
    const Nanos now = clock_.Now();
    Nanos cover{0};  // the latest live soft pin among the keys after this one
    for (size_t i = keys.size(); i-- > 0;) {
        if (!ValidateKey(keys[i]).ok()) continue;
        Shard& shard = table_.ShardFor(keys[i]);
        MutexLock lock(shard.mu);
        ObjectMeta* meta = table_.Find(shard, keys[i]);
        if (meta == nullptr) continue;  // a hole: the blocks before it are still a prefix
        PinTable& pins = shard.eviction_lists.pins;
        const ObjectPin* pin = pins.Find(*meta);
        const Nanos until = pin != nullptr ? pin->soft_until : Nanos{0};
        if (until >= cover) {
            if (until > now) cover = until;
            continue;
        }
        if (!meta->HasComplete(Tier::kMemory)) continue;  // eviction ranks MEMORY copies only
        ObjectPin covered = pin != nullptr ? *pin : ObjectPin{};
        covered.soft_until = cover;
        pins.Set(*meta, covered);
        pin_trust_.OnCover(meta->hash, cover);  // so its simulation ranks as eviction will
    }
}

Status MasterStore::RemoveIfRecorded(std::string_view key, bool force, Generation recorded,
                                     Generation* unrecorded) {
    *unrecorded = kNoGeneration;
    Shard& shard = table_.ShardFor(key);
    MutexLock lock(shard.mu);
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) {
        // Also when its node is away with it: removed means it must not come back.
        departed_.Forget(key);
        return Status::NotFound("key " + QuoteKey(key) + " does not exist");
    }
    ObjectMeta& meta = it->second;
    if (!force && meta.Leased(clock_.Now())) {
        return Status::HasLease("key " + QuoteKey(key) +
                                " is leased by a reader; retry later or force");
    }
    if (removals_.active() && meta.generation != recorded) {
        *unrecorded = meta.generation;  // to be made durable first (RemovalJournal)
        return Status::Ok();
    }
    departed_.Removed(key, meta.generation);  // a copy of it may be away with a node
    DestroyObject(shard, meta);
    metrics_.removes.Inc();
    return Status::Ok();
}

Status MasterStore::RecordRemovals(const RemovalJournal::Entries& entries) {
    Status st = removals_.Record(entries);
    if (st.ok()) return st;
    metrics_.removals_unrecorded.Inc();
    const std::string what = entries.size() == 1
                                 ? "the removal of " + QuoteKey(entries.front().first)
                                 : std::to_string(entries.size()) + " removals";
    return Status(st.code(), what + " could not be made durable, nothing was removed: " +
                                 st.message());
}

Status MasterStore::RemoveWith(std::string_view key, bool force, Generation recorded) {
    // An HA leader records the incarnation's removal before it applies it (RemovalJournal);
    // a put again in between is another incarnation, recorded in turn.
    for (int attempt = 0; attempt < 4; ++attempt) {
        Generation unrecorded = kNoGeneration;
        Status st = RemoveIfRecorded(key, force, recorded, &unrecorded);
        if (!st.ok() || unrecorded == kNoGeneration) return st;
        MC_RETURN_IF_ERROR(RecordRemovals({{std::string(key), unrecorded}}));
        recorded = unrecorded;
    }
    return Status::Busy("key " + QuoteKey(key) +
                        " was put again while its removal was recorded, four times; retry");
}

Status MasterStore::Remove(std::string_view key, bool force) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    return RemoveWith(key, force, kNoGeneration);
}

std::vector<Status> MasterStore::BatchRemove(std::span<const std::string> keys, bool force) {
    std::vector<Status> out;
    out.reserve(keys.size());
    std::vector<Generation> recorded(keys.size(), kNoGeneration);
    if (removals_.active()) {
        // One durable record for the whole batch, not one per key.
        RemovalJournal::Entries entries;
        std::vector<size_t> index;
        for (size_t i = 0; i < keys.size(); ++i) {
            if (!ValidateKey(keys[i]).ok()) continue;
            Shard& shard = table_.ShardFor(keys[i]);
            MutexLock lock(shard.mu);
            auto it = shard.objects.find(keys[i]);
            if (it == shard.objects.end()) continue;
            entries.emplace_back(keys[i], it->second.generation);
            index.push_back(i);
        }
        if (Status st = RecordRemovals(entries); !st.ok()) {
            for (size_t i = 0; i < keys.size(); ++i) out.push_back(st);
            return out;
        }
        for (size_t j = 0; j < index.size(); ++j) recorded[index[j]] = entries[j].second;
    }
    for (size_t i = 0; i < keys.size(); ++i) {
        Status valid = ValidateKey(keys[i]);
        out.push_back(valid.ok() ? RemoveWith(keys[i], force, recorded[i]) : valid);
    }
    return out;
}

size_t MasterStore::RemoveByPrefix(std::string_view prefix, bool force, size_t* skipped,
                                   Status* error, const KeyScope& scope) {
    auto matches = [&](const std::string& key) {
        return key.compare(0, prefix.size(), prefix) == 0 && scope.Contains(key);
    };
    size_t removed = 0;
    size_t leased = 0;
    Nanos now = clock_.Now();
    // An HA leader records every removal first (RemovalJournal), all in one batch; what is
    // put again meanwhile is another incarnation and stays.
    std::unordered_map<std::string, Generation> recorded;
    if (removals_.active()) {
        RemovalJournal::Entries entries;
        for (Shard& shard : table_.shards()) {
            MutexLock lock(shard.mu);
            for (auto& [key, meta] : shard.objects) {
                if (!matches(key)) continue;
                if (!force && meta.Leased(now)) continue;
                entries.emplace_back(key, meta.generation);
            }
        }
        if (Status st = RecordRemovals(entries); !st.ok()) {
            spdlog::warn("{}", st.ToString());
            if (error != nullptr) *error = st;
            if (skipped != nullptr) *skipped = 0;
            return 0;
        }
        recorded.insert(entries.begin(), entries.end());
    }
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        std::vector<ObjectMeta*> victims;
        for (auto& [key, meta] : shard.objects) {
            if (!matches(key)) continue;
            if (!force && meta.Leased(now)) {
                ++leased;
                continue;
            }
            if (removals_.active()) {
                auto r = recorded.find(key);
                if (r == recorded.end() || r->second != meta.generation) continue;
            }
            victims.push_back(&meta);
        }
        for (ObjectMeta* meta : victims) {
            departed_.Removed(*meta->key, meta->generation);
            DestroyObject(shard, *meta);
            metrics_.removes.Inc();
            ++removed;
        }
    }
    departed_.ForgetPrefix(prefix);
    if (skipped != nullptr) *skipped = leased;
    return removed;
}

void MasterStore::SetRemovalWriter(RemovalJournal::Writer writer) {
    removals_.SetWriter(std::move(writer));
}

void MasterStore::KeepTombstones(bool on) { departed_.KeepTombstones(on); }

std::vector<std::pair<std::string, Generation>> MasterStore::TakeNewTombstones() {
    return departed_.TakeNewTombstones();
}

void MasterStore::AddTombstones(const std::vector<std::pair<std::string, Generation>>& list) {
    for (const auto& [key, generation] : list) departed_.AddTombstone(key, generation);
}

Result<bool> MasterStore::Exists(std::string_view key, bool prefetch) {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    prefetch = prefetch || config_.prefetch_on_exist();
    std::optional<std::pair<Generation, uint64_t>> promotable;
    uint32_t estimate = 0;
    {
        Shard& shard = table_.ShardFor(key);
        MutexLock lock(shard.mu);
        const ObjectMeta* meta = table_.Find(shard, key);
        if (meta == nullptr || !meta->Readable()) return false;
        if (prefetch && meta->Promotable()) {
            promotable.emplace(meta->generation, meta->size);
            estimate = sketch_.Estimate(meta->reads());
        }
    }
    if (promotable) {
        // The engine reads right after it checks: promote now, not at that read (which would
        // still be served from disk). Not a read itself: no lease, recency or count.
        metrics_.prefetch_on_exist.Inc();
        (void)promotion_.Prefetch(key, promotable->first, promotable->second, estimate);
    }
    return true;
}

std::vector<Result<bool>> MasterStore::BatchExists(std::span<const std::string> keys,
                                                   bool prefetch) {
    std::vector<Result<bool>> out;
    out.reserve(keys.size());
    for (const std::string& key : keys) {
        Status valid = ValidateKey(key);
        out.push_back(valid.ok() ? Result<bool>(false) : Result<bool>(std::move(valid)));
    }
    // One lock per shard for the batch; a promotable key's prefetch (below) after all the
    // checks, in key order, as Exists would run it.
    prefetch = prefetch || config_.prefetch_on_exist();
    struct Promotable {
        size_t index;
        Generation generation;
        uint64_t size;
        uint32_t estimate;
    };
    std::vector<Promotable> promotable;
    table_.FindEach(keys, [&](size_t i, const ObjectMeta* meta) {
        if (!out[i].ok() || meta == nullptr || !meta->Readable()) return;
        out[i] = true;
        if (prefetch && meta->Promotable()) {
            promotable.push_back({i, meta->generation, meta->size, sketch_.Estimate(meta->reads())});
        }
    });
    std::sort(promotable.begin(), promotable.end(),
              [](const Promotable& a, const Promotable& b) { return a.index < b.index; });
    for (const Promotable& p : promotable) {
        // As Exists: the engine reads right after it checks; not a read itself.
        metrics_.prefetch_on_exist.Inc();
        (void)promotion_.Prefetch(keys[p.index], p.generation, p.size, p.estimate);
    }
    return out;
}

Status MasterStore::Tune(const std::vector<std::pair<std::string, std::string>>& assignments) {
    return config_.SetMany(assignments, SetMode::kRuntime);
}

void MasterStore::Tick() {
    Nanos now = clock_.Now();
    if (last_tick_ != Nanos{0} && now - last_tick_ > kMasterPause) {
        (void)ForgiveMasterPause(now, now - last_tick_);
    }
    last_tick_ = now;
    if (now >= next_reap_) {
        // Once per 100 ms is plenty for second-scale TTLs.
        next_reap_ = now + std::chrono::milliseconds(100);
        ExpireNodes();
        ReapExpired();
        UpdateSketchWindow();
        EnforceTenantQuotas();
    }
    RunWatermarkEviction();
    RetryRefusedCandidates();
    if (config_.proactive_promotion() && now >= next_proactive_) {
        next_proactive_ =
            now + std::chrono::milliseconds(config_.proactive_promotion_interval_ms());
        ProactivePromotionScan();
    }
}


// ---- promotion: the pipeline's (core/master/promotion_pipeline.h) ----

size_t MasterStore::RetryRefusedCandidates() { return promotion_.RetryRefused(); }

size_t MasterStore::ProactivePromotionScan() { return promotion_.ProactiveScan(); }

std::vector<PromotionTask> MasterStore::PromotionObjectHeartbeat(NodeId node_id, size_t max,
                                                                 Nanos wait) {
    return promotion_.Heartbeat(node_id, max, wait);
}

Result<ReplicaDesc> MasterStore::PromotionAllocStart(NodeId node, std::string_view key,
                                                     Generation generation, uint64_t size) {
    return promotion_.AllocStart(node, key, generation, size);
}

Status MasterStore::NotifyPromotionSuccess(NodeId node, std::string_view key,
                                           Generation generation) {
    return promotion_.Succeeded(node, key, generation);
}

Status MasterStore::NotifyPromotionFailure(NodeId node, std::string_view key,
                                           Generation generation) {
    return promotion_.Failed(node, key, generation);
}

Result<ManualOutcome> MasterStore::Promote(std::string_view key, bool force) {
    return promotion_.Manual(key, force);
}

// ---- offload: the pipeline's (core/master/offload_pipeline.h) ----

std::vector<OffloadTask> MasterStore::OffloadObjectHeartbeat(NodeId node_id, size_t max,
                                                             Nanos wait) {
    return offload_.Heartbeat(node_id, max, wait);
}

Status MasterStore::NotifyOffloadSuccess(NodeId node_id, std::string_view key,
                                         Generation generation) {
    return offload_.Succeeded(node_id, key, generation);
}

Status MasterStore::NotifyOffloadFailure(NodeId node_id, std::string_view key,
                                         Generation generation) {
    return offload_.Failed(node_id, key, generation);
}

Result<ManualOutcome> MasterStore::Offload(std::string_view key) {
    return offload_.Manual(key);
}

}  // namespace mooncake
