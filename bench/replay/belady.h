// Belady's offline optimum for MEMORY: on a miss with MEMORY full, evict the object whose next
// reference is farthest in the future — or do not admit the missing one when its own next
// reference is farther still. An upper bound no online policy can beat, for reading the gap.
#pragma once

#include <vector>

#include "bench/replay/reference_lru.h"
#include "bench/replay/request_metrics.h"
#include "bench/replay/trace_reader.h"

namespace mooncake::replay {

// `meter` (optional) is given every request with where its blocks were found.
SimCounts RunBelady(const std::vector<TraceRequest>& trace, uint64_t capacity_objects,
                    RequestMeter* meter = nullptr);

}  // namespace mooncake::replay
