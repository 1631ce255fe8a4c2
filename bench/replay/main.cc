// mooncake-replay: replays a Mooncake KV-cache trace through the real core and reports how
// often blocks were served from MEMORY, from LOCAL_DISK, or missed.
//
//   mooncake-replay TRACE [--mem-fraction F] [--policy P] [--object-size BYTES]
//                   [--promotion_admission_threshold N] [--set KNOB=VALUE]... [--json]
//                   [--limit N] [--real-disk [--disk-dir DIR] [--disk-fraction F]]
//                   [--ttft-memory-gbps G] [--ttft-disk-gbps G] [--ttft-prefill-tps T]
//                   [--ttft-kv-bytes-per-token B]
//   mooncake-replay TRACE --timed --master HOST:PORT [--speed S] [--duration SEC]
//                   [--prefetch-gap-ms G [--prefetch on|off]] ...
//   mooncake-replay --suite [--suite-trace TRACE]... [--out DIR] [--jobs N] (suite.h)
//   mooncake-replay --two-tenant [--mem-fraction F] [--quotas on|off|both] [--seed N]
//                   [--two-tenant-keys N] [--json]   (tenant_replay.h)
//
// --real-disk: LOCAL_DISK is the real core/disk DiskStore (libaio + O_DIRECT, checksums,
// its own LRU eviction) in a temporary directory (or --disk-dir), sized --disk-fraction of the
// distinct blocks; the disk bytes written and read are reported.
// --timed: replays by the trace's timestamps (divided by --speed) through a running daemon
// with the client library (timed_replay.h).
//
// Besides the per-block ratios, every policy reports what an engine feels of a request
// (request_metrics.h): prefix_mem_hit_ratio, requests_all_memory_ratio and the modeled time
// to first token ttft_ms_mean/p50/p99 (its cost model's parameters are the --ttft-* flags).
//
// MEMORY capacity = F x distinct blocks x object size. Policies: dram-only, no-promotion
// (offload on evict), promotion, reference-lru (exact LRU + instant promotion after the same
// admission threshold, computed on the side), reference-lru-no-promotion, hit-density
// (promotion with eviction_policy=hit_density, see POLICIES.md), belady (the offline
// optimum for MEMORY), or all.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unordered_set>

