// Inspection for operators. None of it is an access: no lease, no recency, no sketch count.
#include <algorithm>
#include <queue>

#include "core/master/master_store.h"

namespace mooncake {

Result<ObjectView> MasterStore::Stat(std::string_view key) const {
    MC_RETURN_IF_ERROR(ValidateKey(key));
    Shard& shard = table_.ShardFor(key);
    MutexLock lock(shard.mu);
    auto it = shard.objects.find(std::string(key));
    if (it == shard.objects.end()) {
        return Status::NotFound("key " + QuoteKey(key) + " does not exist");
    }
    ObjectView view = MakeView(it->second, /*complete_only=*/false);
    view.sketch_estimate = sketch_.Estimate(it->second.reads());
    view.last_promotion = promotion_.LastDecision(key, it->second.generation);
    view.group = groups_.GroupOf(key);
    if (const ObjectPin* pin = shard.eviction_lists.pins.Find(it->second)) {
        // Its own soft pin, or one a later block of its prefix lends it (CoverPrefixWithSoftPins).
        view.soft_pinned = pin->soft_ttl.count() > 0 || pin->soft_until.count() > 0;
        view.soft_pin_expiry = pin->soft_until;
        view.hard_pinned = pin->hard();
    }
    return view;
}

std::vector<ObjectView> MasterStore::List(const ListOptions& options) const {
    // Keep the `limit` smallest matching keys in a max-heap: one pass, O(n log limit), so
    // paging through 100,000 keys never sorts them all.
    auto cmp = [](const ObjectView& a, const ObjectView& b) { return a.key < b.key; };
    std::priority_queue<ObjectView, std::vector<ObjectView>, decltype(cmp)> heap(cmp);
    if (options.limit == 0) return {};
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        for (auto& [key, meta] : shard.objects) {
            if (key.compare(0, options.prefix.size(), options.prefix) != 0) continue;
            if (!options.start_after.empty() && key <= options.start_after) continue;
            if (options.tier ? !meta.HasComplete(*options.tier) : !meta.Readable()) continue;
            if (heap.size() == options.limit && !(key < heap.top().key)) continue;
            heap.push(MakeView(meta, /*complete_only=*/true));
            if (heap.size() > options.limit) heap.pop();
        }
    }
    std::vector<ObjectView> out;
    out.reserve(heap.size());
    while (!heap.empty()) {
        out.push_back(heap.top());
        heap.pop();
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<NodeInfo> MasterStore::Nodes() const {
    std::vector<NodeInfo> out;
    for (auto& node : nodes_.All()) {
        NodeInfo info;
        info.id = node->id;
        info.spec = node->spec;
        info.segment_state = node->segment_state.load();
        info.reporting = node->reporting.load();
        info.segment_used = node->segment.used();
        info.disk_used = node->disk_used.load();
        info.memory_objects = node->memory_objects.load();
        info.disk_objects = node->disk_objects.load();
        info.last_heartbeat = Nanos(node->last_heartbeat_ns.load());
        info.health.reported = node->health_reported.load();
        info.health.disk_used = node->reported_disk_used.load();
        info.health.disk_objects = node->reported_disk_objects.load();
        info.health.disk_corruptions = node->reported_corruptions.load();
        out.push_back(std::move(info));
    }
    return out;
}

std::optional<NodeSpec> MasterStore::NodeSpecOf(NodeId id) const {
    std::shared_ptr<NodeState> node = nodes_.Get(id);
    if (node == nullptr) return std::nullopt;
    return node->spec;
}

std::vector<TaskView> MasterStore::Tasks() const {
    std::vector<TaskView> out;
    Nanos now = clock_.Now();
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        for (auto& [key, meta] : shard.objects) {
            if (meta.promotion) {
                const PromotionState& p = *meta.promotion;
                out.push_back({TaskKind::kPromotion, key, meta.generation, meta.size, p.holder,
                               now - p.start, p.delivered, p.staging.has_value()});
            }
            if (meta.offload) {
                const OffloadState& o = *meta.offload;
                out.push_back({TaskKind::kOffload, key, meta.generation, meta.size, o.node,
                               now - o.start, o.delivered, false});
            }
        }
    }
    std::sort(out.begin(), out.end(),
              [](const TaskView& a, const TaskView& b) { return a.age > b.age; });
    return out;
}

std::vector<HotKey> MasterStore::Hot(size_t limit, const KeyScope& scope) const {
    struct Entry {
        HotKey hot;
        Generation generation;
    };
    auto colder = [](const Entry& a, const Entry& b) {
        return a.hot.estimate != b.hot.estimate ? a.hot.estimate > b.hot.estimate
                                                : a.hot.key < b.hot.key;
    };
    std::priority_queue<Entry, std::vector<Entry>, decltype(colder)> heap(colder);
    if (limit == 0) return {};
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        for (auto& [key, meta] : shard.objects) {
            if (!meta.DiskOnly() || !scope.Contains(key)) continue;
            heap.push({{key, meta.size, sketch_.Estimate(meta.reads()), std::nullopt},
                       meta.generation});
            if (heap.size() > limit) heap.pop();
        }
    }
    std::vector<HotKey> out;
    while (!heap.empty()) {
        Entry e = heap.top();
        heap.pop();
        e.hot.last_promotion = promotion_.LastDecision(e.hot.key, e.generation);
        out.push_back(std::move(e.hot));
    }
    std::reverse(out.begin(), out.end());
    return out;
}

}  // namespace mooncake
