#include "bench/replay/run_policy.h"

#include "bench/replay/belady.h"
#include "core/disk/format.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace mooncake::replay {
namespace {

// promotion-adaptive: promotion_gate=adaptive (core/master/adaptive_policy.h).
// promotion-compare / promotion-no-compare: the promotion gate fixed (promotion_gate=fixed)
// with promotion_compare_victims on / off, as the operator knobs allow; hit-density-no-compare
// likewise with eviction_policy=hit_density. promotion-density: promotion with
// eviction_policy=adaptive (the gate's density arm, bench/replay/POLICIES.md).
const std::vector<std::string> kPolicyList = {
    "dram-only",     "no-promotion",           "promotion",
    "promotion-compare", "promotion-no-compare", "promotion-adaptive", "reference-lru",
    "reference-lru-no-promotion", "hit-density", "hit-density-no-compare",
    "promotion-density", "belady"};

// A multiple of 1 MiB whose data region holds `data` bytes in `objects` objects: the store
// takes 1 MiB of header and a journal of capacity/8 (disk_format::kJournalShare; 2 MiB..2 GiB),
// and its index (a quarter of the journal, about 100 B per object) must hold every object too,
// which binds for objects under ~3 KiB (below the cap: the replay's traces are far smaller).
uint64_t DiskCapacityFor(uint64_t data, uint64_t objects) {
    const uint64_t mib = uint64_t{1} << 20;
    const uint64_t share = disk_format::kJournalShare;
    uint64_t journal = std::clamp<uint64_t>(data / (share - 1) + mib, 2 * mib,
                                            disk_format::kMaxJournalBytes);
    uint64_t total = std::max(data + journal + 2 * mib, objects * 100 * 4 * share);
    return std::max<uint64_t>(4 * mib, (total + mib - 1) / mib * mib);
}

}  // namespace

const std::vector<std::string>& PolicyNames() { return kPolicyList; }

