#include "core/master/departed_objects.h"

namespace mooncake {

void DepartedObjects::Add(const std::string& key, Generation generation) {
    MutexLock lock(mu_);
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
    MutexLock lock(mu_);
    auto it = by_key_.find(std::string(key));
    if (it == by_key_.end() || it->second != generation) return false;
    by_key_.erase(it);
    size_.store(by_key_.size(), std::memory_order_relaxed);
    return true;
}

void DepartedObjects::Forget(std::string_view key) {
    if (size() == 0) return;  // the common case costs one relaxed load
    MutexLock lock(mu_);
    auto it = by_key_.find(std::string(key));
    if (it == by_key_.end()) return;
    Dropped(it->first, it->second);
    by_key_.erase(it);
    size_.store(by_key_.size(), std::memory_order_relaxed);
}

void DepartedObjects::Dropped(const std::string& key, Generation generation) {
    if (keep_tombstones_ && new_tombstones_.size() < kMaxEntries) {
        new_tombstones_.emplace_back(key, generation);
    }
}

void DepartedObjects::KeepTombstones(bool on) {
    MutexLock lock(mu_);
    keep_tombstones_ = on;
}

std::vector<std::pair<std::string, Generation>> DepartedObjects::TakeNewTombstones() {
    MutexLock lock(mu_);
    std::vector<std::pair<std::string, Generation>> out;
    out.swap(new_tombstones_);
    return out;
}

void DepartedObjects::AddTombstone(const std::string& key, Generation generation) {
    MutexLock lock(mu_);
    if (tombstones_.size() >= kMaxEntries) return;
    auto [begin, end] = tombstones_.equal_range(key);
    for (auto it = begin; it != end; ++it) {
        if (it->second == generation) return;
    }
    tombstones_.emplace(key, generation);  // one key may have several removed generations
    tombstone_count_.store(tombstones_.size(), std::memory_order_relaxed);
}

bool DepartedObjects::IsTombstone(std::string_view key, Generation generation) const {
    if (tombstone_count_.load(std::memory_order_relaxed) == 0) return false;
    MutexLock lock(mu_);
    auto [begin, end] = tombstones_.equal_range(std::string(key));
    for (auto it = begin; it != end; ++it) {
        if (it->second == generation) return true;
    }
    return false;
}

void DepartedObjects::CopyAway(const std::string& key, Generation generation) {
    MutexLock lock(mu_);
    // Beyond the bound a copy away goes unrecorded: its key, removed, could come back after a
    // failover, as any key could before copies away were recorded at all.
    if (!keep_tombstones_ || away_.size() >= kMaxEntries) return;
    away_[key] = generation;
    away_count_.store(away_.size(), std::memory_order_relaxed);
}

void DepartedObjects::CopyBack(std::string_view key, Generation generation) {
    if (copies_away() == 0) return;
    MutexLock lock(mu_);
    auto it = away_.find(std::string(key));
    if (it == away_.end() || it->second != generation) return;
    away_.erase(it);
    away_count_.store(away_.size(), std::memory_order_relaxed);
}

void DepartedObjects::Removed(std::string_view key, Generation generation) {
    if (copies_away() == 0) return;
    MutexLock lock(mu_);
    auto it = away_.find(std::string(key));
    if (it == away_.end()) return;
    if (it->second == generation) Dropped(it->first, generation);
    away_.erase(it);
    away_count_.store(away_.size(), std::memory_order_relaxed);
}

void DepartedObjects::Gone(std::string_view key) {
    if (copies_away() == 0) return;
    MutexLock lock(mu_);
    if (away_.erase(std::string(key)) > 0) {
        away_count_.store(away_.size(), std::memory_order_relaxed);
    }
}

void DepartedObjects::ForgetPrefix(std::string_view prefix) {
    if (size() == 0) return;
    MutexLock lock(mu_);
    for (auto it = by_key_.begin(); it != by_key_.end();) {
        if (std::string_view(it->first).substr(0, prefix.size()) == prefix) {
            Dropped(it->first, it->second);
            it = by_key_.erase(it);
        } else {
            ++it;
        }
    }
    size_.store(by_key_.size(), std::memory_order_relaxed);
}

}  // namespace mooncake
