// Issue 5: promotion in a full cache — displacing colder objects, refusing when room cannot be
// had or the candidate is colder, retrying refused candidates, the byte budget, the proactive
// scan (v2), drop-source (v3), and the oscillation guard.
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class PromotionSteadyStateTest : public StoreFixture {
public:
    // A full DRAM of `n` objects m0..m(n-1), each read `reads` times, plus disk-only d0..d(k-1).
    NodeId FillAndSpill(int n, int reads, int disk_only) {
        NodeId node = AddNode("n1", static_cast<uint64_t>(n) * kObject);
        for (int i = 0; i < disk_only; ++i) {
            Put("d" + std::to_string(i));
            EXPECT_EQ(store().Evict("d" + std::to_string(i)).value(), ManualOutcome::kQueued);
            RunOffloads(node);
            EXPECT_EQ(TiersOf("d" + std::to_string(i)), std::vector<Tier>{Tier::kLocalDisk});
        }
        for (int i = 0; i < n; ++i) Put("m" + std::to_string(i));
        for (int r = 0; r < reads; ++r) {
            for (int i = 0; i < n; ++i) Read("m" + std::to_string(i));
        }
        RunOffloads(node);
        return node;
    }
    double Gated(const char* reason = "watermark_gated") {
        return Metric("promotion_failed_total", {{"reason", reason}});
    }
};

TEST_F(PromotionSteadyStateTest, PromotionInFullCacheDisplacesColderObjects) {
    NodeId node = FillAndSpill(4, 0, 1);  // MEMORY objects never read: estimate 0
    EXPECT_EQ(store().ComputeTotals().dram_used, 4 * kObject);
    Read("d0");
    Read("d0");
    EXPECT_EQ(Metric("promotion_queued_total"), 1);
    EXPECT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(TiersOf("d0").front(), Tier::kMemory);
    EXPECT_EQ(store().ComputeTotals().dram_used, 4 * kObject);  // still full: DRAM used
    ExpectInvariants();
}

TEST_F(PromotionSteadyStateTest, ColderCandidateThanVictimsIsRefusedAndRemembered) {
    config_.Set("promotion_gate", "fixed").ok();  // promotion_compare_victims decides
    FillAndSpill(4, 5, 1);  // MEMORY objects read 5 times each
    Read("d0");
    Read("d0");  // estimate 2 < 5
    EXPECT_EQ(Metric("promotion_queued_total"), 0);
    EXPECT_EQ(Gated("victims_hotter"), 1);
    EXPECT_EQ(Gated(), 0);
    ExpectInvariants();
}

TEST_F(PromotionSteadyStateTest, PromotionRefusedWhenEverythingEvictableIsLeased) {
    config_.Set("lease_blocks_eviction", "true").ok();  // leases make DRAM unevictable
    config_.Set("default_kv_lease_ttl", "60000").ok();
    FillAndSpill(4, 1, 1);  // the reads leased every MEMORY object for a minute
    Read("d0");
    Read("d0");
    EXPECT_EQ(Metric("promotion_queued_total"), 0);
    EXPECT_EQ(Gated("no_room"), 1);
    EXPECT_EQ(Gated(), 0);
    ExpectInvariants();
}

TEST_F(PromotionSteadyStateTest, RefusedCandidateIsRetriedWhenRoomAppears) {
    config_.Set("lease_blocks_eviction", "true").ok();  // leases make DRAM unevictable
    config_.Set("default_kv_lease_ttl", "60000").ok();
    NodeId node = FillAndSpill(4, 1, 1);
    Read("d0");
    Read("d0");
    ASSERT_EQ(Gated("no_room"), 1);
    EXPECT_EQ(store().RetryRefusedCandidates(), 0u);  // not due yet, and still no room
    ASSERT_TRUE(store().Remove("m0", /*force=*/true).ok());  // room appears
    clock_.Advance(std::chrono::milliseconds(100));
    EXPECT_EQ(store().RetryRefusedCandidates(), 1u);
    EXPECT_EQ(Metric("promotion_retried_total"), 1);
    EXPECT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(TiersOf("d0").front(), Tier::kMemory);
    ExpectInvariants();
}

TEST_F(PromotionSteadyStateTest, RefusedCandidatesExpireAndAreBounded) {
    config_.Set("lease_blocks_eviction", "true").ok();  // leases make DRAM unevictable
    config_.Set("default_kv_lease_ttl", "60000").ok();
    config_.Set("promotion_retry_limit", "2").ok();
    config_.Set("promotion_retry_ttl_ms", "1000").ok();
    FillAndSpill(2, 1, 3);
    for (int i = 0; i < 3; ++i) {
        Read("d" + std::to_string(i));
        Read("d" + std::to_string(i));
    }
    EXPECT_EQ(Gated("no_room"), 3);
    clock_.Advance(std::chrono::seconds(2));  // past the TTL: forgotten, nothing retried
    ASSERT_TRUE(store().Remove("m0", true).ok());
    EXPECT_EQ(store().RetryRefusedCandidates(), 0u);
    EXPECT_EQ(Metric("promotion_queued_total"), 0);
}

TEST_F(PromotionSteadyStateTest, StrictWatermarkKnobRefusesAtHighWatermark) {
    config_.Set("promotion_strict_watermark", "true").ok();
    FillAndSpill(4, 0, 1);
    Read("d0");
    Read("d0");
    EXPECT_EQ(Metric("promotion_queued_total"), 0);
    EXPECT_EQ(Gated(), 1);
}

