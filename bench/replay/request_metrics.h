// What an engine feels of a request, beside the per-block hit ratio: an engine reads a
// request's blocks in prefix order, reuses only the leading blocks the store has (any tier,
// ending at the first miss; attention is causal, so a block after a miss is recomputed even
// if the store holds it), and waits for all of them before its first token.
//
//   prefix_mem_hit_ratio       MEMORY blocks before the request's first non-MEMORY block,
//                              over all references (the per-block mem_hit_ratio without the
//                              holes: block 7 in DRAM behind block 6 on disk counts for
//                              mem_hit_ratio, not here)
//   requests_all_memory_ratio  of the requests that reuse at least one block, those whose
//                              every reused block came from MEMORY
//   ttft_ms_*                  modeled time to first token (TtftModel), mean/p50/p99 over
//                              every request
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bench/replay/trace_reader.h"

namespace mooncake::replay {

enum class BlockSource : uint8_t { kMemory, kDisk, kMiss };

// Modeled TTFT = the reused prefix loaded (MEMORY blocks at memory_gbps, LOCAL_DISK blocks at
// disk_gbps, one after another) + every token from the first miss on prefilled at
// prefill_tokens_per_s. Queueing and overlap of loading with compute are left out: the model
// ranks policies, it does not predict a deployment. The defaults are stated assumptions, not
// measurements made here:
//   kv_bytes_per_token 327,680: LLaMA-2-70B (80 layers x 8 KV heads x 128 dims x K and V x
//       2 bytes, fp16), the model of the Mooncake paper's (FAST '25) experiments;
//   block_tokens 512: the block of Mooncake's traces (one hash_id per 512 tokens);
//   memory_gbps 25: a host-to-GPU copy over PCIe 4.0 x16;
//   disk_gbps 4: one PCIe 4.0 NVMe drive's large sequential reads;
//   prefill_tokens_per_s 7,000: 2 x 70e9 FLOPs per token on 8 x A100 (312 TFLOPS fp16 each)
//       at ~40% utilisation.
// Per 512-token block: MEMORY 6.7 ms, LOCAL_DISK 42 ms, recompute 73 ms.
struct TtftModel {
    int64_t block_tokens = 512;
    double kv_bytes_per_token = 327680;
    double memory_gbps = 25;
    double disk_gbps = 4;
    double prefill_tokens_per_s = 7000;

    // Milliseconds for `tokens` tokens served from `source` (kMiss: recomputed).
    double Cost(BlockSource source, int64_t tokens) const;
};

struct RequestFigures {
    uint64_t requests = 0;
    uint64_t references = 0;
    uint64_t prefix_mem_blocks = 0;    // MEMORY blocks before each request's first non-MEMORY
    uint64_t reusing_requests = 0;     // requests whose first block the store had
    uint64_t all_memory_requests = 0;  // of those, every reused block from MEMORY
    double ttft_ms_mean = 0, ttft_ms_p50 = 0, ttft_ms_p99 = 0;

    double prefix_mem_hit_ratio() const;
    double requests_all_memory_ratio() const;
};

// Collects requests one at a time; Figures() summarises them.
class RequestMeter {
public:
    explicit RequestMeter(TtftModel model = {}) : model_(model) {}

    // `sources[i]` is where block i of `request` was found. Its size must be the request's
    // block count.
    void Add(const TraceRequest& request, std::span<const BlockSource> sources);
    RequestFigures Figures() const;

private:
    // Tokens of block `index` of `request`: block_tokens, but the last block holds only the
    // remainder of input_length when the trace gives it.
    int64_t BlockTokens(const TraceRequest& request, size_t index) const;

    TtftModel model_;
    RequestFigures sums_;
    std::vector<double> ttft_ms_;
};

}  // namespace mooncake::replay