Result<PolicyRun> RunPolicy(const std::string& policy, const std::vector<TraceRequest>& trace,
                            const RunSettings& settings) {
    const uint64_t capacity_objects = settings.capacity_objects;
    const uint64_t object_size = settings.object_size;
    const DiskSetup& disk = settings.disk;
    const TtftModel& ttft = settings.ttft;
    PolicyRun run;
    run.policy = policy;
    if (policy == "belady") {
        RequestMeter meter(ttft);
        run.counts = RunBelady(trace, capacity_objects, &meter);
        run.requests = meter.Figures();
        return run;
    }
    if (policy == "reference-lru" || policy == "reference-lru-no-promotion") {
        ReferenceLru sim(capacity_objects * object_size, policy == "reference-lru",
                         settings.threshold, settings.window);
        RequestMeter meter(ttft);
        std::vector<BlockSource> sources;
        for (const TraceRequest& req : trace) {
            sources.clear();
            for (size_t i = 0; i < req.blocks.size(); ++i) {
                const uint64_t bytes = settings.partial_sizes
                                           ? BlockBytes(req, i, ttft.block_tokens, object_size)
                                           : object_size;
                sources.push_back(sim.Access(req.blocks[i], bytes));
            }
            meter.Add(req, sources);
        }
        run.counts = sim.counts();
        run.requests = meter.Figures();
        return run;
    }
    ReplayOptions options;
    options.capacity_bytes = capacity_objects * object_size;
    options.object_size = object_size;
    options.dump_metrics = settings.dump_metrics;
    options.put_hints = settings.put_hints;
    options.partial_sizes = settings.partial_sizes;
    options.block_tokens = ttft.block_tokens;
    options.ttft = ttft;
    options.hint_accuracy = settings.hint_accuracy;
    options.hint_window_capacities = settings.hint_window_capacities;
    options.hint_per_batch = settings.hint_per_batch;
    options.knobs = {{"promotion_admission_threshold", std::to_string(settings.threshold)},
                     {"promotion_sketch_window", std::to_string(settings.window)}};
    if (policy == "dram-only") {
        options.knobs.push_back({"enable_offload", "false"});
        options.knobs.push_back({"promotion_on_hit", "false"});
    } else if (policy == "no-promotion") {
        options.knobs.push_back({"enable_offload", "true"});
        options.knobs.push_back({"offload_on_evict", "true"});
        options.knobs.push_back({"promotion_on_hit", "false"});
    } else if (policy == "promotion") {
        options.knobs.push_back({"enable_offload", "true"});
        options.knobs.push_back({"offload_on_evict", "true"});
        options.knobs.push_back({"promotion_on_hit", "true"});
    } else if (policy == "promotion-compare" || policy == "promotion-no-compare") {
        options.knobs.push_back({"enable_offload", "true"});
        options.knobs.push_back({"offload_on_evict", "true"});
        options.knobs.push_back({"promotion_on_hit", "true"});
        options.knobs.push_back({"promotion_gate", "fixed"});
        options.knobs.push_back(
            {"promotion_compare_victims", policy == "promotion-compare" ? "true" : "false"});
    } else if (policy == "promotion-adaptive") {
        options.knobs.push_back({"enable_offload", "true"});
        options.knobs.push_back({"offload_on_evict", "true"});
        options.knobs.push_back({"promotion_on_hit", "true"});
        options.knobs.push_back({"promotion_gate", "adaptive"});
    } else if (policy == "promotion-density") {
        options.knobs.push_back({"enable_offload", "true"});
        options.knobs.push_back({"offload_on_evict", "true"});
        options.knobs.push_back({"promotion_on_hit", "true"});
        options.knobs.push_back({"promotion_gate", "adaptive"});
        options.knobs.push_back({"eviction_policy", "adaptive"});
    } else if (policy == "hit-density-no-compare") {
        options.knobs.push_back({"enable_offload", "true"});
        options.knobs.push_back({"offload_on_evict", "true"});
        options.knobs.push_back({"promotion_on_hit", "true"});
        options.knobs.push_back({"eviction_policy", "hit_density"});
        options.knobs.push_back({"promotion_gate", "fixed"});
        options.knobs.push_back({"promotion_compare_victims", "false"});
    } else if (policy == "hit-density") {
        // promotion, with eviction by expected hit density (bench/replay/POLICIES.md)
        options.knobs.push_back({"enable_offload", "true"});
        options.knobs.push_back({"offload_on_evict", "true"});
        options.knobs.push_back({"promotion_on_hit", "true"});
        options.knobs.push_back({"eviction_policy", "hit_density"});
    } else {
        return Status::InvalidArgument("unknown policy '" + policy + "'");
    }
    options.knobs.insert(options.knobs.end(), settings.extra.begin(), settings.extra.end());
    std::string temp_dir;
    if (disk.real && policy != "dram-only") {
        if (disk.dir.empty()) {
            const char* tmp = std::getenv("TMPDIR");
            std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/mooncake-replay-XXXXXX";
            std::vector<char> buf(templ.begin(), templ.end());
            buf.push_back('\0');
            if (::mkdtemp(buf.data()) == nullptr) {
                return Status::IoError("mkdtemp " + templ + ": " + std::strerror(errno));
            }
            temp_dir = buf.data();
            options.disk_dir = temp_dir + "/disk";
        } else {
            options.disk_dir = disk.dir;
        }
        options.disk_capacity = DiskCapacityFor(
            static_cast<uint64_t>(disk.fraction * static_cast<double>(disk.distinct_bytes)),
            static_cast<uint64_t>(disk.fraction * static_cast<double>(disk.distinct_bytes) /
                                  static_cast<double>(object_size)));
    }
    Result<ReplayResult> result = RunStoreReplay(trace, options);
    if (!temp_dir.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(temp_dir, ec);
    }
    if (!result.ok()) return result.status();
    run.counts = result->counts;
    run.mean_dram_fill = result->mean_dram_fill;
    run.disk = result->disk;
    run.requests = result->requests;
    return run;
}

}  // namespace mooncake::replay
