#include "bench/replay/workloads.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace mooncake::replay {
namespace {

// Hand-written draws: std::*_distribution differ between standard libraries, and the suite
// must give the same traces everywhere.
double Uniform01(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}
uint64_t Below(std::mt19937_64& rng, uint64_t n) { return n <= 1 ? 0 : rng() % n; }
int Between(std::mt19937_64& rng, int lo, int hi) {
    return lo + static_cast<int>(Below(rng, static_cast<uint64_t>(hi - lo + 1)));
}
double Normal(std::mt19937_64& rng) {  // Box-Muller
    double u1 = std::max(Uniform01(rng), 1e-300);
    double u2 = Uniform01(rng);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Ranks 0..n-1 with P(rank r) proportional to 1 / (r + 1)^skew.
class ZipfSampler {
public:
    ZipfSampler(uint64_t n, double skew) : cdf_(n) {
        double sum = 0;
        for (uint64_t r = 0; r < n; ++r) {
            sum += 1.0 / std::pow(static_cast<double>(r + 1), skew);
            cdf_[r] = sum;
        }
        for (double& c : cdf_) c /= sum;
    }
    uint64_t operator()(std::mt19937_64& rng) const {
        double u = Uniform01(rng);
        auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
        return std::min<uint64_t>(static_cast<uint64_t>(it - cdf_.begin()), cdf_.size() - 1);
    }

private:
    std::vector<double> cdf_;
};

// Key-level traces: 16 independent keys per request (the store's per-request work — ticks,
// heartbeats — would dominate the replay otherwise), requests 2 s apart, so the 5 s read lease
// covers ~40 references — far fewer than the smallest DRAM of the suite (~400 objects).
constexpr size_t kKeysPerRequest = 16;
constexpr int64_t kRequestGapMs = 2000;

class KeyTrace {
public:
    explicit KeyTrace(uint64_t refs) { out_.reserve(refs / kKeysPerRequest + 1); }
    void Add(int64_t key) {
        if (out_.empty() || out_.back().blocks.size() >= kKeysPerRequest) {
            TraceRequest r;
            r.timestamp_ms = static_cast<int64_t>(out_.size()) * kRequestGapMs;
            out_.push_back(std::move(r));
        }
        out_.back().blocks.push_back(key);
        ++size_;
    }
    uint64_t size() const { return size_; }
    std::vector<TraceRequest> Take() { return std::move(out_); }

private:
    std::vector<TraceRequest> out_;
    uint64_t size_ = 0;
};

// A fixed random relabelling of ranks, so popularity is not correlated with key order.
std::vector<int64_t> Permutation(uint64_t n, std::mt19937_64& rng) {
    std::vector<int64_t> p(n);
    for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(i);
    for (uint64_t i = n; i > 1; --i) std::swap(p[i - 1], p[Below(rng, i)]);
    return p;
}

}  // namespace

std::vector<TraceRequest> ZipfTrace(uint64_t keys, uint64_t refs, double skew, uint64_t seed) {
    std::mt19937_64 rng(seed);
    ZipfSampler zipf(keys, skew);
    std::vector<int64_t> label = Permutation(keys, rng);
    KeyTrace out(refs);
    for (uint64_t i = 0; i < refs; ++i) out.Add(label[zipf(rng)]);
    return out.Take();
}

std::vector<TraceRequest> LoopTrace(uint64_t keys, uint64_t passes) {
    KeyTrace out(keys * passes);
    for (uint64_t p = 0; p < passes; ++p) {
        for (uint64_t k = 0; k < keys; ++k) out.Add(static_cast<int64_t>(k));
    }
    return out.Take();
}

std::vector<TraceRequest> ShiftingHotTrace(uint64_t keys, uint64_t refs, uint64_t hot,
                                           uint64_t shift_every, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int64_t> label = Permutation(keys, rng);
    KeyTrace out(refs);
    uint64_t base = 0;
    for (uint64_t i = 0; i < refs; ++i) {
        if (i > 0 && i % shift_every == 0) base = Below(rng, keys);  // the hot set moves
        int64_t key = Uniform01(rng) < 0.8 ? label[(base + Below(rng, hot)) % keys]
                                           : label[Below(rng, keys)];
        out.Add(key);
    }
    return out.Take();
}

std::vector<TraceRequest> ScanZipfTrace(uint64_t keys, uint64_t refs, double skew,
                                        uint64_t scan_len, uint64_t scan_every, uint64_t seed) {
    std::mt19937_64 rng(seed);
    ZipfSampler zipf(keys, skew);
    std::vector<int64_t> label = Permutation(keys, rng);
    KeyTrace out(refs);
    int64_t next_scan_key = static_cast<int64_t>(keys);  // scan keys are never reused
    while (out.size() < refs) {
        if (out.size() % scan_every == scan_every - 1) {
            for (uint64_t s = 0; s < scan_len && out.size() < refs; ++s) out.Add(next_scan_key++);
            continue;
        }
        out.Add(label[zipf(rng)]);
    }
    return out.Take();
}

std::vector<TraceRequest> RequestTrace(const RequestMix& mix, uint64_t requests, uint64_t seed) {
    std::mt19937_64 rng(seed);
    constexpr int64_t kBlockTokens = 512;  // ReplayOptions::block_tokens
    int64_t next_block = 1;
    std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(mix.system_prompts));
    for (auto& p : prompts) {
        int n = Between(rng, mix.prompt_blocks_min, mix.prompt_blocks_max);
        for (int i = 0; i < n; ++i) p.push_back(next_block++);
    }
    ZipfSampler prompt_pick(prompts.size(), 1.0);

