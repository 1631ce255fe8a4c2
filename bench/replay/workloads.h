// Seeded synthetic workloads for the policy suite (`mooncake-replay --suite`). Every generator
// is deterministic in its seed (std::mt19937_64 and hand-written draws, so the same trace comes
// out on every platform), and each stresses one thing a promotion/eviction policy can get wrong:
//
//   zipf-S        Zipf popularity, skew S, over a key space 20x the 0.05 DRAM size (10x at
//                 0.1): frequency matters, recency alone keeps too many one-offs.
//   loop          a cyclic scan over a key range larger than DRAM: LRU (and any promotion
//                 that displaces the resident half) hits nothing; keeping a fixed part wins.
//   shifting-hot  80% of reads go to a small hot set that moves every few DRAM-lifetimes:
//                 frequency history turns stale; a policy must let recency win again.
//   scan-zipf     Zipf 0.9 with bursts of one-off sequential keys (each burst about the DRAM
//                 size): scans must not flush the hot keys.
//   req-*         request-shaped like Mooncake's traces: a request reads its blocks in order;
//                 many requests start with one of a few shared system-prompt prefixes; a
//                 session's next turn re-reads its previous turn's full blocks after a
//                 long-tailed (log-normal) gap and appends new ones; the last partial block
//                 of a request is rarely reused (its tokens continue in a new block id).
//                 Mixes: req-chat (many continuations, short turns), req-prompt (mostly
//                 first turns sharing system prompts), req-longdoc (long documents, few
//                 continuations, big one-off tails).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/replay/trace_reader.h"

namespace mooncake::replay {

struct Workload {
    std::string name;
    std::string stresses;  // one line for the table
    std::vector<TraceRequest> trace;
};

// The suite's synthetic workloads, each generated from `seed`. `scale` multiplies the key
// space and trace length (1.0: 20k keys, 120k references per key-level workload; the suite
// runs 0.5 by default to fit its CPU budget).
std::vector<Workload> SyntheticWorkloads(uint64_t seed, double scale = 1.0);

// Single generators (exposed for tests).
std::vector<TraceRequest> ZipfTrace(uint64_t keys, uint64_t refs, double skew, uint64_t seed);
std::vector<TraceRequest> LoopTrace(uint64_t keys, uint64_t passes);
std::vector<TraceRequest> ShiftingHotTrace(uint64_t keys, uint64_t refs, uint64_t hot,
                                           uint64_t shift_every, uint64_t seed);
std::vector<TraceRequest> ScanZipfTrace(uint64_t keys, uint64_t refs, double skew,
                                        uint64_t scan_len, uint64_t scan_every, uint64_t seed);

struct RequestMix {
    int system_prompts = 16;        // distinct shared prefixes (Zipf 1.0 popularity)
    int prompt_blocks_min = 2, prompt_blocks_max = 12;
    double p_no_prompt = 0.1;       // first turns without a shared prefix
    int first_blocks_min = 1, first_blocks_max = 24;  // user blocks of a first turn
    int turn_blocks_min = 1, turn_blocks_max = 6;     // new blocks of a continuation
    double p_continue = 0.5;        // a turn is followed by another (grows with depth)
    double gap_median_s = 120;      // log-normal gap between a session's turns
    double gap_sigma = 1.0;
    double arrivals_per_s = 4;      // requests per second
    int max_context_blocks = 200;   // a session ends when its context would exceed this
};
std::vector<TraceRequest> RequestTrace(const RequestMix& mix, uint64_t requests, uint64_t seed);

}  // namespace mooncake::replay
