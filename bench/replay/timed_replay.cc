#include "bench/replay/timed_replay.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "thrift/client.h"

namespace mooncake::replay {
namespace {

using Clock = std::chrono::steady_clock;

// Cumulative bucket counts of one histogram in a Prometheus exposition, by upper bound.
std::map<double, double> HistogramBuckets(const std::string& text, const std::string& name) {
    std::map<double, double> buckets;
    std::istringstream in(text);
    const std::string prefix = name + "_bucket{le=\"";
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(prefix, 0) != 0) continue;
        size_t close = line.find('"', prefix.size());
        if (close == std::string::npos) continue;
        std::string le = line.substr(prefix.size(), close - prefix.size());
        double bound = le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr);
        buckets[bound] = std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
    }
    return buckets;
}

double CounterValue(const std::string& text, const std::string& series) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
            line[series.size()] == ' ') {
            return std::strtod(line.c_str() + series.size() + 1, nullptr);
        }
    }
    return 0;
}

// Quantiles (ms) of the observations between two snapshots of a histogram, linear within
// the bucket.
Quantiles HistogramDelta(const std::map<double, double>& before,
                         const std::map<double, double>& after) {
    std::vector<std::pair<double, double>> delta;
    for (const auto& [bound, count] : after) {
        auto it = before.find(bound);
        delta.emplace_back(bound, count - (it == before.end() ? 0 : it->second));
    }
    Quantiles q;
    if (delta.empty() || delta.back().second <= 0) return q;
    q.count = static_cast<uint64_t>(delta.back().second);
    auto at = [&](double quantile) {
        double rank = quantile * delta.back().second;
        double prev_bound = 0, prev_count = 0;
        for (auto [bound, count] : delta) {
            if (count >= rank) {
                if (std::isinf(bound)) return prev_bound;
                return prev_bound +
                       (bound - prev_bound) * (rank - prev_count) / std::max(1.0, count - prev_count);
            }
            prev_bound = bound;
            prev_count = count;
        }
        return prev_bound;
    };
    q.p50 = at(0.5) * 1e3;
    q.p99 = at(0.99) * 1e3;
    return q;
}

Quantiles Summarize(std::vector<double> v) {
    Quantiles q;
    q.count = v.size();
    if (v.empty()) return q;
    std::sort(v.begin(), v.end());
    auto at = [&](double quantile) {
        return v[std::min(v.size() - 1, static_cast<size_t>(quantile * static_cast<double>(v.size())))];
    };
    q.p50 = at(0.5);
    q.p99 = at(0.99);
    return q;
}

// The bytes of block `id`: its id in every 8-byte word (checked on every read).
void Fill(std::vector<std::byte>& buf, int64_t id) {
    for (size_t i = 0; i + 8 <= buf.size(); i += 8) std::memcpy(buf.data() + i, &id, 8);
}
bool Check(const std::vector<std::byte>& buf, int64_t id) {
    for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
        if (std::memcmp(buf.data() + i, &id, 8) != 0) return false;
    }
    return true;
}

struct WorkerTally {
    uint64_t requests = 0, references = 0, mem_hits = 0, disk_hits = 0, misses = 0;
    uint64_t put_failures = 0, errors = 0, mismatches = 0;
    std::vector<double> get_memory, get_disk, put, lag, exists;  // ms
    uint64_t would_be_disk = 0, would_be_disk_found_memory = 0;
    // Each request's sources, by its index in the trace (the meter takes them in order).
    std::vector<std::pair<size_t, std::vector<BlockSource>>> sources;
};