    struct Pending {
        double at_s;
        std::vector<int64_t> context;  // full blocks the next turn re-reads
        int depth;
    };
    // Continuations waiting for their time, earliest first (a small binary heap).
    auto later = [](const Pending& a, const Pending& b) { return a.at_s > b.at_s; };
    std::vector<Pending> waiting;
    std::vector<TraceRequest> out;
    out.reserve(requests);
    double now_s = 0;
    auto emit = [&](std::vector<int64_t> context, int fresh, int depth) {
        TraceRequest r;
        r.timestamp_ms = static_cast<int64_t>(now_s * 1000.0);
        r.blocks = context;
        for (int i = 0; i < fresh; ++i) r.blocks.push_back(next_block++);
        // The last block is partial: its tokens are continued under a new block id next turn.
        int64_t tokens = static_cast<int64_t>(r.blocks.size()) * kBlockTokens -
                         1 - static_cast<int64_t>(Below(rng, kBlockTokens - 1));
        r.input_length = tokens;
        std::vector<int64_t> full(r.blocks.begin(), r.blocks.end() - 1);
        out.push_back(std::move(r));
        double p = std::min(0.9, mix.p_continue + 0.05 * depth);
        if (Uniform01(rng) < p && static_cast<int>(full.size()) + mix.turn_blocks_max + 1 <=
                                      mix.max_context_blocks) {
            double gap = mix.gap_median_s * std::exp(mix.gap_sigma * Normal(rng));
            waiting.push_back({now_s + gap, std::move(full), depth + 1});
            std::push_heap(waiting.begin(), waiting.end(), later);
        }
    };
    while (out.size() < requests) {
        double arrival = now_s - std::log(std::max(Uniform01(rng), 1e-12)) / mix.arrivals_per_s;
        if (!waiting.empty() && waiting.front().at_s <= arrival) {
            std::pop_heap(waiting.begin(), waiting.end(), later);
            Pending next = std::move(waiting.back());
            waiting.pop_back();
            now_s = std::max(now_s, next.at_s);
            emit(std::move(next.context), Between(rng, mix.turn_blocks_min, mix.turn_blocks_max) + 1,
                 next.depth);
            continue;
        }
        now_s = arrival;
        std::vector<int64_t> context;
        if (Uniform01(rng) >= mix.p_no_prompt) context = prompts[prompt_pick(rng)];
        emit(std::move(context), Between(rng, mix.first_blocks_min, mix.first_blocks_max) + 1, 0);
    }
    return out;
}

std::vector<Workload> SyntheticWorkloads(uint64_t seed, double scale) {
    auto n = [&](double v) { return static_cast<uint64_t>(std::max(1.0, v * scale)); };
    const uint64_t keys = n(20000);  // 0.05 of it = 1000 objects of DRAM: 10x-20x below keys
    const uint64_t refs = n(120000);
    std::vector<Workload> w;
    for (double skew : {0.6, 0.9, 1.2}) {
        char name[32];
        std::snprintf(name, sizeof(name), "zipf-%.1f", skew);
        w.push_back({name, "Zipf popularity, key space 20x the 0.05 DRAM: frequency vs one-off recency",
                     ZipfTrace(keys, refs, skew, seed + static_cast<uint64_t>(skew * 10))});
    }
    w.push_back({"loop", "cyclic scan of the whole key space, 6 passes: LRU thrashes, keeping a part wins",
                 LoopTrace(keys, 6)});
    w.push_back({"shifting-hot",
                 "80% of reads on a hot set of 5% of the keys that moves every 1/8 of the trace: stale frequency",
                 ShiftingHotTrace(keys, refs, n(1000), n(15000), seed + 21)});
    w.push_back({"scan-zipf",
                 "Zipf 0.9 with one-off scans (5% of the keys) every 8/120 of the trace: scan pollution",
                 ScanZipfTrace(keys, refs, 0.9, n(1000), n(8000), seed + 22)});
    RequestMix chat;  // many continuations, short turns
    chat.p_continue = 0.6;
    chat.first_blocks_max = 12;
    chat.turn_blocks_max = 4;
    w.push_back({"req-chat",
                 "Mooncake-shaped: long sessions, short turns, shared system prompts",
                 RequestTrace(chat, n(6000), seed + 31)});
    RequestMix prompt;  // mostly first turns sharing system prompts
    prompt.system_prompts = 64;
    prompt.prompt_blocks_max = 24;
    prompt.p_continue = 0.2;
    prompt.first_blocks_max = 8;
    w.push_back({"req-prompt",
                 "Mooncake-shaped: mostly first turns behind 64 shared system prompts",
                 RequestTrace(prompt, n(8000), seed + 32)});
    RequestMix longdoc;  // long documents, few continuations, big one-off tails
    longdoc.p_continue = 0.3;
    longdoc.first_blocks_min = 16;
    longdoc.first_blocks_max = 64;
    longdoc.turn_blocks_max = 8;
    longdoc.gap_median_s = 300;
    longdoc.gap_sigma = 1.5;
    longdoc.arrivals_per_s = 1;
    w.push_back({"req-longdoc",
                 "Mooncake-shaped: long documents, few continuations after long-tailed gaps",
                 RequestTrace(longdoc, n(3000), seed + 33)});
    return w;
}

}  // namespace mooncake::replay
