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

Result<std::vector<TraceRequest>> ReadTrace(const std::string& path);
// One line; exposed for tests.
Result<TraceRequest> ParseTraceLine(std::string_view line);

}  // namespace mooncake::replay
