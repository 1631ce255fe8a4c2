// GroupTable (core/master/group_table.h).
#include "core/master/group_table.h"

#include <algorithm>

#include "core/base/tenant.h"

namespace mooncake {
namespace {

// A tenant's key's frame ("\0" tenant "\0"; empty for the default tenant). Groups are held
// under it: two tenants naming the same group id have two groups, and one tenant's eviction
// never takes another's objects as "members".
std::string_view FrameOf(std::string_view key) {
    return key.substr(0, key.size() - UserPartOfKey(key).size());
}

}  // namespace

void GroupTable::Join(std::string_view key, std::string_view group) {
    if (group.empty()) return;
    MutexLock lock(mu_);
    auto [it, inserted] =
        group_of_.emplace(std::string(key), std::string(FrameOf(key)) + std::string(group));
    if (!inserted) return;  // a key's group is fixed while its object lives
    members_[it->second].push_back(it->first);
    grouped_.store(group_of_.size(), std::memory_order_relaxed);
}

void GroupTable::Leave(std::string_view key) {
    if (empty()) return;
    MutexLock lock(mu_);
    auto it = group_of_.find(std::string(key));
    if (it == group_of_.end()) return;
    auto m = members_.find(it->second);
    if (m != members_.end()) {
        std::vector<std::string>& keys = m->second;
        keys.erase(std::remove(keys.begin(), keys.end(), it->first), keys.end());
        if (keys.empty()) members_.erase(m);
    }
    group_of_.erase(it);
    grouped_.store(group_of_.size(), std::memory_order_relaxed);
}

std::vector<std::string> GroupTable::Others(std::string_view key) const {
    std::vector<std::string> out;
    if (empty()) return out;
    MutexLock lock(mu_);
    auto it = group_of_.find(std::string(key));
    if (it == group_of_.end()) return out;
    auto m = members_.find(it->second);
    if (m == members_.end()) return out;
    for (const std::string& member : m->second) {
        if (member != it->first) out.push_back(member);
    }
    return out;
}

std::string GroupTable::GroupOf(std::string_view key) const {
    if (empty()) return {};
    MutexLock lock(mu_);
    auto it = group_of_.find(std::string(key));
    return it == group_of_.end() ? std::string() : it->second.substr(FrameOf(key).size());
}

size_t GroupTable::groups() const {
    MutexLock lock(mu_);
    return members_.size();
}

}  // namespace mooncake
