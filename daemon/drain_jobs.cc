#include "daemon/drain_jobs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>

#include "core/master/master_store.h"
#include "net/data_transport.h"
#include "spdlog/spdlog.h"

namespace mooncake {

struct DrainJobs::Job {
    Mutex mu;
    JobView view MC_GUARDED_BY(mu);
    std::vector<NodeId> nodes;       // the draining nodes, as `view.segments`
    std::vector<std::string> names;  // their names (set at Create, then read-only)
    std::vector<NodeId> targets;     // empty: anywhere
    std::atomic<bool> cancelled{false};
    std::atomic<bool> ended{false};  // Run returned: its thread may be joined
    std::thread thread;
};

namespace {

// Between passes that left something busy (an offload reading a copy, a put placed there
// just before the drain began): waited for up to the put timeout (a put never ended is
// revoked by then) plus this margin.
constexpr auto kBusyPause = std::chrono::milliseconds(100);
constexpr auto kBusyMargin = std::chrono::seconds(10);
// Finished jobs kept for Query; older ones are forgotten.
constexpr size_t kFinishedKept = 64;

bool Active(DrainJobs::JobStatus s) {
    return s == DrainJobs::JobStatus::kCreated || s == DrainJobs::JobStatus::kPlanning ||
           s == DrainJobs::JobStatus::kRunning;
}

int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A random (version 4) UUID, as Mooncake names its jobs.
std::string NewJobId() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    uint64_t hi = rng();
    uint64_t lo = rng();
    hi = (hi & ~0xF000ULL) | 0x4000ULL;                  // version 4
    lo = (lo & ~(0xC000ULL << 48)) | (0x8000ULL << 48);  // variant 10
    char out[37];
    std::snprintf(out, sizeof(out), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                  static_cast<unsigned>(lo >> 48),
                  static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
    return out;
}

const NodeInfo* ByName(const std::vector<NodeInfo>& nodes, const std::string& name) {
    for (const NodeInfo& n : nodes) {
        if (n.spec.name == name) return &n;
    }
    return nullptr;
}

}  // namespace

std::string_view DrainJobs::JobStatusName(JobStatus status) {
    switch (status) {
        case JobStatus::kCreated:
            return "CREATED";
        case JobStatus::kPlanning:
            return "PLANNING";
        case JobStatus::kRunning:
            return "RUNNING";
        case JobStatus::kSucceeded:
            return "SUCCEEDED";
        case JobStatus::kFailed:
            return "FAILED";
        case JobStatus::kCanceled:
            return "CANCELED";
    }
    return "UNKNOWN_JOB_STATUS";
}

DrainJobs::DrainJobs(MasterStore& store, const std::string& auth_token) : store_(store) {
    TcpTransportOptions tcp;
    tcp.auth_token = auth_token;
    transport_ = NewTcpTransport(tcp);
}

DrainJobs::~DrainJobs() {
    std::map<std::string, std::shared_ptr<Job>> jobs;
    {
        MutexLock lock(mu_);
        jobs = jobs_;
    }
    for (auto& [id, job] : jobs) job->cancelled.store(true);
    for (auto& [id, job] : jobs) {
        if (job->thread.joinable()) job->thread.join();
    }
}

Result<std::string> DrainJobs::Create(const Request& request) {
    if (request.segments.empty()) {
        return Status::InvalidArgument("a drain job needs \"segments\": the nodes to drain");
    }
    if (request.max_concurrency < 1 || request.max_concurrency > 64) {
        return Status::InvalidArgument("max_concurrency must be 1..64");
    }
    const std::vector<NodeInfo> nodes = store_.Nodes();
    auto job = std::make_shared<Job>();
    std::set<std::string> seen;
    for (const std::string& name : request.segments) {
        const NodeInfo* n = ByName(nodes, name);
        if (n == nullptr) return Status::NotFound("no live node is named " + name);
        if (!seen.insert(name).second) {
            return Status::InvalidArgument("segment " + name + " is named twice");
        }
        job->nodes.push_back(n->id);
        job->names.push_back(name);
    }
    for (const std::string& name : request.target_segments) {
        const NodeInfo* n = ByName(nodes, name);
        if (n == nullptr) return Status::NotFound("no live node is named " + name);
        if (seen.count(name) != 0 || n->segment_state != SegmentState::kOk) {
            return Status::InvalidArgument("target segment " + name + " is draining");
        }
        job->targets.push_back(n->id);
    }
    MutexLock lock(mu_);
    ReapLocked();
    for (auto& [id, other] : jobs_) {
        MutexLock job_lock(other->mu);
        if (!Active(other->view.status)) continue;
        for (NodeId node : job->nodes) {
            if (std::find(other->nodes.begin(), other->nodes.end(), node) != other->nodes.end()) {
                return Status::InvalidArgument("a segment is drained by job " + id + " already");
            }
        }
    }
    for (size_t i = 0; i < job->nodes.size(); ++i) {
        if (Status st = store_.SetSegmentState(job->nodes[i], SegmentState::kDraining); !st.ok()) {
            for (size_t j = 0; j < i; ++j) {  // back as they were (DRAINED by an earlier job)
                (void)store_.SetSegmentState(job->nodes[j],
                                             ByName(nodes, request.segments[j])->segment_state);
            }
            return Status::NotFound(st.message());  // it left meanwhile
        }
    }
    const std::string id = NewJobId();
    {
        MutexLock job_lock(job->mu);
        job->view.id = id;
        job->view.created_at_ms = job->view.updated_at_ms = NowMs();
        job->view.segments = request.segments;
    }
    jobs_[id] = job;
    spdlog::info("drain job {}: draining {} segment(s) ({})", id, request.segments.size(),
                 request.segments.front());
    job->thread = std::thread([this, job] { Run(*job); });
    return id;
}

Result<DrainJobs::JobView> DrainJobs::Query(const std::string& id) {
    MutexLock lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return Status::NotFound("no drain job " + id);
    MutexLock job_lock(it->second->mu);
    return it->second->view;
}

Result<DrainJobs::JobStatus> DrainJobs::Cancel(const std::string& id) {
    MutexLock lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return Status::NotFound("no drain job " + id);
    Job& job = *it->second;
    job.cancelled.store(true);  // Run stops after the unit it is moving
    // Nodes another job drains now stay as that job has them.
    std::vector<NodeId> owned;
    for (auto& [other_id, other] : jobs_) {
        if (other_id == id) continue;
        MutexLock other_lock(other->mu);
        if (Active(other->view.status)) {
            owned.insert(owned.end(), other->nodes.begin(), other->nodes.end());
        }
    }
    MutexLock job_lock(job.mu);
    if (job.view.status == JobStatus::kFailed || job.view.status == JobStatus::kCanceled) {
        return job.view.status;  // its segments were given back when it ended
    }
    for (NodeId node : job.nodes) {
        if (std::find(owned.begin(), owned.end(), node) == owned.end()) {
            (void)store_.SetSegmentState(node, SegmentState::kOk);
        }
    }
    job.view.status = JobStatus::kCanceled;
    job.view.message = "cancelled: the segments take new data again";
    job.view.updated_at_ms = NowMs();
    spdlog::info("drain job {}: cancelled", id);
    return job.view.status;
}

void DrainJobs::ReapLocked() {
    // Forgettable: FAILED or CANCELED (a SUCCEEDED job is kept: its cancel puts its nodes
    // back in service), the least recently updated first.
    std::vector<std::pair<int64_t, std::string>> forgettable;
    for (auto& [id, job] : jobs_) {
        if (!job->ended.load()) continue;
        if (job->thread.joinable()) job->thread.join();
        MutexLock job_lock(job->mu);
        if (job->view.status == JobStatus::kFailed || job->view.status == JobStatus::kCanceled) {
            forgettable.emplace_back(job->view.updated_at_ms, id);
        }
    }
    if (forgettable.size() <= kFinishedKept) return;
    std::sort(forgettable.begin(), forgettable.end());
    for (size_t i = 0; i + kFinishedKept < forgettable.size(); ++i) {
        jobs_.erase(forgettable[i].second);
    }
}

Result<SegmentState> DrainJobs::SegmentStatus(const std::string& name) const {
    const std::vector<NodeInfo> nodes = store_.Nodes();
    const NodeInfo* n = ByName(nodes, name);
    if (n == nullptr) return Status::NotFound("no live node is named " + name);
    return n->segment_state;
}

void DrainJobs::Run(Job& job) {
    struct MarkEnded {
        Job& job;
        ~MarkEnded() { job.ended.store(true); }
    } mark_ended{job};
    {
        MutexLock lock(job.mu);
        if (job.view.status != JobStatus::kCreated) return;  // cancelled before it began
        job.view.status = JobStatus::kRunning;
        job.view.updated_at_ms = NowMs();
    }
    std::vector<std::string> data_addresses;
    for (NodeId node : job.nodes) {
        std::optional<NodeSpec> spec = store_.NodeSpecOf(node);
        data_addresses.push_back(spec ? spec->data_address : "");
    }
    // Done only once a pass finds nothing on the nodes and no DRAM allocated there (a put
    // placed just before the drain began may still be writing: waited for, as blocked).
    bool drained = false;
    std::string left_node;  // a node that left mid-drain (its copies went with it)
    const auto give_up = std::chrono::steady_clock::now() +
                         std::chrono::seconds(store_.config().put_timeout_sec()) + kBusyMargin;
    while (!drained && !job.cancelled.load()) {
        {
            MutexLock lock(job.mu);
            job.view.failed_units = job.view.blocked_units = 0;  // counted again each pass
        }
        bool left = false, moved = false;
        size_t listed = 0;
        for (size_t i = 0; i < job.nodes.size() && !job.cancelled.load(); ++i) {
            moved =
                Pass(job, job.nodes[i], data_addresses[i], job.targets, &left, &listed) || moved;
        }
        left_node = NodeGone(job);
        if (!left_node.empty()) break;
        if (listed == 0) {
            drained = NothingAllocated(job.nodes);
            if (drained) break;
            MutexLock lock(job.mu);
            ++job.view.blocked_units;  // DRAM still in use there: a put still writing
        } else if (left && !moved) {
            MutexLock lock(job.mu);
            if (job.view.blocked_units == 0) break;  // no room or errors: another pass is no use
        }
        if (std::chrono::steady_clock::now() > give_up) break;  // still busy: FAILED
        if (left || listed == 0) std::this_thread::sleep_for(kBusyPause);
    }
    MutexLock lock(job.mu);
    if (job.cancelled.load() || job.view.status != JobStatus::kRunning) return;  // Cancel's
    job.view.updated_at_ms = NowMs();
    if (drained) {
        for (NodeId node : job.nodes) (void)store_.SetSegmentState(node, SegmentState::kDrained);
        job.view.status = JobStatus::kSucceeded;
        job.view.message = "every MEMORY copy moved; the segments take no new data";
        spdlog::info("drain job {}: succeeded, {} unit(s), {} bytes moved", job.view.id,
                     job.view.succeeded_units, job.view.migrated_bytes);
        return;
    }
    for (NodeId node : job.nodes) (void)store_.SetSegmentState(node, SegmentState::kOk);
    job.view.status = JobStatus::kFailed;
    if (!left_node.empty()) {
        job.view.message = "node " + left_node +
                           " left during the drain: the copies not moved by then went with it";
        spdlog::warn("drain job {}: failed: {}", job.view.id, job.view.message);
        return;
    }
    const std::string last_error = job.view.message;
    job.view.message = std::to_string(job.view.failed_units + job.view.blocked_units) +
                       " MEMORY copies could not be moved" +
                       (last_error.empty() ? std::string(" (busy: offloads or puts in flight)")
                                           : " (last: " + last_error + ")") +
                       "; the segments take new data again";
    spdlog::warn("drain job {}: failed: {}", job.view.id, job.view.message);
}

std::string DrainJobs::NodeGone(const Job& job) const {
    for (size_t i = 0; i < job.nodes.size(); ++i) {
        if (!store_.NodeSpecOf(job.nodes[i])) return job.names[i];
    }
    return "";
}

bool DrainJobs::NothingAllocated(const std::vector<NodeId>& nodes) const {
    for (const NodeInfo& n : store_.Nodes()) {
        if (n.segment_used > 0 && std::find(nodes.begin(), nodes.end(), n.id) != nodes.end()) {
            return false;
        }
    }
    return true;
}

bool DrainJobs::Pass(Job& job, NodeId node, const std::string& data_address,
                     const std::vector<NodeId>& targets, bool* left, size_t* listed) {
    bool moved = false;
    std::vector<std::byte> bytes;
    const std::vector<DrainUnit> units = store_.DrainUnits(node);
    *listed += units.size();
    for (const DrainUnit& unit : units) {
        if (job.cancelled.load()) return moved;
        {
            MutexLock lock(job.mu);
            job.view.active_units = 1;
        }
        Status outcome = Status::Ok();
        bool copied = false;
        Result<DrainStep> step = store_.DrainStart(node, unit, targets);
        if (!step.ok()) {
            outcome = step.status();
        } else if (step->kind == DrainStep::kCopy) {
            std::optional<NodeSpec> target = store_.NodeSpecOf(step->target.node);
            bytes.resize(unit.size);
            outcome = transport_->Read(data_address, Tier::kMemory, unit.key, unit.generation,
                                       unit.offset, bytes);
            if (outcome.ok() && !target) outcome = Status::Unavailable("the target node left");
            if (outcome.ok()) {
                outcome = transport_->WriteMemory(target->data_address, unit.key, unit.generation,
                                                  step->target.offset, bytes);
            }
            copied = outcome.ok();
            Status ended = store_.DrainEnd(node, unit, *step, copied);
            if (copied && ended.Is(StatusCode::kBusy)) {
                // Copied, but the copy here stays while an offload reads it: a later pass
                // drops it (and counts the unit then).
                MutexLock lock(job.mu);
                job.view.migrated_bytes += unit.size;
            }
            if (copied && !ended.ok()) copied = false;
            // An object removed (or put again) meanwhile left nothing here to move; any other
            // answer (busy, the target left) leaves the copy here.
            if (outcome.ok() && !ended.Is(StatusCode::kNotFound)) outcome = ended;
        }
        MutexLock lock(job.mu);
        job.view.active_units = 0;
        job.view.updated_at_ms = NowMs();
        if (outcome.ok()) {
            ++job.view.succeeded_units;
            if (copied) job.view.migrated_bytes += unit.size;
            moved = true;
        } else if (outcome.Is(StatusCode::kBusy)) {
            ++job.view.blocked_units;
            job.view.message = outcome.message();  // why it waits (an offload, a reporting node)
            *left = true;
        } else {
            ++job.view.failed_units;
            job.view.message = outcome.message();  // the last error, for the operator
            *left = true;
        }
    }
    return moved;
}

}  // namespace mooncake
