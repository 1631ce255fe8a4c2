// Timed replay: the trace's requests are issued at their timestamps (divided by a speed
// factor) against a RUNNING daemon through the client library (thrift/client.h), with real
// bytes. Each request reads its blocks in order (Client::GetInto, which reports the tier the
// bytes came from); a block that is not found is Put (a miss). Requests overlap when the trace
// has them overlap (a pool of workers, each waiting for its request's due time).
//
// Unlike the virtual-clock replay, promotion here takes real time: the daemon's node polls its
// tasks, reads the disk and copies the bytes while the trace moves on, so a block re-read soon
// after its trigger may still be served from LOCAL_DISK. The MEMORY hit ratio, Get latency per
// tier and the daemon's promotion delivery latency (trigger -> COMPLETE histogram, the delta
// over the run) show what that costs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/replay/trace_reader.h"
#include "core/base/status.h"

namespace mooncake::replay {

struct TimedOptions {
    std::string master;            // HOST:PORT of the running daemon
    double speed = 10.0;           // trace milliseconds per wall millisecond
    double duration_sec = 0;       // stop dispatching after this many wall seconds (0 = never)
    int workers = 8;
    uint64_t object_size = 16384;  // bytes per block
    std::string key_prefix = "replay/";
};

struct Quantiles {
    uint64_t count = 0;
    double p50 = 0, p99 = 0;  // milliseconds
};

struct TimedResult {
    uint64_t requests = 0;      // dispatched
    uint64_t references = 0;    // block reads attempted
    uint64_t mem_hits = 0, disk_hits = 0, misses = 0;
    uint64_t put_failures = 0;  // a miss whose Put was refused (counted as a miss)
    uint64_t errors = 0;        // reads that failed other than NotFound
    uint64_t content_mismatches = 0;
    Quantiles get_memory, get_disk, put, lag;  // lag: dispatch behind the due time
    double wall_seconds = 0;
    double trace_seconds = 0;  // trace time covered
    // The daemon's counters over the run.
    double promotion_queued = 0, promotion_completed = 0;
    Quantiles promotion;  // trigger -> COMPLETE, from mooncake_promotion_latency_seconds
};

Result<TimedResult> RunTimedReplay(const std::vector<TraceRequest>& trace,
                                   const TimedOptions& options);

void PrintTimedResult(const TimedResult& r, const TimedOptions& options, double mem_fraction,
                      bool json);

}  // namespace mooncake::replay
