// Reads Mooncake's KV-cache trace format: JSON lines with at least
//   {"timestamp": <ms>, "hash_ids": [<block id>, ...]}
// Other fields are ignored. Lines that are blank are skipped; a malformed line is an error
// naming its line number (a replay of half a trace would silently mislead).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace mooncake::replay {

struct TraceRequest {
    int64_t timestamp_ms = 0;
    int64_t input_length = -1;  // tokens; -1 when the line has none
    std::vector<int64_t> blocks;
};

// Tokens of block `index` of `request`: block_tokens, but the last block holds only the
// remainder of input_length when the trace gives it.
int64_t BlockTokens(const TraceRequest& request, size_t index, int64_t block_tokens);
// Bytes of that block's KV when a full block is `full_bytes`: proportional to its tokens, as
// an engine whose last chunk holds the remainder (LMCache) stores it.
uint64_t BlockBytes(const TraceRequest& request, size_t index, int64_t block_tokens,
                    uint64_t full_bytes);

Result<std::vector<TraceRequest>> ReadTrace(const std::string& path);
// One line; exposed for tests.
Result<TraceRequest> ParseTraceLine(std::string_view line);

}  // namespace mooncake::replay
