// DepartedObjects: objects the master forgot only because the node holding their last replica
// left (expired, partitioned, crashed, or unregistered), by key and generation.
//
// A node that comes back with those bytes (in its DRAM segment or on its LOCAL_DISK) may claim
// them again (core/master/store_rejoin.cc); anything else an unknown key's report says was removed
// while the node was away, and the node deletes it. So a partition or a node restart loses
// nothing, and a key removed meanwhile does not come back. An entry is forgotten when its key
// is put again or removed, when it is claimed, and beyond kMaxEntries (oldest first).
//
// Thread-safety: all methods may be called from any thread; one mutex, a leaf in the store's
// lock order (held under a shard lock, never the other way round).
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/mutex.h"
#include "core/base/types.h"

namespace mooncake {

class DepartedObjects {
public:
    // Bounds memory after a large node leaves for good: a node holding more departed objects
    // than this gets the oldest refused when it comes back (they read as removed).
    static constexpr size_t kMaxEntries = size_t{1} << 21;

    void Add(const std::string& key, Generation generation);
    // True, and forgets the entry, when `key` departed with exactly `generation`.
    bool Take(std::string_view key, Generation generation);
    void Forget(std::string_view key);
    void ForgetPrefix(std::string_view prefix);
    size_t size() const { return size_.load(std::memory_order_relaxed); }

    // Tombstones, for master high availability (daemon/ha/cluster_state.h): with
    // KeepTombstones(true), every entry Forget/ForgetPrefix drops (its key removed or put
    // again while its node was away) is also queued for TakeNewTombstones, which the HA
    // leader keeps in etcd. A new leader loads them with AddTombstone: for it every node's
    // registration is the first of its name, so without them such a key would come back.
    void KeepTombstones(bool on);
    std::vector<std::pair<std::string, Generation>> TakeNewTombstones();
    void AddTombstone(const std::string& key, Generation generation);
    // True when `key` at `generation` was removed while away (the entry stays: it is exact).
    bool IsTombstone(std::string_view key, Generation generation) const;

    // Copies away (with KeepTombstones only; otherwise these do nothing): a node left with a
    // copy of an object that stays readable elsewhere. Removing that object must leave a
    // tombstone too: for the next leader the node's return is the first of its name, and it
    // would adopt the copy of a removed key. CopyBack: the node came back with it (claimed
    // or refused by this leader); Removed: the object was removed (a tombstone if a copy is
    // away); Gone: it went another way (evicted, say: a copy coming back is still the right
    // bytes). One entry per key: with copies on two away nodes, the first back forgets it.
    void CopyAway(const std::string& key, Generation generation);
    void CopyBack(std::string_view key, Generation generation);
    void Removed(std::string_view key, Generation generation);
    void Gone(std::string_view key);
    size_t copies_away() const { return away_count_.load(std::memory_order_relaxed); }

private:
    void Dropped(const std::string& key, Generation generation) MC_REQUIRES(mu_);
    mutable Mutex mu_;
    std::unordered_map<std::string, Generation> by_key_ MC_GUARDED_BY(mu_);
    // Insertion order for trimming; may name keys already forgotten (skipped then).
    std::deque<std::pair<std::string, Generation>> order_ MC_GUARDED_BY(mu_);
    std::atomic<size_t> size_{0};
    bool keep_tombstones_ MC_GUARDED_BY(mu_) = false;
    std::vector<std::pair<std::string, Generation>> new_tombstones_ MC_GUARDED_BY(mu_);
    std::unordered_multimap<std::string, Generation> tombstones_ MC_GUARDED_BY(mu_);
    std::atomic<size_t> tombstone_count_{0};
    std::unordered_map<std::string, Generation> away_ MC_GUARDED_BY(mu_);  // copies away
    std::atomic<size_t> away_count_{0};
};

}  // namespace mooncake