#include "bench/replay/run_policy.h"
#include "bench/replay/suite.h"
#include "bench/replay/tenant_replay.h"
#include "bench/replay/timed_replay.h"
#include "bench/replay/trace_reader.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace mooncake::replay {
namespace {

double Ratio(uint64_t part, uint64_t whole) {
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace
}  // namespace mooncake::replay

int main(int argc, char** argv) {
    using namespace mooncake;
    using namespace mooncake::replay;
    // Logs (the node worker's registration, the disk store's) go to stderr: stdout is the
    // figures (--json).
    spdlog::set_default_logger(spdlog::stderr_logger_mt("mooncake-replay"));
    CLI::App app{"Replay a Mooncake KV-cache trace through the mooncake-tier core"};
    std::string trace_path;
    double mem_fraction = 0.1;
    std::string policy = "promotion";
    uint64_t object_size = 65536;
    int threshold = 2;
    std::vector<std::string> sets;
    bool json = false;
    bool dump_metrics = false;
    bool no_put_hints = false;
    app.add_option("trace", trace_path, "trace file (JSON lines with timestamp and hash_ids)");
    bool suite_mode = false;
    SuiteOptions suite;
    suite.out_dir = "bench/replay/results";
    app.add_flag("--suite", suite_mode,
                 "run the policy suite (synthetic workloads and --suite-trace files) x every "
                 "policy x DRAM fraction 0.05/0.1/0.25; writes suite.md, suite.tsv, "
                 "suite-plot.dat to --out");
    app.add_option("--suite-trace", suite.traces,
                   "--suite: a Mooncake-format trace to include as a workload (repeatable)");
    app.add_option("--out", suite.out_dir, "--suite: output directory");
    app.add_option("--jobs", suite.jobs, "--suite: runs in parallel")->check(CLI::Range(1, 64));
    app.add_option("--seed", suite.seed, "--suite: seed of the synthetic workloads");
    app.add_option("--suite-scale", suite.scale,
                   "--suite: multiplies the synthetic workloads' key space and length")
        ->check(CLI::Range(0.01, 100.0));
    app.add_option("--suite-policy", suite.policies,
                   "--suite: policies to run (repeatable; default: the suite's list)");
    app.add_option("--suite-only", suite.only, "--suite: workloads to run (repeatable)");
    app.add_option("--suite-hint-accuracy", suite.hint_accuracy,
                   "--suite: retention hints of this accuracy for the store policies")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--write-workloads", suite.write_dir,
                   "--suite: write the workloads as Mooncake-format traces DIR/NAME.jsonl, run "
                   "nothing");
    app.add_option("--mem-fraction", mem_fraction,
                   "MEMORY capacity as a fraction of the distinct blocks")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--policy", policy, "dram-only | no-promotion | promotion | reference-lru | "
                                       "reference-lru-no-promotion | hit-density | promotion-compare | "
                                       "promotion-no-compare | hit-density-no-compare | promotion-density | "
                                       "belady | all");
    app.add_option("--object-size", object_size, "bytes per block")->check(CLI::Range(1, 1 << 30));
    app.add_option("--promotion_admission_threshold", threshold,
                   "reads a LOCAL_DISK block needs before promotion (0 acts as 1)")
        ->check(CLI::Range(0, 255));
    app.add_option("--set", sets, "extra knob for the store policies, NAME=VALUE (repeatable)");
    app.add_flag("--json", json, "print JSON");
    app.add_flag("--metrics", dump_metrics, "print each store run's metrics to stderr");
    app.add_flag("--no-put-hints", no_put_hints,
                 "store policies: Put without the engine's PutHint (position, request length, "
                 "prefix hit; a partial tail inferred from the put batch is still told, as the "
                 "daemon does)");
    bool no_partial_sizes = false;
    app.add_flag("--no-partial-sizes", no_partial_sizes,
                 "every block is --object-size, the last of a request too (by default a last "
                 "block holding input_length % 512 tokens is that share of it); also --suite");
    double hint_accuracy = -1;
    double hint_window = 4;
    app.add_option("--hint-accuracy", hint_accuracy,
                   "store policies: give each Put a retention hint (a soft pin) derived from the "
                   "trace's future, true with this probability (default: no hints)")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--hint-window", hint_window,
                   "--hint-accuracy: 'reused soon' = within this many MEMORY capacities of "
                   "references")
        ->check(CLI::Range(0.01, 1000.0));
    bool hint_per_batch = false;
    app.add_flag("--hint-per-batch", hint_per_batch,
                 "--hint-accuracy: one hint for a request's put batch, as an engine's batch put "
                 "carries one config (by default each block's own hint, drawn on its own); "
                 "also --suite");
    TtftModel ttft;
    app.add_option("--ttft-memory-gbps", ttft.memory_gbps,
                   "modeled TTFT: GB/s of a MEMORY block's copy to the GPU (PCIe 4.0 x16)")
        ->check(CLI::Range(1e-6, 1e6));
    app.add_option("--ttft-disk-gbps", ttft.disk_gbps,
                   "modeled TTFT: GB/s of a LOCAL_DISK block's read (one PCIe 4.0 NVMe)")
        ->check(CLI::Range(1e-6, 1e6));
    app.add_option("--ttft-prefill-tps", ttft.prefill_tokens_per_s,
                   "modeled TTFT: tokens/s of prefill for a block not reused (70B on 8 A100)")
        ->check(CLI::Range(1e-6, 1e12));
    app.add_option("--ttft-kv-bytes-per-token", ttft.kv_bytes_per_token,
                   "modeled TTFT: KV bytes per token (LLaMA-2-70B fp16: 327680)")
        ->check(CLI::Range(1.0, 1e12));
    size_t limit = 0;
    DiskSetup disk;
    TimedOptions timed;
    bool timed_mode = false;
    bool print_dram_size = false;
    app.add_option("--limit", limit, "replay only the first N requests of the trace (0 = all)");
    app.add_flag("--real-disk", disk.real,
                 "store policies: LOCAL_DISK through the real DiskStore (libaio, O_DIRECT) in a "
                 "temporary directory; reports disk bytes written and read");
    app.add_option("--disk-dir", disk.dir,
                   "--real-disk: the store's directory (created; must hold no store yet)");
    app.add_option("--disk-fraction", disk.fraction,
                   "--real-disk: LOCAL_DISK data capacity as a fraction of the distinct blocks")
        ->check(CLI::Range(0.0001, 100.0));
    app.add_flag("--timed", timed_mode,
                 "replay by the trace's timestamps through a running daemon (--master)");
    app.add_option("--master", timed.master, "--timed: the daemon's HOST:PORT");
    app.add_option("--speed", timed.speed, "--timed: trace time runs this many times faster")
        ->check(CLI::Range(0.001, 1e6));
    app.add_option("--duration", timed.duration_sec,
                   "--timed: stop dispatching after this many wall seconds (0 = no limit)");
    app.add_option("--workers", timed.workers,
                   "--timed: concurrent requests (each request's blocks are read in order)")
        ->check(CLI::Range(1, 256));
    app.add_option("--key-prefix", timed.key_prefix, "--timed: prefix of every key");
    app.add_option("--prefetch-gap-ms", timed.prefetch_gap_ms,
                   "--timed: each request checks its blocks with BatchExists this many ms before "
                   "it reads them with one BatchGet (default: no check, blocks read one by one)")
        ->check(CLI::Range(0.0, 60000.0));
    std::string prefetch_mode = "on";
    app.add_option("--prefetch", prefetch_mode,
                   "--prefetch-gap-ms: the BatchExists prefetch flag (ExistOptions."
                   "prefetch_to_memory), on or off")
        ->check(CLI::IsMember({"on", "off"}));
    app.add_flag("--print-dram-size", print_dram_size,
                 "print MEMORY capacity in bytes for --mem-fraction and --object-size on this "
                 "trace (after --limit) and exit");
    bool two_tenant = false;
    std::string quotas_mode = "both";
    uint64_t two_tenant_keys = 20000;
    app.add_flag("--two-tenant", two_tenant,
                 "replay the synthetic two-tenant workload (steady + bursty) through the store "
                 "with tenant quotas off and/or on (tenant_replay.h); needs no TRACE");
    app.add_option("--quotas", quotas_mode,
                   "--two-tenant: off (no tenant registered), on (each tenant's MEMORY quota "
                   "half of DRAM) or both")
        ->check(CLI::IsMember({"on", "off", "both"}));
    app.add_option("--two-tenant-keys", two_tenant_keys,
                   "--two-tenant: distinct keys of both tenants (MEMORY = --mem-fraction of them)")
        ->check(CLI::Range(uint64_t{100}, uint64_t{100000000}));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    if (hint_per_batch && hint_accuracy < 0 && suite.hint_accuracy < 0) {
        std::fprintf(stderr, "mooncake-replay: --hint-per-batch needs hints: --hint-accuracy "
                             "(or --suite-hint-accuracy with --suite)\n");
        return 2;
    }
    std::vector<std::pair<std::string, std::string>> extra;
    for (const std::string& s : sets) {
        size_t eq = s.find('=');
        if (eq == std::string::npos) {
            std::fprintf(stderr, "mooncake-replay: --set expects NAME=VALUE, got '%s'\n", s.c_str());
            return 2;
        }
        extra.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    }
    if (suite_mode) {
        suite.extra = extra;
        suite.partial_sizes = !no_partial_sizes;
        suite.hint_per_batch = hint_per_batch;
        Status st = RunSuite(suite);
        if (!st.ok()) {
            std::fprintf(stderr, "mooncake-replay: %s\n", st.ToString().c_str());
            return 1;
        }
        return 0;
    }
    if (two_tenant) {
        TwoTenantShape shape;
        shape.distinct = two_tenant_keys;
        shape.fraction = mem_fraction;
        shape.seed = suite.seed;
        const TwoTenantWorkload workload = MakeTwoTenantWorkload(shape);
        std::vector<TwoTenantRun> runs;
        for (bool on : {false, true}) {
            if (quotas_mode != "both" && (quotas_mode == "on") != on) continue;
            Result<TwoTenantRun> run = RunTwoTenant(workload, on, object_size, extra);
            if (!run.ok()) {
                std::fprintf(stderr, "mooncake-replay: %s\n", run.status().ToString().c_str());
                return 1;
            }
            runs.push_back(std::move(run).value());
        }
        std::fputs(json ? TwoTenantJson(mem_fraction, runs).c_str()
                        : TwoTenantTable(mem_fraction, workload, runs).c_str(),
                   stdout);
        return 0;
    }
    if (trace_path.empty()) {
        std::fprintf(stderr, "mooncake-replay: a TRACE is required (or --suite)\n");
        return 2;
    }
    std::vector<std::string> policies;
    if (policy == "all") {
        policies = PolicyNames();
    } else if (std::find(PolicyNames().begin(), PolicyNames().end(), policy) != PolicyNames().end()) {
        policies = {policy};
    } else {
        std::fprintf(stderr, "mooncake-replay: unknown policy '%s'\n", policy.c_str());
        return 2;
    }

    Result<std::vector<TraceRequest>> trace = ReadTrace(trace_path);
    if (!trace.ok()) {
        std::fprintf(stderr, "mooncake-replay: %s\n", trace.status().message().c_str());
        return 1;
    }
    if (limit > 0 && trace->size() > limit) trace->resize(limit);
    std::unordered_set<int64_t> distinct;
    uint64_t references = 0;
    for (const TraceRequest& req : *trace) {
        for (int64_t b : req.blocks) distinct.insert(b);
        references += req.blocks.size();
    }
    uint64_t capacity_objects =
        static_cast<uint64_t>(mem_fraction * static_cast<double>(distinct.size()));
    // The sketch's aging window, the same for the store and the reference: the store's own
    // default rule (8 x DRAM capacity in objects, at least 4096).
    uint64_t window = std::max<uint64_t>(4096, capacity_objects * 8);
    disk.distinct_bytes = distinct.size() * object_size;
    if (print_dram_size) {
        std::printf("%llu\n", static_cast<unsigned long long>(capacity_objects * object_size));
        return 0;
    }
    if (timed_mode) {
        if (timed.master.empty()) {
            std::fprintf(stderr, "mooncake-replay: --timed needs --master HOST:PORT\n");
            return 2;
        }
        timed.object_size = object_size;
        timed.prefetch = prefetch_mode == "on";
        timed.ttft = ttft;
        Result<TimedResult> r = RunTimedReplay(*trace, timed);
        if (!r.ok()) {
            std::fprintf(stderr, "mooncake-replay: %s\n", r.status().ToString().c_str());
            return 1;
        }
        PrintTimedResult(*r, timed, mem_fraction, json);
        return 0;
    }

    RunSettings settings;
    settings.capacity_objects = capacity_objects;
    settings.object_size = object_size;
    settings.threshold = static_cast<uint32_t>(threshold);
    settings.window = window;
    settings.extra = extra;
    settings.dump_metrics = dump_metrics;
    settings.put_hints = !no_put_hints;
    settings.partial_sizes = !no_partial_sizes;
    settings.disk = disk;
    settings.ttft = ttft;
    settings.hint_accuracy = hint_accuracy;
    settings.hint_window_capacities = hint_window;
    settings.hint_per_batch = hint_per_batch;
    std::vector<PolicyRun> runs;
    for (const std::string& p : policies) {
        Result<PolicyRun> run = RunPolicy(p, *trace, settings);
        if (!run.ok()) {
            std::fprintf(stderr, "mooncake-replay: %s\n", run.status().ToString().c_str());
            return 1;
        }
        runs.push_back(std::move(run).value());
    }

    if (json) {
        std::printf("%s", runs.size() > 1 ? "[\n" : "");
        for (size_t i = 0; i < runs.size(); ++i) {
            const SimCounts& c = runs[i].counts;
            std::printf(
                "{\"policy\": \"%s\", \"mem_fraction\": %g, \"capacity_objects\": %llu, "
                "\"distinct_blocks\": %zu, \"references\": %llu, \"mem_hit_ratio\": %.6f, "
                "\"disk_hit_ratio\": %.6f, \"miss_ratio\": %.6f, \"promotions\": %.6f, "
                "\"promotion_count\": %llu",
                runs[i].policy.c_str(), mem_fraction,
                static_cast<unsigned long long>(capacity_objects), distinct.size(),
                static_cast<unsigned long long>(c.references), Ratio(c.mem_hits, c.references),
                Ratio(c.disk_hits, c.references), Ratio(c.misses, c.references),
                Ratio(c.promotions, c.references), static_cast<unsigned long long>(c.promotions));
            const RequestFigures& r = runs[i].requests;
            std::printf(", \"requests\": %llu, \"prefix_mem_hit_ratio\": %.6f, "
                        "\"requests_all_memory_ratio\": %.6f, \"ttft_ms_mean\": %.3f, "
                        "\"ttft_ms_p50\": %.3f, \"ttft_ms_p99\": %.3f",
                        static_cast<unsigned long long>(r.requests), r.prefix_mem_hit_ratio(),
                        r.requests_all_memory_ratio(), r.ttft_ms_mean, r.ttft_ms_p50,
                        r.ttft_ms_p99);
            if (runs[i].mean_dram_fill >= 0) {
                std::printf(", \"mean_dram_fill\": %.4f", runs[i].mean_dram_fill);
            }
            const DiskFigures& d = runs[i].disk;
            if (d.capacity > 0) {
                std::printf(", \"disk\": {\"capacity_bytes\": %llu, \"bytes_written\": %llu, "
                            "\"writes\": %llu, \"bytes_read\": %llu, \"reads\": %llu, "
                            "\"evictions\": %llu, \"corruptions\": %llu, "
                            "\"content_mismatches\": %llu, \"read_failures\": %llu, "
                            "\"seconds\": %.1f}",
                            static_cast<unsigned long long>(d.capacity),
                            static_cast<unsigned long long>(d.bytes_written),
                            static_cast<unsigned long long>(d.writes),
                            static_cast<unsigned long long>(d.bytes_read),
                            static_cast<unsigned long long>(d.reads),
                            static_cast<unsigned long long>(d.evictions),
                            static_cast<unsigned long long>(d.corruptions),
                            static_cast<unsigned long long>(d.content_mismatches),
                            static_cast<unsigned long long>(d.read_failures), d.seconds);
            }
            std::printf("}%s\n", i + 1 < runs.size() ? "," : "");
        }
        std::printf("%s", runs.size() > 1 ? "]\n" : "");
        return 0;
    }
    std::printf("trace %s: %zu requests, %llu block references, %zu distinct blocks\n",
                trace_path.c_str(), trace->size(), static_cast<unsigned long long>(references),
                distinct.size());
    std::printf("MEMORY capacity: %llu objects (%.3f of distinct), object size %llu B\n\n",
                static_cast<unsigned long long>(capacity_objects), mem_fraction,
                static_cast<unsigned long long>(object_size));
    std::printf("%-28s %9s %9s %9s %11s %10s\n", "policy", "mem_hit", "disk_hit", "miss",
                "promotions", "dram_fill");
    for (const PolicyRun& run : runs) {
        const SimCounts& c = run.counts;
        std::printf("%-28s %9.4f %9.4f %9.4f %11.4f ", run.policy.c_str(),
                    Ratio(c.mem_hits, c.references), Ratio(c.disk_hits, c.references),
                    Ratio(c.misses, c.references), Ratio(c.promotions, c.references));
        if (run.mean_dram_fill >= 0) {
            std::printf("%10.4f\n", run.mean_dram_fill);
        } else {
            std::printf("%10s\n", "-");
        }
    }
    std::printf("\nper request (an engine's view: the reused prefix ends at the first miss;\n"
                "TTFT modeled, MEMORY %.1f ms, LOCAL_DISK %.1f ms, recompute %.1f ms per full "
                "block):\n",
                ttft.Cost(BlockSource::kMemory, ttft.block_tokens),
                ttft.Cost(BlockSource::kDisk, ttft.block_tokens),
                ttft.Cost(BlockSource::kMiss, ttft.block_tokens));
    std::printf("%-28s %10s %11s %10s %9s %9s\n", "policy", "prefix_mem", "all_memory",
                "ttft_mean", "ttft_p50", "ttft_p99");
    for (const PolicyRun& run : runs) {
        const RequestFigures& r = run.requests;
        std::printf("%-28s %10.4f %11.4f %10.1f %9.1f %9.1f\n", run.policy.c_str(),
                    r.prefix_mem_hit_ratio(), r.requests_all_memory_ratio(), r.ttft_ms_mean,
                    r.ttft_ms_p50, r.ttft_ms_p99);
    }
    bool header = false;
    for (const PolicyRun& run : runs) {
        const DiskFigures& d = run.disk;
        if (d.capacity == 0) continue;
        if (!header) {
            std::printf("\nreal LOCAL_DISK (DiskStore, %.1f MiB data region):\n",
                        static_cast<double>(d.capacity) / (1 << 20));
            std::printf("%-28s %12s %9s %12s %9s %10s %8s %8s\n", "policy", "written MiB",
                        "writes", "read MiB", "reads", "evictions", "errors", "seconds");
            header = true;
        }
        std::printf("%-28s %12.1f %9llu %12.1f %9llu %10llu %8llu %8.1f\n", run.policy.c_str(),
                    static_cast<double>(d.bytes_written) / (1 << 20),
                    static_cast<unsigned long long>(d.writes),
                    static_cast<double>(d.bytes_read) / (1 << 20),
                    static_cast<unsigned long long>(d.reads),
                    static_cast<unsigned long long>(d.evictions),
                    static_cast<unsigned long long>(d.corruptions + d.content_mismatches +
                                                    d.read_failures),
                    d.seconds);
    }
    return 0;
}
