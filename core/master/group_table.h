// Object groups (Mooncake's ReplicateConfig.group_ids): objects put under one group id are a
// logical unit to the engine (a KV page's K and V, or its tensor-parallel shards), useless to it
// in part. As in Mooncake (its group semantics are best effort), the store keeps a group
// together in the eviction order rather than by transaction: when eviction takes a member, it
// takes the group's other members that are evictable now too, and a read of a member refreshes
// the others' recency. A key's group is fixed while its object lives; a new incarnation of the
// key joins the group its Put names (or none).
//
// Few objects are grouped (it is opt-in in every engine), so the table lives beside the object
// table rather than in every ObjectMeta. Thread-safety: every method takes mu_, a leaf (callers
// may hold a shard lock; nothing is called under mu_).
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/mutex.h"
#include "core/base/thread_annotations.h"

namespace mooncake {

class GroupTable {
public:
    // Group ids are engine-made strings (SGLang: its page's id); longer ones are refused.
    static constexpr size_t kMaxGroupIdBytes = 4096;

    // `key`'s new object joins `group` ("" = ungrouped: nothing to do). Leave it first if an
    // older incarnation was grouped.
    void Join(std::string_view key, std::string_view group);
    // `key`'s object went: it leaves its group (nothing when it had none).
    void Leave(std::string_view key);
    // The other members of `key`'s group (empty when it has none).
    std::vector<std::string> Others(std::string_view key) const;
    // `key`'s group, "" when it has none.
    std::string GroupOf(std::string_view key) const;
    // Whether any object is grouped: the fast path of every caller (no lock).
    bool empty() const { return grouped_.load(std::memory_order_relaxed) == 0; }
    size_t groups() const;

private:
    mutable Mutex mu_;
    std::unordered_map<std::string, std::string> group_of_ MC_GUARDED_BY(mu_);
    std::unordered_map<std::string, std::vector<std::string>> members_ MC_GUARDED_BY(mu_);
    std::atomic<size_t> grouped_{0};  // group_of_.size()
};

}  // namespace mooncake
