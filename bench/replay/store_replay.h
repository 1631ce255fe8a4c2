// StoreReplay: drives the real MasterStore (the code the daemon runs) with a trace, on a
// ManualClock set from the trace's timestamps. One node holds MEMORY (capacity from the
// DRAM fraction) and an unbounded LOCAL_DISK; its offload and promotion work is done at once
// after every reference, so promotion is "instant" as in the reference.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/replay/reference_lru.h"
#include "bench/replay/trace_reader.h"
#include "core/status.h"

namespace mooncake::replay {

struct ReplayOptions {
    uint64_t capacity_bytes = 0;
    uint64_t object_size = 65536;
    // Knob settings applied on top of the policy's (name, value).
    std::vector<std::pair<std::string, std::string>> knobs;
    bool dump_metrics = false;  // the store's Prometheus text to stderr at the end
    // Pass each Put a PutHint as an engine would (position, request length, prefix hit,
    // last partial block of 512 tokens). Only eviction_policy=hit_density reads it.
    bool put_hints = true;
    int64_t block_tokens = 512;
};

struct ReplayResult {
    SimCounts counts;
    double mean_dram_fill = 0;  // used / capacity, sampled after every request once full
};

Result<ReplayResult> RunStoreReplay(const std::vector<TraceRequest>& trace,
                                    const ReplayOptions& options);

}  // namespace mooncake::replay
