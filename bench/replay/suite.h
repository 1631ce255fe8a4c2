// The policy suite (`mooncake-replay --suite`): every workload (workloads.h, the conversation
// trace, and any Mooncake-format trace given) x every policy x DRAM fraction 0.05/0.1/0.25,
// written as one table (suite.md + suite.tsv) and one gnuplot script/data for the plot.
//
// Regret of a policy = max(reference-lru, reference-lru-no-promotion) - its MEMORY hit ratio
// (positive: it lost to an exact LRU with or without instant promotion). Gap closed = (hit -
// reference-lru) / (belady - reference-lru).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"

namespace mooncake::replay {

struct SuiteOptions {
    std::vector<std::string> traces;  // Mooncake-format files, each one workload
    std::string out_dir;              // suite.md, suite.tsv, suite-plot.dat written here
    uint64_t seed = 18;
    double scale = 0.5;               // workloads.h: key space and length (CPU budget)
    int jobs = 1;                     // runs in parallel
    std::vector<std::string> policies;  // empty: the suite's default list
    std::vector<std::string> only;      // workload names to run (empty: all)
    // Knobs on top of every store policy's (--set; for experiments, not the published table).
    std::vector<std::pair<std::string, std::string>> extra;
    bool partial_sizes = true;  // RunSettings::partial_sizes (--no-partial-sizes)
    // >= 0: the store policies get retention hints of this accuracy (--hint-accuracy).
    double hint_accuracy = -1;
    bool hint_per_batch = false;  // RunSettings::hint_per_batch (--hint-per-batch)
    // Non-empty: write each workload as a Mooncake-format trace NAME.jsonl here and stop.
    std::string write_dir;
};

Status RunSuite(const SuiteOptions& options);

}  // namespace mooncake::replay
