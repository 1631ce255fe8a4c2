#include "bench/replay/belady.h"

#include <limits>
#include <queue>
#include <unordered_map>

namespace mooncake::replay {

SimCounts RunBelady(const std::vector<TraceRequest>& trace, uint64_t capacity_objects) {
    std::vector<int64_t> refs;
    for (const TraceRequest& req : trace) refs.insert(refs.end(), req.blocks.begin(), req.blocks.end());
    constexpr size_t kNever = std::numeric_limits<size_t>::max();
    std::vector<size_t> next_use(refs.size());
    std::unordered_map<int64_t, size_t> upcoming;
    for (size_t i = refs.size(); i-- > 0;) {
        auto it = upcoming.find(refs[i]);
        next_use[i] = it == upcoming.end() ? kNever : it->second;
        upcoming[refs[i]] = i;
    }
    SimCounts counts;
    std::unordered_map<int64_t, size_t> cached;  // block -> its next use
    std::unordered_map<int64_t, bool> seen;
    std::priority_queue<std::pair<size_t, int64_t>> farthest;  // lazy: stale entries skipped
    for (size_t i = 0; i < refs.size(); ++i) {
        int64_t block = refs[i];
        ++counts.references;
        auto hit = cached.find(block);
        if (hit != cached.end()) {
            ++counts.mem_hits;
            hit->second = next_use[i];
            farthest.push({next_use[i], block});
            continue;
        }
        bool first = !seen[block];
        seen[block] = true;
        (first ? counts.misses : counts.disk_hits) += 1;
        if (capacity_objects == 0 || next_use[i] == kNever) continue;
        if (cached.size() >= capacity_objects) {
            while (!farthest.empty()) {
                auto [when, victim] = farthest.top();
                auto it = cached.find(victim);
                if (it != cached.end() && it->second == when) break;
                farthest.pop();
            }
            if (farthest.top().first <= next_use[i]) continue;  // not worth admitting
            cached.erase(farthest.top().second);
            farthest.pop();
        }
        if (!first) ++counts.promotions;
        cached[block] = next_use[i];
        farthest.push({next_use[i], block});
    }
    return counts;
}

}  // namespace mooncake::replay
