// The RFC's contract with default knobs (core/master/promotion_pipeline.h): a LOCAL_DISK-only key
// read promotion_admission_threshold times is promoted unless an interlock says no or the
// adaptive gate has evidence against it; every attempt ends in one outcome, counted under its
// own name and remembered for `stat`; keys read in one batch are promoted as a chain.
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class PromotionContractTest : public StoreFixture {
public:
    std::optional<PromotionOutcome> LastOutcome(const std::string& key) {
        Result<ObjectView> view = store().Stat(key);
        if (!view.ok() || !view->last_promotion) return std::nullopt;
        return view->last_promotion->outcome;
    }
    // promotion_attempts_total against the sum of every attempt outcome's counter.
    void ExpectAttemptsAddUp() {
        double sum = Metric("promotion_queued_total") + Metric("promotion_deduplicated_total");
        for (const char* reason : {"admission_gated", "watermark_gated", "no_room",
                                   "victims_hotter", "gate_refused", "queue_full", "stale"}) {
            sum += Failed(reason);
        }
        EXPECT_GT(Metric("promotion_attempts_total"), 0);
        EXPECT_EQ(Metric("promotion_attempts_total"), sum);
    }
    void ReadTimes(const std::string& key, int times) {
        for (int i = 0; i < times; ++i) Read(key);
    }
};

// A small store that has served plenty of MEMORY reads (the adaptive gate is warm and has
// seen no evidence either way): hot LOCAL_DISK keys are promoted, displacing cold ones.
// Before the contract, a warm gate without evidence followed `never` and refused them all.
TEST_F(PromotionContractTest, HotKeysOnASmallWarmStoreArePromoted) {
    NodeId node = AddNode("n1", 16 * kObject);
    for (int i = 0; i < 16; ++i) PutOnDisk("d" + std::to_string(i), node);
    for (int i = 0; i < 16; ++i) Put("m" + std::to_string(i));
    for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < 16; ++i) Read("m" + std::to_string(i));
    }
    const int threshold = static_cast<int>(config_.promotion_admission_threshold());
    for (int i = 0; i < 5; ++i) ReadTimes("d" + std::to_string(i), threshold);
    EXPECT_EQ(Failed("gate_refused"), 0);
    // The byte budget (a quarter of DRAM: 4 objects) holds the fifth back; it is retried as
    // soon as the first ones commit, without another read.
    EXPECT_EQ(Metric("promotion_queued_total"), 4);
    EXPECT_EQ(Failed("queue_full"), 1);
    Drain(node);
    clock_.Advance(std::chrono::milliseconds(100));
    EXPECT_EQ(store().RetryRefusedCandidates(), 1u);
    Drain(node);
    for (int i = 0; i < 5; ++i) {
        const std::string key = "d" + std::to_string(i);
        ASSERT_FALSE(TiersOf(key).empty()) << key;
        EXPECT_EQ(TiersOf(key).front(), Tier::kMemory) << key;
        EXPECT_EQ(LastOutcome(key), PromotionOutcome::kCompleted) << key;
    }
    for (int i = 5; i < 16; ++i) {
        EXPECT_EQ(TiersOf("d" + std::to_string(i)), std::vector<Tier>{Tier::kLocalDisk});
    }
    ExpectAttemptsAddUp();
    ExpectInvariants();
}

// Each kind of refusal, forced one by one: counted under its own reason, named by Stat, and
// the outcomes add up to the attempts.
TEST_F(PromotionContractTest, EveryRefusalHasItsOwnReasonAndTheyAddUp) {
    NodeId node = AddNode("n1", 8 * kObject);
    for (int i = 0; i < 8; ++i) PutOnDisk("d" + std::to_string(i), node);
    for (int i = 0; i < 8; ++i) Put("m" + std::to_string(i));
    ASSERT_TRUE(config_.Set("promotion_inflight_bytes_limit", "1MiB").ok());

    Read("d0");  // one read of two
    EXPECT_EQ(LastOutcome("d0"), PromotionOutcome::kAdmissionGated);

    ReadTimes("d1", 2);
    EXPECT_EQ(LastOutcome("d1"), PromotionOutcome::kQueued);
    Read("d1");  // its task is in flight
    EXPECT_EQ(LastOutcome("d1"), PromotionOutcome::kDeduplicated);

    ASSERT_TRUE(config_.Set("lease_blocks_eviction", "true").ok());  // leases make DRAM unevictable
    ASSERT_TRUE(config_.Set("default_kv_lease_ttl", "60000").ok());
    for (int i = 0; i < 8; ++i) Read("m" + std::to_string(i));  // every victim leased
    ReadTimes("d2", 2);
    EXPECT_EQ(LastOutcome("d2"), PromotionOutcome::kNoRoom);
    ASSERT_TRUE(config_.Set("default_kv_lease_ttl", "0").ok());
    clock_.Advance(std::chrono::seconds(61));

    ASSERT_TRUE(config_.Set("promotion_gate", "fixed").ok());  // promotion_compare_victims decides
    for (int r = 0; r < 4; ++r) {
        for (int i = 0; i < 8; ++i) Read("m" + std::to_string(i));
    }
    ReadTimes("d3", 2);
    EXPECT_EQ(LastOutcome("d3"), PromotionOutcome::kVictimsHotter);
    ASSERT_TRUE(config_.Set("promotion_gate", "adaptive").ok());

    ASSERT_TRUE(config_.Set("promotion_strict_watermark", "true").ok());
    ReadTimes("d4", 2);
    EXPECT_EQ(LastOutcome("d4"), PromotionOutcome::kWatermarkGated);
    ASSERT_TRUE(config_.Set("promotion_strict_watermark", "false").ok());

    ASSERT_TRUE(config_.Set("promotion_queue_limit", "1").ok());  // d1's task holds the one slot
    ReadTimes("d5", 2);
    EXPECT_EQ(LastOutcome("d5"), PromotionOutcome::kQueueFull);
    ASSERT_TRUE(config_.Set("promotion_queue_limit", "50000").ok());

    for (const char* reason : {"admission_gated", "no_room", "victims_hotter", "watermark_gated",
                               "queue_full"}) {
        EXPECT_GE(Failed(reason), 1) << reason;
    }
    EXPECT_EQ(Metric("promotion_deduplicated_total"), 1);
    ExpectAttemptsAddUp();
    Drain(node);
    EXPECT_EQ(LastOutcome("d1"), PromotionOutcome::kCompleted);
    ExpectAttemptsAddUp();
    ExpectInvariants();
}

