#include "bench/replay/belady.h"

#include <limits>
#include <queue>
#include <unordered_map>

namespace mooncake::replay {

SimCounts RunBelady(const std::vector<TraceRequest>& trace, uint64_t capacity_objects,
                    RequestMeter* meter) {
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
    // One reference; where it was found.
    auto access = [&](size_t i) {
        int64_t block = refs[i];
        ++counts.references;
        auto hit = cached.find(block);
        if (hit != cached.end()) {
            ++counts.mem_hits;
            hit->second = next_use[i];
            farthest.push({next_use[i], block});
            return BlockSource::kMemory;
        }
        bool first = !seen[block];
        seen[block] = true;
        (first ? counts.misses : counts.disk_hits) += 1;
        const BlockSource source = first ? BlockSource::kMiss : BlockSource::kDisk;
        if (capacity_objects == 0 || next_use[i] == kNever) return source;
        if (cached.size() >= capacity_objects) {
            while (!farthest.empty()) {
                auto [when, victim] = farthest.top();
                auto it = cached.find(victim);
                if (it != cached.end() && it->second == when) break;
                farthest.pop();
            }
            if (farthest.top().first <= next_use[i]) return source;  // not worth admitting
            cached.erase(farthest.top().second);
            farthest.pop();
        }
        if (!first) ++counts.promotions;
        cached[block] = next_use[i];
        farthest.push({next_use[i], block});
        return source;
    };
    std::vector<BlockSource> sources;
    size_t i = 0;
    for (const TraceRequest& req : trace) {
        sources.clear();
        for (size_t b = 0; b < req.blocks.size(); ++b) sources.push_back(access(i++));
        if (meter != nullptr) meter->Add(req, sources);
    }
    return counts;
}

}  // namespace mooncake::replay
