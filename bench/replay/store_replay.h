// StoreReplay: drives the real MasterStore (the code the daemon runs) with a trace, on a
// ManualClock set from the trace's timestamps. One node holds MEMORY (capacity from the
// DRAM fraction) and a LOCAL_DISK; its offload and promotion work is done at once after every
// reference, so promotion is "instant" as in the reference.
//
// The node is the real NodeWorker (core/node/node_worker.h, what the daemon's node runs) over an
// in-process LocalMasterLink, driven synchronously: its heartbeat before every request, its
// offloads and promotions after every reference.
//
// LOCAL_DISK is either bookkeeping only (unbounded, no bytes: the default) or, with
// ReplayOptions::disk_dir set (`mooncake-replay --real-disk`), the real core/disk DiskStore
// (libaio + O_DIRECT, checksums, its own LRU eviction) in that directory, every read checked
// against the bytes written; a Get served from LOCAL_DISK reads the bytes (foreground).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/replay/reference_lru.h"
#include "bench/replay/request_metrics.h"
#include "bench/replay/trace_reader.h"
#include "core/base/status.h"

namespace mooncake::replay {

struct ReplayOptions {
    uint64_t capacity_bytes = 0;
    uint64_t object_size = 65536;
    // Knob settings applied on top of the policy's (name, value).
    std::vector<std::pair<std::string, std::string>> knobs;
    bool dump_metrics = false;  // the store's Prometheus text to stderr at the end
    // Pass each Put a PutHint as an engine would (position, request length, prefix hit).
    // Only eviction_policy=hit_density reads those. Its last_partial is not the trace's: it
    // is what the daemon infers from the request's put batch (below), given either way.
    bool put_hints = true;
    int64_t block_tokens = 512;
    // A request's last block, when input_length % block_tokens != 0, is an object of its
    // share of object_size (BlockBytes), as LMCache stores its last chunk; the request's
    // missed blocks are its put batch, and the core's rule (core/master/put_hint.h
    // BatchShape) tells the store when its last is a partial tail, as the daemon does.
    // false: every block is object_size (the replay before issue 37's partial tails).
    bool partial_sizes = true;
    // Non-empty: LOCAL_DISK is a real DiskStore in this directory (created; must be empty or
    // an earlier replay's store) of disk_capacity bytes (a multiple of 1 MiB, >= 4 MiB).
    std::string disk_dir;
    uint64_t disk_capacity = 0;
    int disk_queue_depth = 32;
    TtftModel ttft;  // the request-level figures' cost model
    // Retention hints derived from the trace's future, carried as Mooncake's soft pin (see
    // RetentionHints in store_replay.cc). < 0: no hints. Else the share of hints that are true.
    double hint_accuracy = -1;
    // A block is "reused soon" when its next reference comes within this many MEMORY
    // capacities' worth of references.
    double hint_window_capacities = 4;
    // true: one hint per request's put batch, as an engine's batch_put carries one
    // ReplicateConfig for all its blocks (drawn at the batch's first block and given to all of
    // it); false: each block's own hint, drawn on its own.
    bool hint_per_batch = false;
};

// What the real disk did (all zero without disk_dir).
struct DiskFigures {
    uint64_t capacity = 0;          // data region
    uint64_t bytes_written = 0, writes = 0;
    uint64_t bytes_read = 0, reads = 0;  // Get hits on LOCAL_DISK and promotion sources
    uint64_t evictions = 0;         // dropped by the disk's own LRU (reported to the master)
    uint64_t corruptions = 0;       // checksum failures (must be 0)
    uint64_t content_mismatches = 0;  // bytes read back differ from what was written (must be 0)
    uint64_t read_failures = 0;     // a Get's disk read failed; counted as a miss
    double seconds = 0;             // wall time of the replay
};

struct ReplayResult {
    SimCounts counts;
    double mean_dram_fill = 0;  // used / capacity, sampled after every request once full
    DiskFigures disk;
    RequestFigures requests;
};

Result<ReplayResult> RunStoreReplay(const std::vector<TraceRequest>& trace,
                                    const ReplayOptions& options);

}  // namespace mooncake::replay
