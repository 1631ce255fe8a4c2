#include "core/departed_objects.h"

namespace mooncake {

void DepartedObjects::Add(const std::string& key, Generation generation) {
    std::lock_guard lock(mu_);
    by_key_[key] = generation;
    order_.emplace_back(key, generation);
    while (by_key_.size() > kMaxEntries && !order_.empty()) {
        auto it = by_key_.find(order_.front().first);
        if (it != by_key_.end() && it->second == order_.front().second) by_key_.erase(it);
        order_.pop_front();
    }
    // Forgotten entries leave stale order_ items behind; compact when they dominate.
    if (order_.size() > 2 * by_key_.size() + 1024) {
        std::deque<std::pair<std::string, Generation>> live;
        for (auto& item : order_) {
            auto it = by_key_.find(item.first);
            if (it != by_key_.end() && it->second == item.second) live.push_back(std::move(item));
        }
        order_.swap(live);
    }
    size_.store(by_key_.size(), std::memory_order_relaxed);
}

bool DepartedObjects::Take(std::string_view key, Generation generation) {
    if (size() == 0) return false;
    std::lock_guard lock(mu_);
    auto it = by_key_.find(std::string(key));
    if (it == by_key_.end() || it->second != generation) return false;
    by_key_.erase(it);
    size_.store(by_key_.size(), std::memory_order_relaxed);
    return true;
}

void DepartedObjects::Forget(std::string_view key) {
    if (size() == 0) return;  // the common case costs one relaxed load
    std::lock_guard lock(mu_);
    by_key_.erase(std::string(key));
    size_.store(by_key_.size(), std::memory_order_relaxed);
}

void DepartedObjects::ForgetPrefix(std::string_view prefix) {
    if (size() == 0) return;
    std::lock_guard lock(mu_);
    for (auto it = by_key_.begin(); it != by_key_.end();) {
        if (std::string_view(it->first).substr(0, prefix.size()) == prefix) {
            it = by_key_.erase(it);
        } else {
            ++it;
        }
    }
    size_.store(by_key_.size(), std::memory_order_relaxed);
}

}  // namespace mooncake
