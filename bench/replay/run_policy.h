// One replay of a trace under one named policy: the real store (store_replay.h) with the
// policy's knobs, or one of the yardsticks computed on the side (reference LRU, Belady).
// Shared by the single-trace command line and the suite (suite.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/replay/reference_lru.h"
#include "bench/replay/store_replay.h"
#include "bench/replay/trace_reader.h"
#include "core/base/status.h"

namespace mooncake::replay {

// Every policy name `--policy` takes (besides "all").
const std::vector<std::string>& PolicyNames();

struct PolicyRun {
    std::string policy;
    SimCounts counts;
    double mean_dram_fill = -1;  // store policies only
    DiskFigures disk;
    RequestFigures requests;
};

// Where --real-disk puts its store, and how big.
struct DiskSetup {
    bool real = false;
    std::string dir;  // "" = a fresh temporary directory per run
    double fraction = 1.0;
    uint64_t distinct_bytes = 0;
};

// How one policy run is set up, besides the policy.
struct RunSettings {
    uint64_t capacity_objects = 0;
    uint64_t object_size = 65536;
    uint32_t threshold = 2;  // promotion_admission_threshold (and the reference's)
    uint64_t window = 4096;  // promotion_sketch_window (and the reference's aging)
    // Knobs on top of the policy's, store policies only.
    std::vector<std::pair<std::string, std::string>> extra;
    bool dump_metrics = false;
    bool put_hints = true;  // ReplayOptions::put_hints
    bool partial_sizes = true;  // ReplayOptions::partial_sizes (and the reference's)
    DiskSetup disk;
    TtftModel ttft;
    double hint_accuracy = -1;  // ReplayOptions::hint_accuracy (store policies)
    double hint_window_capacities = 4;
    bool hint_per_batch = false;  // ReplayOptions::hint_per_batch
};

Result<PolicyRun> RunPolicy(const std::string& policy, const std::vector<TraceRequest>& trace,
                            const RunSettings& settings);

}  // namespace mooncake::replay
