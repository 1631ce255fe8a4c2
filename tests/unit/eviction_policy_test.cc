// eviction_policy=hit_density: the access classes, the estimator's scores, and the store
// evicting by them (core/master/eviction_policy.h).
#include "core/master/eviction_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>
#include <string>

#include "tests/unit/store_test_util.h"

namespace mooncake {
namespace {

using namespace std::chrono_literals;
using E = HitDensityEstimator;

PutHint Hint(int32_t pos, int32_t blocks, int32_t prefix_hit, bool last_partial) {
    PutHint h;
    h.position = pos;
    h.request_blocks = blocks;
    h.prefix_hit_blocks = prefix_hit;
    h.last_partial = last_partial;
    return h;
}

TEST(EvictionPolicyParse, NamesAndDefault) {
    EXPECT_EQ(ParseEvictionPolicy("lru"), EvictionPolicyKind::kLru);
    EXPECT_EQ(ParseEvictionPolicy("hit_density"), EvictionPolicyKind::kHitDensity);
    EXPECT_EQ(ParseEvictionPolicy("adaptive"), EvictionPolicyKind::kAdaptive);
    Config config;
    EXPECT_EQ(config.eviction_policy(), "lru");
    EXPECT_TRUE(config.Set("eviction_policy", "hit_density").ok());
    EXPECT_TRUE(config.Set("eviction_policy", "adaptive").ok());
    EXPECT_TRUE(config.Set("eviction_policy", "adaptive").ok());
    EXPECT_FALSE(config.Set("eviction_policy", "fifo").ok());
    // Start-only: the store reads it once.
    EXPECT_FALSE(config.Set("eviction_policy", "lru", SetMode::kRuntime).ok());
}

TEST(HitDensityClasses, FromAccessCountAndHint) {
    EXPECT_EQ(E::ClassOf(0, nullptr), E::kNoHint);
    PutHint none;
    EXPECT_EQ(E::ClassOf(0, &none), E::kNoHint);
    PutHint h = Hint(9, 10, 1, true);
    EXPECT_EQ(E::ClassOf(0, &h), E::kPartialLast);
    h = Hint(3, 10, 1, false);
    EXPECT_EQ(E::ClassOf(0, &h), E::kFirstSmall);
    h = Hint(40, 100, 0, false);
    EXPECT_EQ(E::ClassOf(0, &h), E::kFirstLarge);
    h = Hint(20, 21, 20, false);  // one new block
    EXPECT_EQ(E::ClassOf(0, &h), E::kCont + 0);
    h = Hint(20, 30, 20, false);  // ten new blocks
    EXPECT_EQ(E::ClassOf(0, &h), E::kCont + 2);
    h = Hint(20, 100, 20, false);
    EXPECT_EQ(E::ClassOf(0, &h), E::kCont + 3);
    // Re-reads are classed by their count alone; the hint describes the put only.
    EXPECT_EQ(E::ClassOf(1, &h), E::kReread1);
    EXPECT_EQ(E::ClassOf(2, nullptr), E::kReread1 + 1);
    EXPECT_EQ(E::ClassOf(3, nullptr), E::kReread1 + 2);
    EXPECT_EQ(E::ClassOf(1000, nullptr), E::kReread1 + 2);
    EXPECT_LT(E::kReread1 + 2, E::kClasses);
}

TEST(HitDensityBuckets, LogSpacedAndConsistent) {
    EXPECT_EQ(E::AgeBucket(0s), 0);
    EXPECT_EQ(E::AgeBucket(Nanos(-5)), 0);
    int prev = 0;
    for (int s = 0; s < 20000; s += 7) {
        int b = E::AgeBucket(std::chrono::seconds(s));
        EXPECT_GE(b, prev);
        prev = b;
    }
    EXPECT_EQ(E::AgeBucket(std::chrono::hours(1000000)), E::kAgeBuckets - 1);
    for (int b = 1; b < E::kAgeBuckets - 1; ++b) {
        EXPECT_EQ(E::AgeBucket(E::BucketStart(b) + 1ms), b) << b;
    }
}

TEST(HitDensityEstimator, NoDataMeansRecencyDecides) {
    E est;
    est.Rebuild();
    E::Table t = est.Snapshot();
    EXPECT_FALSE(t.ready);
    EXPECT_EQ(E::Score(t, E::kPartialLast, 10s), E::Score(t, E::kReread1, 10s));
}

TEST(HitDensityEstimator, ReusedClassOutranksDeadClass) {
    E est;
    for (int i = 0; i < 1000; ++i) {
        est.RecordAccess(E::kFirstSmall, 0);
        est.RecordReuse(E::kFirstSmall, 30s);  // every one re-read after 30 s
        est.RecordAccess(E::kPartialLast, 0);  // never re-read
        est.RecordEviction(60s);
    }
    est.Rebuild();
    E::Table t = est.Snapshot();
    ASSERT_TRUE(t.ready);
    EXPECT_GT(E::Score(t, E::kFirstSmall, 1s), E::Score(t, E::kPartialLast, 1s));
    EXPECT_EQ(E::Score(t, E::kPartialLast, 1s), 0.0);
    // Past its reuse gap the live class has nothing left to expect.
    EXPECT_LT(E::Score(t, E::kFirstSmall, 600s), E::Score(t, E::kFirstSmall, 1s));
    // A class never seen borrows the pooled estimate rather than looking dead or immortal.
    EXPECT_GT(E::Score(t, E::kCont + 1, 1s), 0.0);
    EXPECT_GT(est.Horizon(), 1s);
}

class HitDensityStoreTest : public testing::StoreFixture {
public:
    // DRAM for 64 objects over LOCAL_DISK (offload on evict: the master keeps the metadata of
    // evicted objects, so the reuse gaps of blocks read back from disk are learned too). Every second: a first-turn block that is read back 40 s
    // later and a request's last partial block that is never read again (the first read-back
    // comes from disk and may promote; the block is not read again). LRU holds ~32 s of
    // puts, so the read-back misses; dropping the dead blocks first makes room for 64 s.
    // Returns the MEMORY hits of the read-backs over the last `measured` seconds.
    int Run(int seconds, int measured) {
        node_ = AddNode("n1", 64 * kObject);
        return RunMore(seconds, measured);
    }
    // Continues Run's sequence for `seconds` more.
    int RunMore(int seconds, int measured) {
        const NodeId node = node_;
        constexpr int kGap = 40;
        int hits = 0;
        const int first = done_;
        done_ += seconds;
        seconds = done_;
        measured = std::min(measured, seconds - first);
        for (int i = first; i < seconds; ++i) {
            std::string live = "live-" + std::to_string(i);
            std::string dead = "dead-" + std::to_string(i);
            PutHint h_live = Hint(0, 4, 1, false);
            PutHint h_dead = Hint(3, 4, 1, true);
            for (auto [key, hint] : {std::pair{live, &h_live}, std::pair{dead, &h_dead}}) {
                Result<PutStartReply> start = store().PutStart(1, key, kObject, kNoNode, hint);
                while (!start.ok() && start.status().Is(StatusCode::kNoSpace) &&
                       RunOffloads(node) > 0) {
                    start = store().PutStart(1, key, kObject, kNoNode, hint);
                }
                EXPECT_TRUE(start.ok()) << start.status().ToString();
                if (!start.ok()) return -1;
                EXPECT_TRUE(store().PutEnd(1, key, start->generation).ok());
            }
            if (i >= kGap) {
                Result<ObjectView> got = store().GetReplicaList("live-" + std::to_string(i - kGap));
                if (i >= seconds - measured && got.ok() &&
                    got->replicas.front().tier == Tier::kMemory) {
                    ++hits;
                }
            }
            RunOffloads(node);
            RunPromotions(node);
            clock_.Advance(1s);
        }
        return hits;
    }

private:
    NodeId node_ = kNoNode;
    int done_ = 0;  // seconds run so far
};

TEST_F(HitDensityStoreTest, LruMissesTheReadBacks) {
    // Plain LRU: by default the hint's last_partial lists the dead blocks at the cold end
    // (partial_tail_cold, tests/unit/partial_tail_test.cc), which this workload rewards.
    config_.Set("partial_tail_cold", "false").ok();
    EXPECT_LT(Run(3000, 1000), 50);
}

TEST_F(HitDensityStoreTest, LruWithColdTailsKeepsTheReadBacks) {
    EXPECT_GT(Run(3000, 1000), 500);
}

TEST_F(HitDensityStoreTest, DroppingTheDeadClassFirstKeepsTheReadBacks) {
    config_.Set("eviction_policy", "hit_density").ok();
    EXPECT_GT(Run(3000, 1000), 400);  // 606 when written; LRU: under 50
}

// eviction_policy=adaptive: the store ranks by hit density only while the adaptive gate
// follows its density arm. Here the arm wins (it is HitDensityOrder's own case), so the gate
// follows it and the store keeps the read-backs as hit_density does.
TEST_F(HitDensityStoreTest, AdaptiveFollowsTheDensityArmWhereItWins) {
    ASSERT_TRUE(config_.Set("eviction_policy", "adaptive").ok());
    EXPECT_GT(Run(3000, 1000), 400);
    EXPECT_EQ(metrics_.Value("promotion_gate_arm", {{"arm", "density"}}).value_or(-1), 1);
}

// The same order while the gate is not consulted (promotion_gate=fixed): never followed, so
// the store evicts by recency alone, as LRU does: plain LRU's misses with the tails listed
// hot, LRU's read-backs with them listed cold (partial_tail_cold).
TEST_F(HitDensityStoreTest, AdaptiveIsLruWhileNotFollowed) {
    ASSERT_TRUE(config_.Set("eviction_policy", "adaptive").ok());
    ASSERT_TRUE(config_.Set("promotion_gate", "fixed").ok());
    ASSERT_TRUE(config_.Set("promotion_compare_victims", "false").ok());
    ASSERT_TRUE(config_.Set("partial_tail_cold", "false").ok());
    EXPECT_LT(Run(3000, 1000), 50);
    ASSERT_TRUE(config_.Set("partial_tail_cold", "true").ok());
    EXPECT_GT(RunMore(3000, 1000), 500);
}

// Following and leaving at runtime: with the gate turned off mid-run the store goes back to
// recency, and the read-backs are lost again.
TEST_F(HitDensityStoreTest, AdaptiveStopsRankingByDensityWhenLeft) {
    ASSERT_TRUE(config_.Set("eviction_policy", "adaptive").ok());
    ASSERT_GT(Run(3000, 1000), 400);
    ASSERT_TRUE(config_.Set("promotion_gate", "fixed", SetMode::kRuntime).ok());
    ASSERT_TRUE(config_.Set("promotion_compare_victims", "false", SetMode::kRuntime).ok());
    ASSERT_TRUE(config_.Set("partial_tail_cold", "false", SetMode::kRuntime).ok());  // plain LRU
    EXPECT_LT(RunMore(3000, 1000), 50);
}

// While not followed, eviction_policy=adaptive is exactly LRU (its per-class lists merged by
// recency): the same reads hit MEMORY at the same places as under lru.
class TierTrace : public testing::StoreFixture {
public:
    void TestBody() override {}
    std::vector<Tier> Run(const std::string& policy) {
        SetUp();
        EXPECT_TRUE(config_.Set("eviction_policy", policy).ok());
        EXPECT_TRUE(config_.Set("promotion_gate", "fixed").ok());
        EXPECT_TRUE(config_.Set("promotion_compare_victims", "false").ok());
        NodeId node = AddNode("n1", 32 * kObject);
        std::mt19937_64 rng(11);
        std::geometric_distribution<int> pick(0.02);
        std::vector<Tier> tiers;
        for (int i = 0; i < 4000; ++i) {
            std::string key = "k" + std::to_string(pick(rng) % 300);
            Result<ObjectView> got = store().GetReplicaList(key);
            if (got.ok()) {
                tiers.push_back(got->replicas.front().tier);
            } else {
                // Some are a batch's partial tail (partial_tail_cold lists them cold).
                PutHint tail;
                tail.last_partial = true;
                const PutHint* hint = i % 5 == 0 ? &tail : nullptr;
                Result<PutStartReply> start = store().PutStart(1, key, kObject, kNoNode, hint);
                while (!start.ok() && start.status().Is(StatusCode::kNoSpace) &&
                       RunOffloads(node) > 0) {
                    start = store().PutStart(1, key, kObject, kNoNode, hint);
                }
                EXPECT_TRUE(start.ok()) << start.status().ToString();
                if (start.ok()) {
                    EXPECT_TRUE(store().PutEnd(1, key, start->generation).ok());
                }
            }
            RunOffloads(node);
            RunPromotions(node);
            clock_.Advance(100ms);
        }
        return tiers;
    }
};

TEST(HitDensityAdaptiveOrder, NotFollowedIsExactlyLru) {
    std::vector<Tier> lru = TierTrace().Run("lru");
    std::vector<Tier> adaptive = TierTrace().Run("adaptive");
    std::vector<Tier> density = TierTrace().Run("hit_density");
    ASSERT_GT(lru.size(), 3000u);
    EXPECT_EQ(adaptive, lru);
    EXPECT_NE(density, lru);  // the sequence is one where the orders differ
}

TEST_F(HitDensityStoreTest, WorksWithOffloadAndWithoutHints) {
    config_.Set("eviction_policy", "hit_density").ok();
    NodeId node = AddNode("n1", 16 * kObject);
    for (int i = 0; i < 400; ++i) {
        std::string key = "k" + std::to_string(i);
        Result<PutStartReply> start = store().PutStart(1, key, kObject);
        while (!start.ok() && start.status().Is(StatusCode::kNoSpace) && RunOffloads(node) > 0) {
            start = store().PutStart(1, key, kObject);
        }
        ASSERT_TRUE(start.ok()) << start.status().ToString();
        ASSERT_TRUE(store().PutEnd(1, key, start->generation).ok());
        clock_.Advance(100ms);
        if (i % 3 == 0) (void)store().GetReplicaList("k" + std::to_string(i / 2));
        RunOffloads(node);
        RunPromotions(node);
    }
    MasterStore::Totals t = store().ComputeTotals();
    EXPECT_LE(t.dram_used, t.dram_capacity);
    EXPECT_EQ(t.objects, 400u);  // nothing lost: evicted objects live on LOCAL_DISK
}

}  // namespace
}  // namespace mooncake
