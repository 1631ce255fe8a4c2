#include "bench/replay/request_metrics.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace mooncake::replay {

double TtftModel::Cost(BlockSource source, int64_t tokens) const {
    const double t = static_cast<double>(tokens);
    switch (source) {
        case BlockSource::kMemory:
            return t * kv_bytes_per_token / (memory_gbps * 1e9) * 1e3;
        case BlockSource::kDisk:
            return t * kv_bytes_per_token / (disk_gbps * 1e9) * 1e3;
        case BlockSource::kMiss:
            break;
    }
    return t / prefill_tokens_per_s * 1e3;
}

double RequestFigures::prefix_mem_hit_ratio() const {
    return references == 0 ? 0.0
                           : static_cast<double>(prefix_mem_blocks) /
                                 static_cast<double>(references);
}

double RequestFigures::requests_all_memory_ratio() const {
    return reusing_requests == 0 ? 0.0
                                 : static_cast<double>(all_memory_requests) /
                                       static_cast<double>(reusing_requests);
}

int64_t RequestMeter::BlockTokens(const TraceRequest& request, size_t index) const {
    return replay::BlockTokens(request, index, model_.block_tokens);
}

void RequestMeter::Add(const TraceRequest& request, std::span<const BlockSource> sources) {
    assert(sources.size() == request.blocks.size());
    ++sums_.requests;
    sums_.references += sources.size();
    size_t i = 0;
    while (i < sources.size() && sources[i] == BlockSource::kMemory) ++i;
    sums_.prefix_mem_blocks += i;
    size_t reused = 0;
    double ttft = 0;
    while (reused < sources.size() && sources[reused] != BlockSource::kMiss) {
        ttft += model_.Cost(sources[reused], BlockTokens(request, reused));
        ++reused;
    }
    if (reused > 0) {
        ++sums_.reusing_requests;
        if (i >= reused) ++sums_.all_memory_requests;
    }
    for (size_t j = reused; j < sources.size(); ++j) {
        ttft += model_.Cost(BlockSource::kMiss, BlockTokens(request, j));
    }
    ttft_ms_.push_back(ttft);
}

RequestFigures RequestMeter::Figures() const {
    RequestFigures f = sums_;
    if (ttft_ms_.empty()) return f;
    std::vector<double> sorted = ttft_ms_;
    std::sort(sorted.begin(), sorted.end());
    f.ttft_ms_mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) /
                     static_cast<double>(sorted.size());
    // Nearest rank: the smallest value with at least q of the requests at or below it.
    auto quantile = [&](double q) {
        size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
        return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
    };
    f.ttft_ms_p50 = quantile(0.50);
    f.ttft_ms_p99 = quantile(0.99);
    return f;
}

}  // namespace mooncake::replay
