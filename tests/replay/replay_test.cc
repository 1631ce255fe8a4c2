// The trace replay's reader, and the store against its exact-LRU yardsticks: the store's
// eviction must not waste DRAM, and its promotion gates must not starve promotion.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <unordered_set>

#include "bench/replay/belady.h"
#include "bench/replay/reference_lru.h"
#include "bench/replay/request_metrics.h"
#include "bench/replay/store_replay.h"
#include "bench/replay/workloads.h"
#include "bench/replay/trace_reader.h"

namespace mooncake::replay {
namespace {

TEST(TraceReaderTest, ParsesFieldsInAnyOrderAndIgnoresOthers) {
    auto req = ParseTraceLine(
        R"({"input_length": 10, "hash_ids": [3, 4 ,5], "timestamp": 12, "output_length": 2})");
    ASSERT_TRUE(req.ok()) << req.status().ToString();
    EXPECT_EQ(req->timestamp_ms, 12);
    EXPECT_EQ(req->blocks, (std::vector<int64_t>{3, 4, 5}));
    auto empty = ParseTraceLine(R"({"timestamp": 0.0, "hash_ids": []})");
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE(empty->blocks.empty());
}

TEST(TraceReaderTest, MalformedLinesAreErrors) {
    EXPECT_FALSE(ParseTraceLine(R"({"hash_ids": [1]})").ok());
    EXPECT_FALSE(ParseTraceLine(R"({"timestamp": 1})").ok());
    EXPECT_FALSE(ParseTraceLine(R"({"timestamp": 1, "hash_ids": [1, x]})").ok());
    EXPECT_FALSE(ParseTraceLine(R"({"timestamp": 1, "hash_ids": [1, 2)").ok());
    EXPECT_FALSE(ParseTraceLine(R"({"timestamp": "soon", "hash_ids": [1]})").ok());
}

// Request-level figures, computed by hand: the reused prefix ends at the first miss, holes
// behind a LOCAL_DISK block do not count as prefix MEMORY hits, and everything from the first
// miss on is recomputed even when the store holds it.
TEST(RequestMeterTest, PrefixHitsAllMemoryRequestsAndModeledTtft) {
    TtftModel model;
    model.block_tokens = 4;
    model.kv_bytes_per_token = 1e6;  // 4 MB per full block
    model.memory_gbps = 4;           // 1 ms per full block
    model.disk_gbps = 0.4;           // 10 ms per full block
    model.prefill_tokens_per_s = 40;  // 100 ms per full block
    RequestMeter meter(model);
    using S = BlockSource;
    TraceRequest a{0, -1, {1, 2, 3, 4}};
    meter.Add(a, std::vector<S>{S::kMemory, S::kDisk, S::kMemory, S::kMiss});
    // input_length 10 over 3 blocks of 4: the last block holds 2 tokens.
    TraceRequest b{1, 10, {5, 6, 7}};
    meter.Add(b, std::vector<S>{S::kMemory, S::kMemory, S::kMemory});
    TraceRequest c{2, -1, {8, 9}};
    meter.Add(c, std::vector<S>{S::kMiss, S::kMemory});
    RequestFigures f = meter.Figures();
    EXPECT_EQ(f.requests, 3u);
    EXPECT_EQ(f.references, 9u);
    EXPECT_EQ(f.prefix_mem_blocks, 1u + 3u + 0u);
    EXPECT_DOUBLE_EQ(f.prefix_mem_hit_ratio(), 4.0 / 9.0);
    EXPECT_EQ(f.reusing_requests, 2u);     // a and b; c's first block missed
    EXPECT_EQ(f.all_memory_requests, 1u);  // b; a reused a LOCAL_DISK block
    EXPECT_DOUBLE_EQ(f.requests_all_memory_ratio(), 0.5);
    const double ta = 1 + 10 + 1 + 100;  // the MEMORY block 3 behind the miss is not reused
    const double tb = 1 + 1 + 0.5;
    const double tc = 100 + 100;  // block 9 is in MEMORY, but follows a miss
    EXPECT_NEAR(f.ttft_ms_mean, (ta + tb + tc) / 3, 1e-9);
    EXPECT_NEAR(f.ttft_ms_p50, ta, 1e-9);
    EXPECT_NEAR(f.ttft_ms_p99, tc, 1e-9);
}

// Belady sees every request too, and never loses a MEMORY prefix to LRU on the same trace.
TEST(RequestMeterTest, BeladyAndLruReportEveryRequest) {
    std::vector<TraceRequest> trace;
    for (int i = 0; i < 200; ++i) trace.push_back({i, -1, {i % 7, 100 + i % 13, 1000 + i}});
    RequestMeter belady_meter;
    SimCounts belady = RunBelady(trace, 8, &belady_meter);
    ReferenceLru lru(8 * 4096, /*promotion=*/false, 2, 4096);
    RequestMeter lru_meter;
    for (const TraceRequest& r : trace) {
        std::vector<BlockSource> sources;
        for (int64_t b : r.blocks) sources.push_back(lru.Access(b, 4096));
        lru_meter.Add(r, sources);
    }
    RequestFigures bf = belady_meter.Figures(), lf = lru_meter.Figures();
    EXPECT_EQ(bf.requests, 200u);
    EXPECT_EQ(bf.references, belady.references);
    EXPECT_EQ(lf.references, lru.counts().references);
    EXPECT_GE(bf.prefix_mem_blocks, lf.prefix_mem_blocks);
    EXPECT_GT(lf.ttft_ms_mean, 0);
}

// A skewed synthetic trace: a few hot prefixes reused, a long tail of one-off blocks.
std::vector<TraceRequest> SyntheticTrace(int requests, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<TraceRequest> trace;
    int64_t next_fresh = 100000;
    for (int i = 0; i < requests; ++i) {
        TraceRequest req;
        req.timestamp_ms = i * 50;
        int prefix = static_cast<int>(rng() % 40);
        int shared = 2 + static_cast<int>(rng() % 6);
        for (int b = 0; b < shared; ++b) req.blocks.push_back(prefix * 16 + b);
        int fresh = 1 + static_cast<int>(rng() % 8);
        for (int b = 0; b < fresh; ++b) req.blocks.push_back(next_fresh++);
        trace.push_back(std::move(req));
    }
    return trace;
}

struct Yardsticks {
    SimCounts store;
    SimCounts reference;
    RequestFigures store_requests;
    RequestFigures reference_requests;
};

Yardsticks Compare(const std::vector<TraceRequest>& trace, double fraction, bool promotion,
                   std::vector<std::pair<std::string, std::string>> knobs = {}) {
    std::unordered_set<int64_t> distinct;
    for (auto& r : trace) distinct.insert(r.blocks.begin(), r.blocks.end());
    uint64_t capacity = static_cast<uint64_t>(fraction * static_cast<double>(distinct.size()));
    uint64_t window = std::max<uint64_t>(4096, capacity * 8);
    ReplayOptions options;
    options.object_size = 4096;
    options.capacity_bytes = capacity * options.object_size;
    options.knobs = {{"enable_offload", "true"},
                     {"offload_on_evict", "true"},
                     {"promotion_on_hit", promotion ? "true" : "false"},
                     {"promotion_sketch_window", std::to_string(window)}};
    options.knobs.insert(options.knobs.end(), knobs.begin(), knobs.end());
    Result<ReplayResult> store = RunStoreReplay(trace, options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    ReferenceLru reference(capacity * options.object_size, promotion, 2, window);
    RequestMeter meter;
    for (auto& r : trace) {
        std::vector<BlockSource> sources;
        for (size_t i = 0; i < r.blocks.size(); ++i) {
            sources.push_back(reference.Access(
                r.blocks[i], BlockBytes(r, i, options.block_tokens, options.object_size)));
        }
        meter.Add(r, sources);
    }
    return {store.ok() ? store->counts : SimCounts{}, reference.counts(),
            store.ok() ? store->requests : RequestFigures{}, meter.Figures()};
}

double MemHit(const SimCounts& c) {
    return static_cast<double>(c.mem_hits) / static_cast<double>(c.references);
}

TEST(StoreReplayTest, NoPromotionMatchesExactLru) {
    Yardsticks y = Compare(SyntheticTrace(3000, 1), 0.1, /*promotion=*/false);
    EXPECT_NEAR(MemHit(y.store), MemHit(y.reference), 0.015);
    EXPECT_EQ(y.store.misses, y.reference.misses);
    // The engine's view agrees too: the store's replay reports every request.
    EXPECT_EQ(y.store_requests.requests, 3000u);
    EXPECT_EQ(y.store_requests.reusing_requests, y.reference_requests.reusing_requests);
    EXPECT_NEAR(y.store_requests.prefix_mem_hit_ratio(),
                y.reference_requests.prefix_mem_hit_ratio(), 0.015);
    EXPECT_NEAR(y.store_requests.ttft_ms_mean, y.reference_requests.ttft_ms_mean,
                0.02 * y.reference_requests.ttft_ms_mean);
}

TEST(StoreReplayTest, PromotionMatchesReferenceLruWithPromotion) {
    Yardsticks y = Compare(SyntheticTrace(3000, 2), 0.1, /*promotion=*/true);
    EXPECT_GT(y.store.promotions, 0u);
    EXPECT_NEAR(MemHit(y.store), MemHit(y.reference), 0.01);
}

TEST(StoreReplayTest, PromotionRaisesMemoryHitsOverNoPromotion) {
    auto trace = SyntheticTrace(3000, 3);
    Yardsticks off = Compare(trace, 0.1, false);
    Yardsticks on = Compare(trace, 0.1, true);
    EXPECT_GT(MemHit(on.store), MemHit(off.store) + 0.02);
}

// The default gate (promotion_gate=adaptive) on workloads where the right gate is known:
// a loop larger than DRAM, where displacing for promotions thrashes (the no-promotion LRU
// keeps a fixed part and hits it), and Zipf popularity, where promoting every returning key
// (reference-lru) is right. On both the default stays within the suite's 0.005 of the
// better reference: on the loop it is warm after the first pass and, with no arm ahead yet,
// does not displace (so the second pass keeps the resident part).
// The default promotes until it has evidence against it: on a loop larger than DRAM that
// evidence arrives at the end of the second pass (the part `never` kept is read), so the store
// pays that pass and then stops displacing: of the 7 passes the no-promotion LRU hits in, it
// hits in the last 6.
TEST(StoreReplayTest, DefaultGateStopsDisplacingOnALoop) {
    constexpr int kPasses = 8;
    auto trace = LoopTrace(3000, kPasses);
    Yardsticks with = Compare(trace, 0.25, /*promotion=*/true);
    Yardsticks without = Compare(trace, 0.25, /*promotion=*/false);
    EXPECT_GT(MemHit(without.reference), MemHit(with.reference) + 0.05);  // the loop thrashes LRU
    EXPECT_GT(MemHit(with.store), MemHit(with.reference) + 0.1);
    EXPECT_GT(MemHit(with.store),
              MemHit(without.reference) * (kPasses - 2) / (kPasses - 1) - 0.005);
}

TEST(StoreReplayTest, DefaultGatePromotesOnZipf) {
    auto trace = ZipfTrace(8000, 60000, 0.9, 7);
    Yardsticks y = Compare(trace, 0.1, /*promotion=*/true);
    Yardsticks off = Compare(trace, 0.1, /*promotion=*/false);
    EXPECT_GT(MemHit(y.reference), MemHit(off.reference) + 0.05);  // promotion matters here
    EXPECT_GT(MemHit(y.store), MemHit(y.reference) - 0.005);
}

// --real-disk: LOCAL_DISK through the real DiskStore gives exactly the bookkeeping-only counts
// when the disk holds everything, every byte read back checks, and a disk smaller than the
// working set evicts (reported to the master) without errors.
TEST(StoreReplayTest, RealDiskMatchesBookkeepingAndEvictsWhenSmall) {
    auto trace = SyntheticTrace(600, 4);
    std::unordered_set<int64_t> distinct;
    for (auto& r : trace) distinct.insert(r.blocks.begin(), r.blocks.end());
    ReplayOptions options;
    options.object_size = 16384;
    options.capacity_bytes = distinct.size() / 10 * options.object_size;
    options.knobs = {{"enable_offload", "true"},
                     {"offload_on_evict", "true"},
                     {"promotion_on_hit", "true"}};
    Result<ReplayResult> plain = RunStoreReplay(trace, options);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();

    std::string tmpl = (std::filesystem::temp_directory_path() / "replay-disk-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    options.disk_dir = tmpl + "/big";
    options.disk_capacity = 256 << 20;
    Result<ReplayResult> real = RunStoreReplay(trace, options);
    ASSERT_TRUE(real.ok()) << real.status().ToString();
    EXPECT_EQ(real->counts.mem_hits, plain->counts.mem_hits);
    EXPECT_EQ(real->counts.disk_hits, plain->counts.disk_hits);
    EXPECT_EQ(real->counts.misses, plain->counts.misses);
    EXPECT_GT(real->disk.bytes_written, 0u);
    EXPECT_GT(real->disk.reads, 0u);
    EXPECT_EQ(real->disk.evictions, 0u);
    EXPECT_EQ(real->disk.corruptions + real->disk.content_mismatches + real->disk.read_failures,
              0u);

    options.disk_dir = tmpl + "/small";
    options.disk_capacity = 8 << 20;  // ~5 MiB of data: far less than the offloaded blocks
    Result<ReplayResult> small = RunStoreReplay(trace, options);
    ASSERT_TRUE(small.ok()) << small.status().ToString();
    EXPECT_GT(small->disk.evictions, 0u);
    EXPECT_LT(small->counts.disk_hits, plain->counts.disk_hits);
    EXPECT_EQ(small->counts.references, plain->counts.references);
    EXPECT_EQ(small->disk.corruptions + small->disk.content_mismatches +
                  small->disk.read_failures,
              0u);
    std::error_code ec;
    std::filesystem::remove_all(tmpl, ec);
}

// A request's last block holding input_length % 512 tokens is that share of a block, and the
// request's missed blocks are its put batch: the store is told the tail (as the daemon infers
// it) and lists it cold, which on request-shaped traffic keeps more of the reused blocks. The
// exact LRU counts the same bytes, so with the tails listed hot the store stays beside it.
TEST(StoreReplayTest, PartialTailsAreSmallerAndListedCold) {
    std::vector<TraceRequest> trace = SyntheticTrace(3000, 4);
    for (TraceRequest& r : trace) {
        r.input_length = static_cast<int64_t>(r.blocks.size()) * 512 - 1 -
                         static_cast<int64_t>(r.blocks.size() * 37 % 500);
    }
    EXPECT_EQ(BlockBytes(trace[0], trace[0].blocks.size() - 1, 512, 4096),
              (4096 * static_cast<uint64_t>(trace[0].input_length % 512) + 511) / 512);
    EXPECT_EQ(BlockBytes(trace[0], 0, 512, 4096), 4096u);
    Yardsticks cold = Compare(trace, 0.1, /*promotion=*/false);
    Yardsticks hot = Compare(trace, 0.1, /*promotion=*/false, {{"partial_tail_cold", "false"}});
    EXPECT_NEAR(MemHit(hot.store), MemHit(hot.reference), 0.015);
    EXPECT_GT(MemHit(cold.store), MemHit(hot.store));
}

// The judged figures on Mooncake's published trace (skipped when the trace is not beside
// the repository, as in CI's layout ../shared/traces).
TEST(StoreReplayTest, ConversationTraceAtTenPercentMeetsTheGoals) {
    const char* env = std::getenv("MOONCAKE_TRACE");
    std::string path = env ? env : std::string(MOONCAKE_SOURCE_DIR) +
                                       "/../shared/traces/conversation_trace.jsonl";
    if (!std::ifstream(path)) GTEST_SKIP() << "no trace at " << path;
    Result<std::vector<TraceRequest>> trace = ReadTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    Yardsticks off = Compare(*trace, 0.1, false);
    Yardsticks on = Compare(*trace, 0.1, true);
    EXPECT_NEAR(MemHit(off.store), MemHit(off.reference), 0.015);
    EXPECT_NEAR(MemHit(on.store), MemHit(on.reference), 0.01);
    EXPECT_GT(MemHit(on.store), 0.27);
}

}  // namespace
}  // namespace mooncake::replay
