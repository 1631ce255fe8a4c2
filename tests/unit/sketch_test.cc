// Issue 4: the count-min admission sketch — depth 4, saturating 8-bit counters, never an
// underestimate, halving after an aging window (amortized), lock-free under threads; and the
// store's window default that scales with DRAM capacity in objects.
#include "core/master/admission_sketch.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/store_test_util.h"

namespace mooncake {
namespace {

constexpr uint64_t kNoAging = uint64_t{1} << 62;

uint64_t H(const std::string& key) { return AdmissionSketch::Hash(key); }

TEST(AdmissionSketchTest, WidthIsAPowerOfTwoOfAtLeast64) {
    EXPECT_EQ(AdmissionSketch(1).width(), 64u);
    EXPECT_EQ(AdmissionSketch(100).width(), 128u);
    EXPECT_EQ(AdmissionSketch(1024).width(), 1024u);
}

TEST(AdmissionSketchTest, HashIsStableAndSpreads) {
    EXPECT_EQ(H("abc"), H("abc"));
    EXPECT_NE(H("abc"), H("abd"));
    EXPECT_NE(H(""), H(std::string(1, '\0')));  // length is mixed in
}

TEST(AdmissionSketchTest, IncrementReturnsTheRunningEstimate) {
    AdmissionSketch s(1 << 16);
    s.set_window(kNoAging);
    EXPECT_EQ(s.Estimate(H("k")), 0u);
    for (uint32_t i = 1; i <= 10; ++i) EXPECT_EQ(s.Increment(H("k")), i);
    EXPECT_EQ(s.Estimate(H("k")), 10u);
    EXPECT_EQ(s.Estimate(H("other")), 0u);
}

TEST(AdmissionSketchTest, CountersSaturateAt255) {
    AdmissionSketch s(1 << 10);
    s.set_window(kNoAging);
    uint32_t last = 0;
    for (int i = 0; i < 400; ++i) last = s.Increment(H("hot"));
    EXPECT_EQ(last, 255u);
    EXPECT_EQ(s.Estimate(H("hot")), 255u);
}

// Count-min's promise: an estimate is never below the true count, collisions only add.
TEST(AdmissionSketchTest, NeverUnderestimatesEvenWhenCrowded) {
    AdmissionSketch s(64);  // 64 x 4 counters for 2000 keys: heavy collisions
    s.set_window(kNoAging);
    std::mt19937 rng(3);
    std::map<std::string, uint32_t> truth;
    for (int i = 0; i < 20000; ++i) {
        std::string key = "k" + std::to_string(rng() % 2000);
        s.Increment(H(key));
        ++truth[key];
    }
    for (auto& [key, count] : truth) {
        EXPECT_GE(s.Estimate(H(key)), std::min<uint32_t>(count, 255)) << key;
    }
}

TEST(AdmissionSketchTest, WideSketchIsExactForFewKeys) {
    AdmissionSketch s(1 << 20);
    s.set_window(kNoAging);
    for (int k = 0; k < 100; ++k) {
        for (int i = 0; i <= k % 50; ++i) s.Increment(H("key" + std::to_string(k)));
    }
    int exact = 0;
    for (int k = 0; k < 100; ++k) {
        exact += s.Estimate(H("key" + std::to_string(k))) == static_cast<uint32_t>(k % 50 + 1);
    }
    EXPECT_GE(exact, 99);
}

TEST(AdmissionSketchTest, AgeNowHalvesEveryCounter) {
    AdmissionSketch s(1 << 10);
    s.set_window(kNoAging);
    for (int i = 0; i < 10; ++i) s.Increment(H("a"));
    for (int i = 0; i < 300; ++i) s.Increment(H("b"));
    s.AgeNow();
    EXPECT_EQ(s.Estimate(H("a")), 5u);
    EXPECT_EQ(s.Estimate(H("b")), 127u);
    EXPECT_EQ(s.agings(), 1u);
    s.AgeNow();
    s.AgeNow();
    s.AgeNow();
    EXPECT_EQ(s.Estimate(H("a")), 0u);
}

// After `window` increments the counters are halved, a chunk per later increment, so no
// single increment pays for a sweep of the whole table.
TEST(AdmissionSketchTest, WindowTriggersAmortizedHalving) {
    AdmissionSketch s(1024);  // 4096 counters: a sweep takes 16 increments of 256 each
    s.set_window(100);
    EXPECT_EQ(s.window(), 100u);
    for (int i = 0; i < 40; ++i) s.Increment(H("a"));
    for (int i = 0; i < 59; ++i) s.Increment(H("b"));
    EXPECT_EQ(s.agings(), 0u);
    EXPECT_EQ(s.Estimate(H("a")), 40u);
    s.Increment(H("b"));  // the 100th: the aging starts
    EXPECT_EQ(s.agings(), 1u);
    for (int i = 0; i < 16; ++i) s.Increment(H("c"));  // the sweep completes
    EXPECT_EQ(s.Estimate(H("a")), 20u);
    EXPECT_EQ(s.agings(), 1u);
    // set_window(0) keeps the current window.
    s.set_window(0);
    EXPECT_EQ(s.window(), 100u);
}

TEST(AdmissionSketchTest, ConcurrentIncrementsAreNotLost) {
    AdmissionSketch s(1 << 16);
    s.set_window(kNoAging);
    constexpr int kThreads = 4;
    constexpr int kEach = 50;  // 200 in all, below saturation
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i) {
                s.Increment(H("shared"));
                s.Increment(H("own" + std::to_string(t)));
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(s.Estimate(H("shared")), static_cast<uint32_t>(kThreads * kEach));
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(s.Estimate(H("own" + std::to_string(t))), 50u);
}

// Each thread folds its count into the shared one every 64 increments: concurrent readers
// still age once per `window` increments, give or take what the other threads have not
// folded yet.
TEST(AdmissionSketchTest, ConcurrentIncrementsAgeOncePerWindow) {
    AdmissionSketch s(1024);
    s.set_window(1000);
    constexpr int kThreads = 4;
    constexpr int kEach = 2500;  // 10000 increments: 10 windows
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i) s.Increment(H("k" + std::to_string(t * kEach + i)));
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_LE(s.agings(), 10u);
    EXPECT_GE(s.agings(), 9u) << "more than the unfolded shares (< 64 per thread) went uncounted";
}

// ---------------- an object's own count ----------------

TEST(AccessCountTest, CountsHalvesLazilyAtEachAgingAndSaturates) {
    AccessCount c;
    EXPECT_EQ(c.Read(0), 0u);
    for (uint32_t i = 1; i <= 12; ++i) EXPECT_EQ(c.Increment(0), i);
    EXPECT_EQ(c.Read(1), 6u) << "one aging halves it";
    EXPECT_EQ(c.Read(3), 1u) << "three agings: 12 >> 3";
    EXPECT_EQ(c.Increment(2), 4u) << "counted after two agings: 12 >> 2, plus this read";
    EXPECT_EQ(c.Read(2), 4u);
    EXPECT_EQ(c.Read(10), 0u) << "eight agings or more leave nothing";
    for (int i = 0; i < 300; ++i) c.Increment(10);
    EXPECT_EQ(c.Read(10), 255u) << "saturates as the sketch's counters do";
    c.Set(7, 11);
    EXPECT_EQ(c.Read(11), 7u);
}

// ---------------- the store's use of it ----------------

class SketchWindowTest : public testing::StoreFixture {};

// The window's default is 8 x DRAM capacity in objects (at least 4096): with 1024 objects of
// DRAM the counters halve after 8192 reads. A fixed knob value overrides it.
TEST_F(SketchWindowTest, DefaultWindowScalesWithDramCapacityInObjects) {
    config_.Set("promotion_sketch_width", "1024").ok();  // sweeps complete in 16 reads
    AddNode("n1", 1024 * kObject);
    Put("hot");
    Put("filler");
    store().Tick();  // sizes the window from what DRAM holds
    for (int i = 0; i < 10; ++i) ASSERT_EQ(Get("hot"), StatusCode::kOk);
    for (int i = 0; i < 8100; ++i) ASSERT_EQ(Get("filler"), StatusCode::kOk);
    EXPECT_EQ(store().Stat("hot")->sketch_estimate, 10u) << "aged before 8 x 1024 reads";
    for (int i = 0; i < 100; ++i) ASSERT_EQ(Get("filler"), StatusCode::kOk);
    EXPECT_EQ(store().Stat("hot")->sketch_estimate, 5u) << "not aged after 8 x 1024 reads";
}

TEST_F(SketchWindowTest, WindowKnobOverridesTheDefault) {
    config_.Set("promotion_sketch_width", "1024").ok();
    config_.Set("promotion_sketch_window", "100").ok();
    AddNode("n1", 1024 * kObject);
    Put("hot");
    Put("filler");
    store().Tick();
    for (int i = 0; i < 10; ++i) ASSERT_EQ(Get("hot"), StatusCode::kOk);
    for (int i = 0; i < 110; ++i) ASSERT_EQ(Get("filler"), StatusCode::kOk);
    EXPECT_EQ(store().Stat("hot")->sketch_estimate, 5u);
}

// A key the master holds counts its own reads: a cold key whose four sketch counters all
// coincide with a hot key's is not credited with the hot key's reads.
TEST_F(SketchWindowTest, AnObjectIsNotCreditedWithTheReadsOfAKeySharingItsCounters) {
    // The narrowest sketch the knob allows (64 cache lines), so a colliding key is found fast.
    ASSERT_TRUE(config_.Set("promotion_sketch_width", "1024").ok());
    AdmissionSketch probe(1024);
    probe.Increment(H("hot"));
    std::string cold;
    for (int i = 0; cold.empty(); ++i) {  // ~1 key in 4 M shares all four counters
        std::string k = "cold" + std::to_string(i);
        if (probe.Estimate(H(k)) == 1) cold = k;
    }
    AddNode("n1", 16 * kObject);
    Put("hot");
    Put(cold);
    for (int i = 0; i < 20; ++i) ASSERT_EQ(Get("hot"), StatusCode::kOk);
    EXPECT_EQ(store().Stat("hot")->sketch_estimate, 20u);
    EXPECT_EQ(store().Stat(cold)->sketch_estimate, 0u) << cold << " shares hot's counters";
    ASSERT_EQ(Get(cold), StatusCode::kOk);
    EXPECT_EQ(store().Stat(cold)->sketch_estimate, 1u);
}

// The reads of a key before it exists (misses) and of its earlier incarnations count for it.
TEST_F(SketchWindowTest, MissesAndAnEarlierIncarnationsReadsCarryOver) {
    AddNode("n1", 16 * kObject);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(Get("k"), StatusCode::kNotFound);
    Put("k");
    EXPECT_EQ(store().Stat("k")->sketch_estimate, 3u) << "the misses before the Put";
    for (int i = 0; i < 4; ++i) ASSERT_EQ(Get("k"), StatusCode::kOk);
    ASSERT_TRUE(store().Remove("k", /*force=*/true).ok());
    Put("k");
    EXPECT_EQ(store().Stat("k")->sketch_estimate, 7u) << "the removed incarnation's reads";
}

TEST_F(SketchWindowTest, SketchCountsOnlyWithPromotionOnHit) {
    config_.Set("promotion_on_hit", "false").ok();
    AddNode("n1", 16 * kObject);
    Put("k");
    for (int i = 0; i < 5; ++i) ASSERT_EQ(Get("k"), StatusCode::kOk);
    EXPECT_EQ(store().Stat("k")->sketch_estimate, 0u);
    config_.Set("promotion_on_hit", "true").ok();
    for (int i = 0; i < 5; ++i) ASSERT_EQ(Get("k"), StatusCode::kOk);
    EXPECT_EQ(store().Stat("k")->sketch_estimate, 5u);
}

}  // namespace
}  // namespace mooncake