double MsSince(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A block not found is Put (the engine computed it), so later requests find it.
void PutMissing(Client& client, int64_t block, const std::string& key,
                std::vector<std::byte>& value, WorkerTally& t) {
    Fill(value, block);
    auto p0 = Clock::now();
    Status st = client.Put(key, std::span<const std::byte>(value));
    if (st.ok()) {
        t.put.push_back(MsSince(p0));
    } else if (!st.Is(StatusCode::kAlreadyExists)) {
        ++t.put_failures;
    }
}

// The outcome of one read, tallied; a key not found is Put.
BlockSource Tally(Client& client, int64_t block, const std::string& key, const Status& got,
                  Tier tier, double ms, const std::vector<std::byte>& buf,
                  std::vector<std::byte>& value, WorkerTally& t) {
    if (got.ok()) {
        if (!Check(buf, block)) ++t.mismatches;
        if (tier == Tier::kMemory) {
            ++t.mem_hits;
            t.get_memory.push_back(ms);
            return BlockSource::kMemory;
        }
        ++t.disk_hits;
        t.get_disk.push_back(ms);
        return BlockSource::kDisk;
    }
    if (!got.Is(StatusCode::kNotFound) && !got.Is(StatusCode::kNotReady)) ++t.errors;
    ++t.misses;
    if (got.Is(StatusCode::kNotFound)) PutMissing(client, block, key, value, t);
    return BlockSource::kMiss;
}

BlockSource ReadOne(Client& client, const TimedOptions& options, int64_t block,
                    std::vector<std::byte>& buf, std::vector<std::byte>& value, WorkerTally& t) {
    std::string key = options.key_prefix + std::to_string(block);
    ++t.references;
    Tier tier = Tier::kMemory;
    auto t0 = Clock::now();
    Result<uint64_t> got = client.GetInto(key, buf, &tier);
    return Tally(client, block, key, got.status(), tier, MsSince(t0), buf, value, t);
}

// The engine's sequence: BatchExists (prefetch or not), the gap, one BatchGetInto of the
// request's blocks. The tiers looked up first (Stat: inspection, no access) tell which reads
// would have gone to LOCAL_DISK had nothing happened in between.
void CheckThenRead(Client& client, const TimedOptions& options, const TraceRequest& req,
                   std::vector<std::vector<std::byte>>& bufs, std::vector<std::byte>& value,
                   std::vector<BlockSource>& sources, WorkerTally& t) {
    const size_t n = req.blocks.size();
    std::vector<std::string> keys;
    keys.reserve(n);
    for (int64_t block : req.blocks) keys.push_back(options.key_prefix + std::to_string(block));
    std::vector<bool> disk_only(n, false);
    for (size_t b = 0; b < n; ++b) {
        Result<ObjectInfo> info = client.Stat(keys[b]);
        if (!info.ok()) continue;
        const ObjectView& v = info->object;
        disk_only[b] = v.HasComplete(Tier::kLocalDisk) && !v.HasComplete(Tier::kMemory);
    }
    auto e0 = Clock::now();
    (void)client.BatchExists(keys, options.prefetch);
    t.exists.push_back(MsSince(e0));
    if (options.prefetch_gap_ms > 0) {
        std::this_thread::sleep_for(
            std::chrono::duration<double, std::milli>(options.prefetch_gap_ms));
    }
    if (bufs.size() < n) bufs.resize(n, std::vector<std::byte>(options.object_size));
    std::vector<std::span<std::byte>> outs(bufs.begin(),
                                           bufs.begin() + static_cast<ptrdiff_t>(n));
    std::vector<Tier> tiers(n, Tier::kMemory);
    auto g0 = Clock::now();
    std::vector<Result<uint64_t>> got = client.BatchGetInto(keys, outs, tiers);
    // The batch's reads overlap: each is charged the batch's time.
    const double ms = MsSince(g0);
    for (size_t b = 0; b < n; ++b) {
        ++t.references;
        sources[b] = Tally(client, req.blocks[b], keys[b], got[b].status(), tiers[b], ms,
                           bufs[b], value, t);
        if (disk_only[b]) {
            ++t.would_be_disk;
            if (sources[b] == BlockSource::kMemory) ++t.would_be_disk_found_memory;
        }
    }
}


constexpr const char* kPromotionHistogram = "mooncake_promotion_latency_seconds";

}  // namespace

