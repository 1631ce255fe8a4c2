#include "bench/replay/tenant_replay.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "bench/replay/workloads.h"
#include "core/base/clock.h"
#include "core/base/knobs.h"
#include "core/base/metrics.h"
#include "core/base/tenant.h"
#include "core/master/local_master_link.h"
#include "core/master/master_store.h"
#include "core/node/bookkeeping_node.h"
#include "core/node/node_worker.h"

namespace mooncake::replay {
namespace {

constexpr ClientId kClient = 1;
constexpr std::string_view kSteady = "steady";
constexpr std::string_view kBurst = "burst";

double Ratio(uint64_t part, uint64_t whole) {
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

double TenantFigures::memory_hit_ratio() const { return Ratio(memory_hits, reads); }
double TenantFigures::memory_hit_ratio_in_bursts() const {
    return Ratio(memory_hits_in_bursts, reads_in_bursts);
}
double TenantFigures::memory_hit_ratio_outside_bursts() const {
    return Ratio(memory_hits - memory_hits_in_bursts, reads - reads_in_bursts);
}

TwoTenantWorkload MakeTwoTenantWorkload(const TwoTenantShape& shape) {
    TwoTenantWorkload w;
    w.capacity_objects = std::max<uint64_t>(
        2, static_cast<uint64_t>(shape.fraction * static_cast<double>(shape.distinct)));
    w.steady_keys = std::max<uint64_t>(
        1, static_cast<uint64_t>(shape.steady_share * static_cast<double>(w.capacity_objects)));
    w.burst_keys = shape.distinct > w.steady_keys ? shape.distinct - w.steady_keys : 0;
    const int bursts = std::max(shape.bursts, 1);
    const uint64_t per_burst = w.burst_keys / static_cast<uint64_t>(bursts);
    const uint64_t quiet =
        static_cast<uint64_t>(shape.quiet_capacities * static_cast<double>(w.capacity_objects));
    const uint64_t per_steady = static_cast<uint64_t>(std::max(shape.burst_keys_per_steady, 1));
    const uint64_t steady_refs = quiet * static_cast<uint64_t>(bursts + 1) +
                                 per_burst / per_steady * static_cast<uint64_t>(bursts) + 1;
    std::vector<int64_t> draws;  // ZipfTrace packs its keys into requests: flattened
    for (const TraceRequest& req : ZipfTrace(w.steady_keys, steady_refs, shape.skew, shape.seed)) {
        draws.insert(draws.end(), req.blocks.begin(), req.blocks.end());
    }
    size_t next = 0;
    auto steady = [&](bool in_burst) {
        w.refs.push_back({true, in_burst, draws[next++ % draws.size()]});
    };
    int64_t burst_key = 0;
    for (int b = 0; b <= bursts; ++b) {
        for (uint64_t i = 0; i < quiet; ++i) steady(false);
        if (b == bursts) break;
        const int64_t first = burst_key;
        const int64_t after = shape.burst_reread_after;
        for (uint64_t i = 0; i < per_burst; ++i) {
            w.refs.push_back({false, true, burst_key++});
            if (after > 0 && burst_key - 1 - after >= first) {
                w.refs.push_back({false, true, burst_key - 1 - after});
            }
            if (i % per_steady == per_steady - 1) steady(true);
        }
    }
    return w;
}

Result<TwoTenantRun> RunTwoTenant(const TwoTenantWorkload& workload, bool quotas,
                                  uint64_t object_size,
                                  const std::vector<std::pair<std::string, std::string>>& knobs) {
    const uint64_t capacity = workload.capacity_objects * object_size / 4096 * 4096;
    Config config;
    MC_RETURN_IF_ERROR(config.Set("put_wait_for_offload_ms", "0"));
    MC_RETURN_IF_ERROR(config.Set("client_live_ttl_sec", "86400"));
    MC_RETURN_IF_ERROR(config.Set("dram_size", std::to_string(capacity)));
    MC_RETURN_IF_ERROR(config.SetMany(knobs, SetMode::kStartup));
    ManualClock clock;
    MetricsRegistry metrics;
    MasterStore store(config, clock, metrics, /*epoch=*/1);

    LocalMasterLink link(store);
    BookkeepingSegment segment;
    BookkeepingDisk disk;
    NodeWorkerOptions options;
    options.spec = {"replay-node", "", capacity, uint64_t{1} << 60};
    options.room_wait = NodeWorkerOptions::RoomWait::kRunOffloads;
    constexpr size_t kBatch = size_t{1} << 16;
    options.inline_offload_batch = kBatch;
    NodeWorker worker(std::move(options), link, segment, &disk, /*peers=*/nullptr, clock, metrics);
    MC_RETURN_IF_ERROR(worker.Register());
    auto run_offloads = [&] {
        size_t done = worker.RunOffloads(kBatch).done;
        worker.FlushDrops();
        return done;
    };
    if (quotas) {
        const TenantQuota half{capacity / 2, 0};
        MC_RETURN_IF_ERROR(store.SetTenant(kSteady, half).status());
        MC_RETURN_IF_ERROR(store.SetTenant(kBurst, half).status());
    }
    Result<KeyScope> steady_scope = KeyScope::Make(kSteady);
    Result<KeyScope> burst_scope = KeyScope::Make(kBurst);
    MC_RETURN_IF_ERROR(steady_scope.status());
    MC_RETURN_IF_ERROR(burst_scope.status());

    TwoTenantRun run;
    run.quotas = quotas;
    const Nanos origin = clock.Now();
    int64_t ms = 0;
    for (const TenantRef& ref : workload.refs) {
        clock.Set(origin + std::chrono::milliseconds(++ms));
        (void)worker.Heartbeat();
        store.Tick();
        TenantFigures& f = ref.steady ? run.steady : run.burst;
        const KeyScope& scope = ref.steady ? *steady_scope : *burst_scope;
        Result<std::string> scoped = scope.Scope("block-" + std::to_string(ref.key));
        MC_RETURN_IF_ERROR(scoped.status());
        const std::string& key = *scoped;
        ++f.reads;
        if (ref.in_burst) ++f.reads_in_bursts;
        Result<ObjectView> got = store.GetReplicaList(key);
        if (got.ok()) {
            if (got->replicas.front().tier == Tier::kMemory) {
                ++f.memory_hits;
                if (ref.in_burst) ++f.memory_hits_in_bursts;
            } else {
                ++f.disk_hits;
            }
        } else if (got.status().Is(StatusCode::kNotFound)) {
            ++f.misses;
            Result<PutStartReply> put = store.PutStart(kClient, key, object_size, kNoNode);
            while (!put.ok() && put.status().Is(StatusCode::kNoSpace) && run_offloads() > 0) {
                put = store.PutStart(kClient, key, object_size, kNoNode);
            }
            // A Put refused for its tenant's quota is a figure (puts_refused), not an error.
            if (put.ok()) {
                MC_RETURN_IF_ERROR(store.PutEnd(kClient, key, put->generation));
            } else if (!put.status().Is(StatusCode::kNoSpace)) {
                return Status(put.status().code(),
                              "replay Put of " + key.substr(1) + ": " + put.status().message());
            }
        } else {
            return got.status();
        }
        for (;;) {
            size_t progress = run_offloads();
            progress += worker.RunPromotions(kBatch).tasks;
            worker.FlushDrops();
            if (progress == 0) break;
        }
    }
    for (const TenantRow& row : store.Tenants().tenants) {
        TenantFigures* f = row.tenant == kSteady  ? &run.steady
                           : row.tenant == kBurst ? &run.burst
                                                  : nullptr;
        if (f == nullptr) continue;
        f->quota_evictions = row.quota_evictions;
        f->puts_refused = row.puts_refused;
    }
    return run;
}

namespace {

std::string FiguresJson(const TenantFigures& f) {
    char buf[512];
    std::snprintf(
        buf, sizeof(buf),
        "{\"reads\": %llu, \"memory_hits\": %llu, \"disk_hits\": %llu, "
        "\"misses\": %llu, \"memory_hit_ratio\": %.6f, "
        "\"memory_hit_ratio_in_bursts\": %.6f, "
        "\"memory_hit_ratio_outside_bursts\": %.6f, \"quota_evictions\": %llu, "
        "\"puts_refused\": %llu}",
        static_cast<unsigned long long>(f.reads), static_cast<unsigned long long>(f.memory_hits),
        static_cast<unsigned long long>(f.disk_hits), static_cast<unsigned long long>(f.misses),
        f.memory_hit_ratio(), f.memory_hit_ratio_in_bursts(), f.memory_hit_ratio_outside_bursts(),
        static_cast<unsigned long long>(f.quota_evictions),
        static_cast<unsigned long long>(f.puts_refused));
    return buf;
}

}  // namespace

std::string TwoTenantJson(double fraction, const std::vector<TwoTenantRun>& runs) {
    char head[128];
    std::snprintf(head, sizeof(head),
                  "{\"workload\": \"two-tenant\", \"fraction\": %g, \"runs\": [", fraction);
    std::string out = head;
    for (size_t i = 0; i < runs.size(); ++i) {
        if (i > 0) out += ", ";
        out += std::string("{\"quotas\": \"") + (runs[i].quotas ? "on" : "off") +
               "\", \"tenants\": {\"steady\": " + FiguresJson(runs[i].steady) +
               ", \"burst\": " + FiguresJson(runs[i].burst) + "}}";
    }
    return out + "]}\n";
}

std::string TwoTenantTable(double fraction, const TwoTenantWorkload& workload,
                           const std::vector<TwoTenantRun>& runs) {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof(line),
                  "two-tenant, fraction %g: MEMORY %llu objects, steady %llu keys, burst %llu "
                  "one-off keys, %zu references\n",
                  fraction, static_cast<unsigned long long>(workload.capacity_objects),
                  static_cast<unsigned long long>(workload.steady_keys),
                  static_cast<unsigned long long>(workload.burst_keys), workload.refs.size());
    out += line;
    std::snprintf(line, sizeof(line), "%-7s %-7s %9s %9s %9s %9s %9s %10s %8s\n", "quotas",
                  "tenant", "mem_hit", "in_burst", "outside", "disk_hit", "miss", "quota_evs",
                  "refused");
    out += line;
    for (const TwoTenantRun& run : runs) {
        for (int t = 0; t < 2; ++t) {
            const TenantFigures& f = t == 0 ? run.steady : run.burst;
            std::snprintf(
                line, sizeof(line), "%-7s %-7s %9.4f %9.4f %9.4f %9.4f %9.4f %10llu %8llu\n",
                run.quotas ? "on" : "off", t == 0 ? "steady" : "burst", f.memory_hit_ratio(),
                f.memory_hit_ratio_in_bursts(), f.memory_hit_ratio_outside_bursts(),
                Ratio(f.disk_hits, f.reads), Ratio(f.misses, f.reads),
                static_cast<unsigned long long>(f.quota_evictions),
                static_cast<unsigned long long>(f.puts_refused));
            out += line;
        }
    }
    return out;
}

}  // namespace mooncake::replay
