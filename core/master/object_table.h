// The object table: every object's metadata, in kShardCount shards with one mutex each, so
// the Get path takes only its key's shard lock. Also the store-wide counters objects are
// numbered by (generations, recency).
//
// Lock order: Shard::mu is taken first of the store's locks except the eviction engine's
// MasterStore::eviction_mu_ (core/master/master_store.h); the node table, segments, queues and DramPool's
// room_mu are taken under it, never the other way round. Two shard locks are never held
// at once.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/master/eviction_order.h"
#include "core/base/mutex.h"
#include "core/master/key_index.h"
#include "core/master/object.h"

namespace mooncake {

// The table's hash: std::hash over the key's characters, as std::hash<std::string> (so the
// map's buckets and iteration order are what they were), but transparent, so a lookup by a
// string_view builds no std::string (a heap allocation for keys over 15 bytes). Not noexcept
// on purpose: libstdc++ caches a node's hash code only for a hash it does not deem fast (a
// noexcept one is), and without the cache every probe and rehash would hash keys again.
struct ObjectKeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
};
static_assert(!std::is_nothrow_invocable_v<const ObjectKeyHash&, const std::string&>,
              "a noexcept hash would turn off the map's cached hash codes (see above)");

struct Shard {
    mutable Mutex mu;
    std::unordered_map<std::string, ObjectMeta, ObjectKeyHash, std::equal_to<>> objects
        MC_GUARDED_BY(mu);
    // The same objects by key, for lookups (ObjectTable::Find; core/master/key_index.h).
    KeyIndex index MC_GUARDED_BY(mu);
    // Objects with a COMPLETE MEMORY replica, in the eviction order's lists.
    EvictionLists eviction_lists MC_GUARDED_BY(mu);
    // No Put or task in this shard is due before this (core/master/store_reap.cc).
    Nanos reap_due MC_GUARDED_BY(mu){0};
};

class ObjectTable {
public:
    static constexpr size_t kShardCount = 64;

    // Generations are epoch << 32 | counter: unique across master restarts.
    explicit ObjectTable(uint32_t epoch)
        : next_generation_((static_cast<uint64_t>(epoch) << 32) | 1) {}

    Shard& ShardFor(std::string_view key) { return ShardForHash(KeyIndex::Hash(key)); }
    // The same, for a caller that keeps KeyIndex::Hash(key) for the index as well.
    Shard& ShardForHash(uint64_t hash) { return shards_[hash % kShardCount]; }
    Shard& shard(size_t index) { return shards_[index]; }
    std::array<Shard, kShardCount>& shards() { return shards_; }

    // A new object under `key` (its `key` pointer set, counted live), or the one there.
    // `hash` is KeyIndex::Hash(key), when the caller has it already.
    std::pair<ObjectMeta*, bool> Insert(Shard& shard, std::string key) MC_REQUIRES(shard.mu) {
        const uint64_t hash = KeyIndex::Hash(key);
        return Insert(shard, std::move(key), hash);
    }
    std::pair<ObjectMeta*, bool> Insert(Shard& shard, std::string key, uint64_t hash)
        MC_REQUIRES(shard.mu) {
        auto [it, inserted] = shard.objects.try_emplace(std::move(key));
        if (inserted) {
            it->second.key = &it->first;
            shard.index.Insert(&it->second, hash);
            live_.fetch_add(1, std::memory_order_relaxed);
        }
        return {&it->second, inserted};
    }
    void Erase(Shard& shard, const ObjectMeta& meta) MC_REQUIRES(shard.mu) {
        std::string key = *meta.key;
        shard.index.Erase(&meta, KeyIndex::Hash(key));
        shard.objects.erase(key);
        live_.fetch_sub(1, std::memory_order_relaxed);
    }
    uint64_t live() const { return live_.load(); }  // objects in the table

    // The object under `key` in `shard` (its shard), or nullptr.
    ObjectMeta* Find(Shard& shard, std::string_view key) MC_REQUIRES(shard.mu) {
        return shard.index.Find(key, KeyIndex::Hash(key));
    }
    // Brings into the cache what Find (and a Get) reads for each of `keys`: index slot,
    // object, key characters, one level at a time across the whole batch, so that the cache
    // misses of different keys overlap rather than follow one another (a large table's
    // lookups otherwise wait for each miss in turn). Takes each shard's lock once per level,
    // never two at once; changes nothing.
    void Prefetch(std::span<const std::string> keys) { (void)PrefetchGrouped(keys); }
    // Prefetch, then `visit(i, object or nullptr)` for each keys[i] under its shard's lock,
    // taken once per shard, in shard order (not key order).
    template <typename Visit>
    void FindEach(std::span<const std::string> keys, Visit visit) {
        const std::vector<KeyRef> refs = PrefetchGrouped(keys);
        for (size_t begin = 0; begin < refs.size();) {
            Shard& shard = shards_[refs[begin].shard];
            MutexLock lock(shard.mu);
            size_t end = begin;
            for (; end < refs.size() && refs[end].shard == refs[begin].shard; ++end) {
                const KeyRef& ref = refs[end];
                visit(ref.index, shard.index.Find(keys[ref.index], ref.hash));
            }
            begin = end;
        }
    }

    Generation NewGeneration() { return next_generation_.fetch_add(1, std::memory_order_relaxed); }
    // Larger = more recently read; orders the shards' eviction lists against each other.
    uint64_t NextRecency() { return recency_clock_.fetch_add(1, std::memory_order_relaxed); }
    // A recency below every one handed out so far, by either function: an object listed at
    // the cold end (a batch's partial tail, core/master/put_hint.h). The two clocks start
    // back to back in the middle of the range and run apart.
    uint64_t NextColdRecency() {
        return cold_recency_clock_.fetch_sub(1, std::memory_order_relaxed);
    }

private:
    struct KeyRef {
        uint64_t hash;
        uint32_t shard;
        uint32_t index;  // in the batch
    };
    // The batch's keys grouped by shard, with their lines brought in (Prefetch).
    std::vector<KeyRef> PrefetchGrouped(std::span<const std::string> keys);

    std::array<Shard, kShardCount> shards_;
    std::atomic<uint64_t> live_{0};
    std::atomic<uint64_t> next_generation_;
    static constexpr uint64_t kRecencyOrigin = uint64_t{1} << 62;
    std::atomic<uint64_t> recency_clock_{kRecencyOrigin};
    std::atomic<uint64_t> cold_recency_clock_{kRecencyOrigin - 1};
};

}  // namespace mooncake