Result<TimedResult> RunTimedReplay(const std::vector<TraceRequest>& trace,
                                   const TimedOptions& options) {
    if (trace.empty()) return Status::InvalidArgument("the trace is empty");
    if (options.object_size < 8) return Status::InvalidArgument("--object-size must be >= 8");
    ClientOptions client_options;
    client_options.client_name = "mooncake-replay";
    Result<std::unique_ptr<Client>> client = Client::Connect(options.master, client_options);
    if (!client.ok()) return client.status();
    Result<std::string> metrics_before = (*client)->MetricsText();
    if (!metrics_before.ok()) return metrics_before.status();

    const int64_t origin_ms = trace.front().timestamp_ms;
    const auto start = Clock::now();
    const auto stop_at = options.duration_sec > 0
                             ? start + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.duration_sec))
                             : Clock::time_point::max();
    std::atomic<size_t> next{0};
    std::atomic<int64_t> last_trace_ms{origin_ms};
    std::vector<WorkerTally> tallies(static_cast<size_t>(options.workers));
    std::vector<std::thread> workers;
    for (int w = 0; w < options.workers; ++w) {
        workers.emplace_back([&, w] {
            WorkerTally& t = tallies[static_cast<size_t>(w)];
            std::vector<std::byte> buf(options.object_size);
            std::vector<std::byte> value(options.object_size);
            std::vector<std::vector<std::byte>> bufs;  // the BatchExists phase's, one per block
            for (;;) {
                size_t i = next.fetch_add(1);
                if (i >= trace.size()) return;
                const TraceRequest& req = trace[i];
                auto due = start + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double, std::milli>(
                                           static_cast<double>(req.timestamp_ms - origin_ms) /
                                           options.speed));
                if (due >= stop_at) return;
                std::this_thread::sleep_until(due);
                auto began = Clock::now();
                t.lag.push_back(std::chrono::duration<double, std::milli>(began - due).count());
                ++t.requests;
                int64_t seen = last_trace_ms.load();
                while (req.timestamp_ms > seen &&
                       !last_trace_ms.compare_exchange_weak(seen, req.timestamp_ms)) {
                }
                std::vector<BlockSource> sources(req.blocks.size(), BlockSource::kMiss);
                if (options.prefetch_gap_ms < 0) {
                    for (size_t b = 0; b < req.blocks.size(); ++b) {
                        sources[b] = ReadOne(**client, options, req.blocks[b], buf, value, t);
                    }
                } else {
                    CheckThenRead(**client, options, req, bufs, value, sources, t);
                }
                t.sources.emplace_back(i, std::move(sources));
            }
        });
    }
    for (auto& th : workers) th.join();

    TimedResult r;
    r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.trace_seconds = static_cast<double>(last_trace_ms.load() - origin_ms) / 1e3;
    std::vector<double> gm, gd, pu, lag, ex;
    std::vector<const std::vector<BlockSource>*> by_request(trace.size(), nullptr);
    for (const WorkerTally& t : tallies) {
        r.would_be_disk += t.would_be_disk;
        r.would_be_disk_found_memory += t.would_be_disk_found_memory;
        ex.insert(ex.end(), t.exists.begin(), t.exists.end());
        for (const auto& [index, sources] : t.sources) by_request[index] = &sources;
        r.requests += t.requests;
        r.references += t.references;
        r.mem_hits += t.mem_hits;
        r.disk_hits += t.disk_hits;
        r.misses += t.misses;
        r.put_failures += t.put_failures;
        r.errors += t.errors;
        r.content_mismatches += t.mismatches;
        gm.insert(gm.end(), t.get_memory.begin(), t.get_memory.end());
        gd.insert(gd.end(), t.get_disk.begin(), t.get_disk.end());
        pu.insert(pu.end(), t.put.begin(), t.put.end());
        lag.insert(lag.end(), t.lag.begin(), t.lag.end());
    }
    r.get_memory = Summarize(std::move(gm));
    r.get_disk = Summarize(std::move(gd));
    r.put = Summarize(std::move(pu));
    r.lag = Summarize(std::move(lag));
    r.exists = Summarize(std::move(ex));
    RequestMeter meter(options.ttft);
    for (size_t i = 0; i < trace.size(); ++i) {
        if (by_request[i] != nullptr) meter.Add(trace[i], *by_request[i]);
    }
    r.request_figures = meter.Figures();
    // Let promotions in flight land before the snapshot (they count in the histogram).
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    Result<std::string> metrics_after = (*client)->MetricsText();
    if (!metrics_after.ok()) return metrics_after.status();
    r.promotion = HistogramDelta(HistogramBuckets(*metrics_before, kPromotionHistogram),
                                 HistogramBuckets(*metrics_after, kPromotionHistogram));
    for (const char* name : {"mooncake_promotion_queued_total", "mooncake_promotion_completed_total"}) {
        double d = CounterValue(*metrics_after, name) - CounterValue(*metrics_before, name);
        (std::strstr(name, "queued") ? r.promotion_queued : r.promotion_completed) = d;
    }
    return r;
}

