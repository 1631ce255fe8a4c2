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
//
// Prefetch on exist (--prefetch-gap-ms G, issue 37; Mooncake RFC #4271): each request first
// checks its blocks with BatchExists (prefetch on or off, --prefetch), waits G ms (the engine's
// probe -> read window), then reads them all with one BatchGetInto, as an engine's connector
// does. Just before the check the blocks' tiers are looked up with Stat (inspection, not an
// access), so a read is known to be "would-be LOCAL_DISK" (on disk only when checked) and
// whether it found MEMORY when read. Without the flag, a request's blocks are read one by one
// (GetInto), as before.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/replay/request_metrics.h"
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
    double prefetch_gap_ms = -1;  // < 0: no BatchExists phase (blocks read one by one)
    bool prefetch = true;         // the BatchExists phase's prefetch flag
    TtftModel ttft;               // modeled TTFT from the tiers the reads were served from
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
    // Per request, from the tiers actually served (request_metrics.h).
    RequestFigures request_figures;
    // The BatchExists phase (prefetch_gap_ms >= 0): reads of blocks that were on LOCAL_DISK
    // only when checked, and of those the ones served from MEMORY.
    uint64_t would_be_disk = 0, would_be_disk_found_memory = 0;
    Quantiles exists;  // BatchExists round trip
};

Result<TimedResult> RunTimedReplay(const std::vector<TraceRequest>& trace,
                                   const TimedOptions& options);

void PrintTimedResult(const TimedResult& r, const TimedOptions& options, double mem_fraction,
                      bool json);

}  // namespace mooncake::replay