TEST_F(PromotionSteadyStateTest, ByteBudgetCapsPromotionsInFlight) {
    config_.Set("promotion_inflight_bytes_limit", std::to_string(2 * kObject)).ok();
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId node = AddNode("n1", 64 * kObject);
    for (int i = 0; i < 4; ++i) {
        std::string key = "d" + std::to_string(i);
        Put(key);
        store().Evict(key).ok();
    }
    RunOffloads(node);
    for (int i = 0; i < 4; ++i) Read("d" + std::to_string(i));
    EXPECT_EQ(Metric("promotion_queued_total"), 2);
    EXPECT_EQ(Metric("promotion_failed_total", {{"reason", "queue_full"}}), 2);
    ExpectInvariants(2, 2);
    EXPECT_EQ(RunPromotions(node), 2u);
    ExpectInvariants();
}

TEST_F(PromotionSteadyStateTest, ProactiveScanPromotesHotDiskKeysWithoutAnotherGet) {
    config_.Set("promotion_on_hit", "true").ok();
    config_.Set("promotion_admission_threshold", "255").ok();  // hits never promote
    config_.Set("proactive_promotion_threshold", "3").ok();
    NodeId node = AddNode("n1", 64 * kObject);
    for (int i = 0; i < 3; ++i) {
        std::string key = "d" + std::to_string(i);
        Put(key);
        store().Evict(key).ok();
    }
    RunOffloads(node);
    for (int r = 0; r < 3; ++r) Read("d0");  // hot
    Read("d1");                              // lukewarm
    EXPECT_EQ(Metric("promotion_queued_total"), 0);
    EXPECT_EQ(store().ProactivePromotionScan(), 1u);
    EXPECT_EQ(Metric("promotion_proactive_total"), 1);
    EXPECT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(TiersOf("d0").front(), Tier::kMemory);
    EXPECT_EQ(TiersOf("d1"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(TiersOf("d2"), std::vector<Tier>{Tier::kLocalDisk});
    ExpectInvariants();
}

TEST_F(PromotionSteadyStateTest, ProactiveScanRunsFromTickOnlyWhenEnabled) {
    config_.Set("promotion_admission_threshold", "255").ok();
    config_.Set("proactive_promotion_threshold", "2").ok();
    NodeId node = AddNode("n1", 64 * kObject);
    Put("d0");
    store().Evict("d0").ok();
    RunOffloads(node);
    Read("d0");
    Read("d0");
    store().Tick();
    EXPECT_EQ(Metric("promotion_queued_total"), 0);
    config_.Set("proactive_promotion", "true").ok();
    clock_.Advance(std::chrono::seconds(2));
    store().Tick();
    EXPECT_EQ(Metric("promotion_queued_total"), 1);
}

TEST_F(PromotionSteadyStateTest, DropSourceRemovesDiskCopyAfterCommit) {
    config_.Set("promotion_drop_source", "true").ok();
    NodeId node = AddNode("n1", 64 * kObject);
    Put("d0");
    store().Evict("d0").ok();
    RunOffloads(node);
    Read("d0");
    Read("d0");
    EXPECT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(TiersOf("d0"), std::vector<Tier>{Tier::kMemory});
    Result<HeartbeatReply> beat = store().Heartbeat(node);
    ASSERT_TRUE(beat.ok());
    ASSERT_EQ(beat->disk_deletes.size(), 1u);  // the node is told to free the space
    EXPECT_EQ(beat->disk_deletes[0].key, "d0");
    ExpectInvariants();
}

// With offload-on-evict and promotion both on, a key read just often enough must not bounce
// between tiers on every access: admission compares it with what it would displace.
// d0 is read every other round, the hot MEMORY keys every round: d0 is the colder one.
double PromotionsWhileColdKeyCompetes(PromotionSteadyStateTest& t, NodeId node,
                                      int rounds = 20) {
    const double before = t.Metric("promotion_completed_total");
    for (int round = 0; round < rounds; ++round) {
        for (int i = 0; i < 4; ++i) t.Read("m" + std::to_string(i));
        if (round % 2 == 0) t.Read("d0");
        t.RunPromotions(node);
        t.RunOffloads(node);
    }
    return t.Metric("promotion_completed_total") - before;
}

TEST_F(PromotionSteadyStateTest, OscillationGuardKeepsColdKeyFromBouncing) {
    config_.Set("promotion_gate", "fixed").ok();  // promotion_compare_victims: the guard
    NodeId node = FillAndSpill(4, 4, 1);
    EXPECT_EQ(PromotionsWhileColdKeyCompetes(*this, node), 0)
        << "the colder key displaced hot ones";
}

// The default gate promotes until it has evidence: the bouncing costs hits in its
// simulations, and once that is significant it stops displacing.
TEST_F(PromotionSteadyStateTest, AdaptiveGateStopsTheBounceOnEvidence) {
    NodeId node = FillAndSpill(4, 4, 1);
    EXPECT_GT(PromotionsWhileColdKeyCompetes(*this, node, 40), 0) << "promotes at first";
    EXPECT_NE(Metric("promotion_gate_arm", {{"arm", "always"}}), 1);
    EXPECT_EQ(PromotionsWhileColdKeyCompetes(*this, node, 20), 0) << "still bouncing";
}

TEST_F(PromotionSteadyStateTest, WithoutTheGuardKeysDoBounce) {
    config_.Set("promotion_gate", "fixed").ok();  // the operator's knob, not the adaptive gate
    config_.Set("promotion_compare_victims", "false").ok();
    NodeId node = FillAndSpill(4, 4, 1);
    EXPECT_GT(PromotionsWhileColdKeyCompetes(*this, node), 5);
}

}  // namespace
}  // namespace mooncake::testing
