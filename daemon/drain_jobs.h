// DrainJobs: Mooncake's drain jobs (its master's /api/v1/drain_jobs), served on the master's
// HTTP port (daemon/metrics_http.h). A job drains the DRAM segments of named nodes: they
// take no new data (SegmentState::kDraining) and every MEMORY copy on them moves to other
// nodes, so a node can be taken out of the cluster without taking hot data with it. The
// rules (what is a unit, where it goes, when a copy just goes) are the store's
// (MasterStore::DrainStart/DrainEnd, core/master/store_drain.cc); a job's thread moves the
// bytes: a read from the draining node's data channel, a write to the target's.
//
// A job runs in passes over what the nodes hold then, until a pass finds nothing left and
// no DRAM in use there (SUCCEEDED: the segments stay DRAINED, taking no new data, until the
// node leaves or the job is cancelled), or a pass moves nothing (FAILED: units left for want
// of room or for a transfer error; the segments take data again). Copies an offload is
// reading, and puts placed there just before the drain, are waited for (blocked_units), up
// to put_timeout_sec and 10 s. A node that leaves mid-drain ends its job FAILED. Cancel
// stops a running job and opens its segments to placement again (also after SUCCEEDED: the
// way back into service).
//
// What differs from Mooncake: the bytes pass through the master's process (its data
// connections), one unit at a time (max_concurrency is checked, 1..64, not used); jobs live
// in the master's memory (an HA failover forgets them and the new leader's segments are OK);
// LOCAL_DISK records are the node's own and stay on it.
//
// Thread-safety: every method from any thread. The destructor cancels and joins the jobs.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/master_types.h"
#include "core/base/mutex.h"
#include "core/base/status.h"

namespace mooncake {

class DataTransport;
class MasterStore;

class DrainJobs {
public:
    struct Request {
        std::vector<std::string> segments;         // node names (their DRAM segments)
        std::vector<std::string> target_segments;  // where copies may go; empty: anywhere
        uint32_t max_concurrency = 4;
    };
    // Mooncake's JobStatus, same numbers.
    enum class JobStatus { kCreated = 0, kPlanning, kRunning, kSucceeded, kFailed, kCanceled };
    static std::string_view JobStatusName(JobStatus status);  // "CREATED", ...

    struct JobView {
        std::string id;  // a UUID
        JobStatus status = JobStatus::kCreated;
        int64_t created_at_ms = 0;  // since the epoch
        int64_t updated_at_ms = 0;
        std::vector<std::string> segments;
        uint64_t succeeded_units = 0;  // copies moved, or gone from the node (another copy
                                       // existed, or the object was removed meanwhile)
        uint64_t failed_units = 0;     // left on the node in the last pass: no room, an error
        uint64_t blocked_units = 0;    // left in the last pass: the copy was a task's source
        uint64_t active_units = 0;     // being moved now
        uint64_t migrated_bytes = 0;
        std::string message;
    };

    DrainJobs(MasterStore& store, const std::string& auth_token);
    ~DrainJobs();
    DrainJobs(const DrainJobs&) = delete;
    DrainJobs& operator=(const DrainJobs&) = delete;

    // Starts a job. NotFound: a segment or target that is no live node. InvalidArgument: no
    // segments, a repeated one, a target drained too, a node drained by another job still
    // running, max_concurrency outside 1..64.
    Result<std::string> Create(const Request& request) MC_EXCLUDES(mu_);
    Result<JobView> Query(const std::string& id) MC_EXCLUDES(mu_);  // NotFound
    // Stops a job and opens its segments to placement again (those no other running job
    // drains); the job's status after: CANCELED, or FAILED / CANCELED if it had ended so
    // (its segments were given back then). NotFound.
    Result<JobStatus> Cancel(const std::string& id) MC_EXCLUDES(mu_);
    // A live node's segment state by its name; NotFound if none.
    Result<SegmentState> SegmentStatus(const std::string& name) const;

private:
    struct Job;
    void Run(Job& job);
    // One pass over a node's units (*listed += how many): true when it moved something;
    // *left set when a unit stays (no room, an error, busy).
    bool Pass(Job& job, NodeId node, const std::string& data_address,
              const std::vector<NodeId>& targets, bool* left, size_t* listed);
    bool NothingAllocated(const std::vector<NodeId>& nodes) const;  // no DRAM in use there
    std::string NodeGone(const Job& job) const;  // the name of a job node no longer live, or ""
    // Joins ended jobs' threads; forgets the least recently updated FAILED or CANCELED jobs
    // past the 64 kept.
    void ReapLocked() MC_REQUIRES(mu_);

    MasterStore& store_;
    std::unique_ptr<DataTransport> transport_;
    Mutex mu_;
    std::map<std::string, std::shared_ptr<Job>> jobs_ MC_GUARDED_BY(mu_);
};

}  // namespace mooncake