// A loop over more keys than DRAM holds (with its part in MEMORY read too): promoting every
// returning key evicts the next ones to be read, and the gate's simulations show it within a
// pass. From then on it refuses, counted as gate_refused, not as a watermark.
TEST_F(PromotionContractTest, EvidenceAgainstPromotingIsCountedAsGateRefused) {
    constexpr int kDram = 20;
    NodeId node = AddNode("n1", kDram * kObject);
    for (int i = 0; i < 60; ++i) PutOnDisk("k" + std::to_string(i), node);
    PutOnDisk("x", node);
    for (int i = 0; i < kDram; ++i) Put("m" + std::to_string(i));
    for (int pass = 0; pass < 3; ++pass) {
        for (int i = 0; i < 60; ++i) Read("k" + std::to_string(i));
        for (int i = 0; i < kDram; ++i) Read("m" + std::to_string(i));
    }
    EXPECT_EQ(Metric("promotion_gate_arm", {{"arm", "never"}}), 1);
    EXPECT_GT(Failed("gate_refused"), 0);
    EXPECT_EQ(Failed("watermark_gated"), 0);
    ReadTimes("x", 2);
    EXPECT_EQ(LastOutcome("x"), PromotionOutcome::kGateRefused);
    Result<ObjectView> view = store().Stat("x");
    ASSERT_TRUE(view.ok() && view->last_promotion);
    EXPECT_EQ(view->last_promotion->threshold, 2u);
    EXPECT_GE(view->last_promotion->reads, 2u);
    ExpectAttemptsAddUp();
}

// A batch read (an engine's request, in prefix order) whose blocks are admitted is promoted
// as one chain: one room decision, judged at the head, and the tasks queued in the batch's
// order. Read key by key, the same blocks leave holes: the colder tail is refused.
TEST_F(PromotionContractTest, BatchReadPromotesItsPrefixAsOneChainInOrder) {
    ASSERT_TRUE(config_.Set("promotion_gate", "fixed").ok());  // compare victims: the per-key gate
    ASSERT_TRUE(config_.Set("promotion_inflight_bytes_limit", "1MiB").ok());
    NodeId node = AddNode("n1", 8 * kObject);
    const std::vector<std::string> chain{"c0", "c1", "c2", "c3"};
    const std::vector<std::string> keys{"k0", "k1", "k2", "k3"};
    for (const std::string& key : chain) PutOnDisk(key, node);
    for (const std::string& key : keys) PutOnDisk(key, node);
    for (int i = 0; i < 8; ++i) Put("m" + std::to_string(i));
    for (int r = 0; r < 2; ++r) {
        for (int i = 0; i < 8; ++i) Read("m" + std::to_string(i));  // victims read twice
    }
    // Key by key: the head read three times, the rest twice (as often as the victims).
    Read("k0");
    for (const std::string& key : keys) ReadTimes(key, 2);
    EXPECT_EQ(LastOutcome("k0"), PromotionOutcome::kQueued);
    for (size_t i = 1; i < keys.size(); ++i) {
        EXPECT_EQ(LastOutcome(keys[i]), PromotionOutcome::kVictimsHotter) << keys[i];
    }
    // The same counts through batch reads: the whole prefix is admitted.
    const double queued_before = Metric("promotion_queued_total");
    Read("c0");
    for (int r = 0; r < 2; ++r) (void)store().BatchGetReplicaList(chain);
    EXPECT_EQ(Metric("promotion_queued_total") - queued_before, 4);
    for (const std::string& key : chain) {
        EXPECT_EQ(LastOutcome(key), PromotionOutcome::kQueued) << key;
    }
    // Handed to the holder in the batch's order (k0's task came first).
    std::vector<PromotionTask> tasks = store().PromotionObjectHeartbeat(node, 16);
    ASSERT_EQ(tasks.size(), 5u);
    EXPECT_EQ(tasks[0].key, "k0");
    for (size_t i = 0; i < chain.size(); ++i) EXPECT_EQ(tasks[i + 1].key, chain[i]);
    ExpectAttemptsAddUp();
}

}  // namespace
}  // namespace mooncake::testing