void PrintTimedResult(const TimedResult& r, const TimedOptions& options, double mem_fraction,
                      bool json) {
    auto ratio = [&](uint64_t n) {
        return r.references ? static_cast<double>(n) / static_cast<double>(r.references) : 0.0;
    };
    if (json) {
        std::printf(
            "{\"mode\": \"timed\", \"mem_fraction\": %g, \"speed\": %g, \"object_size\": %llu, "
            "\"requests\": %llu, \"references\": %llu, \"trace_seconds\": %.1f, "
            "\"wall_seconds\": %.1f, \"mem_hit_ratio\": %.6f, \"disk_hit_ratio\": %.6f, "
            "\"miss_ratio\": %.6f, \"put_failures\": %llu, \"errors\": %llu, "
            "\"content_mismatches\": %llu, "
            "\"get_memory_ms\": {\"p50\": %.3f, \"p99\": %.3f}, "
            "\"get_disk_ms\": {\"p50\": %.3f, \"p99\": %.3f}, "
            "\"put_ms\": {\"p50\": %.3f, \"p99\": %.3f}, \"lag_ms\": {\"p50\": %.3f, \"p99\": %.3f}, "
            "\"promotion_queued\": %.0f, \"promotion_completed\": %.0f, "
            "\"promotion_ms\": {\"count\": %llu, \"p50\": %.3f, \"p99\": %.3f}",
            mem_fraction, options.speed, static_cast<unsigned long long>(options.object_size),
            static_cast<unsigned long long>(r.requests),
            static_cast<unsigned long long>(r.references), r.trace_seconds, r.wall_seconds,
            ratio(r.mem_hits), ratio(r.disk_hits), ratio(r.misses),
            static_cast<unsigned long long>(r.put_failures),
            static_cast<unsigned long long>(r.errors),
            static_cast<unsigned long long>(r.content_mismatches), r.get_memory.p50,
            r.get_memory.p99, r.get_disk.p50, r.get_disk.p99, r.put.p50, r.put.p99, r.lag.p50,
            r.lag.p99, r.promotion_queued, r.promotion_completed,
            static_cast<unsigned long long>(r.promotion.count), r.promotion.p50, r.promotion.p99);
        const RequestFigures& f = r.request_figures;
        std::printf(", \"prefix_mem_hit_ratio\": %.6f, \"requests_all_memory_ratio\": %.6f, "
                    "\"ttft_ms_mean\": %.3f, \"ttft_ms_p50\": %.3f, \"ttft_ms_p99\": %.3f",
                    f.prefix_mem_hit_ratio(), f.requests_all_memory_ratio(), f.ttft_ms_mean,
                    f.ttft_ms_p50, f.ttft_ms_p99);
        if (options.prefetch_gap_ms >= 0) {
            std::printf(", \"prefetch\": %s, \"prefetch_gap_ms\": %g, \"would_be_disk\": %llu, "
                        "\"would_be_disk_found_memory\": %llu, \"would_be_disk_memory_ratio\": %.6f, "
                        "\"exists_ms\": {\"p50\": %.3f, \"p99\": %.3f}",
                        options.prefetch ? "true" : "false", options.prefetch_gap_ms,
                        static_cast<unsigned long long>(r.would_be_disk),
                        static_cast<unsigned long long>(r.would_be_disk_found_memory),
                        r.would_be_disk ? static_cast<double>(r.would_be_disk_found_memory) /
                                              static_cast<double>(r.would_be_disk)
                                        : 0.0,
                        r.exists.p50, r.exists.p99);
        }
        std::printf("}\n");
        return;
    }
    std::printf("timed replay via %s: %llu requests, %llu block reads, %.1f s of trace in %.1f s "
                "(speed %g), %llu B per block\n",
                options.master.c_str(), static_cast<unsigned long long>(r.requests),
                static_cast<unsigned long long>(r.references), r.trace_seconds, r.wall_seconds,
                options.speed, static_cast<unsigned long long>(options.object_size));
    std::printf("MEMORY hit %.4f  LOCAL_DISK hit %.4f  miss %.4f  (put refused %llu, errors %llu, "
                "bad bytes %llu)\n",
                ratio(r.mem_hits), ratio(r.disk_hits), ratio(r.misses),
                static_cast<unsigned long long>(r.put_failures),
                static_cast<unsigned long long>(r.errors),
                static_cast<unsigned long long>(r.content_mismatches));
    std::printf("%-26s %9s %9s %9s\n", "latency (ms)", "count", "p50", "p99");
    auto row = [](const char* name, const Quantiles& q) {
        std::printf("%-26s %9llu %9.3f %9.3f\n", name, static_cast<unsigned long long>(q.count),
                    q.p50, q.p99);
    };
    row("Get served from MEMORY", r.get_memory);
    row("Get served from LOCAL_DISK", r.get_disk);
    row("Put (miss)", r.put);
    row("promotion trigger->COMPLETE", r.promotion);
    row("dispatch lag", r.lag);
    std::printf("promotions queued %.0f, completed %.0f\n", r.promotion_queued,
                r.promotion_completed);
    const RequestFigures& f = r.request_figures;
    std::printf("per request: prefix MEMORY %.4f, all MEMORY %.4f, modeled TTFT mean %.1f / "
                "p50 %.1f / p99 %.1f ms\n",
                f.prefix_mem_hit_ratio(), f.requests_all_memory_ratio(), f.ttft_ms_mean,
                f.ttft_ms_p50, f.ttft_ms_p99);
    if (options.prefetch_gap_ms >= 0) {
        row("BatchExists", r.exists);
        std::printf("BatchExists (prefetch %s) %g ms before each BatchGet: %llu reads were "
                    "LOCAL_DISK-only when checked, %llu of them found MEMORY\n",
                    options.prefetch ? "on" : "off", options.prefetch_gap_ms,
                    static_cast<unsigned long long>(r.would_be_disk),
                    static_cast<unsigned long long>(r.would_be_disk_found_memory));
    }
}

}  // namespace mooncake::replay
