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
#include "core/status.h"

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

Result<PolicyRun> RunPolicy(const std::string& policy, const std::vector<TraceRequest>& trace,
                            uint64_t capacity_objects, uint64_t object_size, uint32_t threshold,
                            uint64_t window,
                            const std::vector<std::pair<std::string, std::string>>& extra,
                            bool dump_metrics, bool put_hints, const DiskSetup& disk,
                            const TtftModel& ttft = {});

}  // namespace mooncake::replay
