// Issue 4: promotion cleanup on every path — failure (repeated), Remove before and after
// AllocStart, the key removed and put again, the reaper, node expiry of the holder and of the
// staging's node, the node losing the source, and the source staying pinned meanwhile.
// After each: DRAM used, pins and task counts are back, and the funnel holds.
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class PromotionCleanupTest : public StoreFixture {
public:
    // One node, "d" LOCAL_DISK-only on its disk, a promotion task delivered to the node.
    void StartOneNode(bool stage) {
        node_ = AddNode("n1", 16 * kObject);
        PutOnDisk("d", node_);
        Trigger("d");
        Take("d", node_, stage);
    }
    void Trigger(const std::string& key) {
        ASSERT_EQ(Get(key), StatusCode::kOk);
        ASSERT_EQ(Get(key), StatusCode::kOk);
        ASSERT_EQ(store().Stat(key)->promotion_in_flight, true);
    }
    void Take(const std::string& key, NodeId holder, bool stage) {
        std::vector<PromotionTask> tasks = store().PromotionObjectHeartbeat(holder, 100);
        ASSERT_EQ(tasks.size(), 1u);
        ASSERT_EQ(tasks[0].key, key);
        task_ = tasks[0];
        if (stage) {
            Result<ReplicaDesc> r =
                store().PromotionAllocStart(holder, key, task_.generation, task_.size);
            ASSERT_TRUE(r.ok()) << r.status().ToString();
            staging_ = *r;
        }
    }
    double Cancelled() { return Metric("promotion_cancelled_total"); }
    double Expired() { return Metric("promotion_expired_total"); }

    NodeId node_ = kNoNode;
    PromotionTask task_;
    ReplicaDesc staging_;
};

// ---------------- failure ----------------

TEST_F(PromotionCleanupTest, PromotionFailureNotifiedTwiceIsCountedOnce) {
    StartOneNode(/*stage=*/true);
    EXPECT_EQ(DramUsed(), kObject);
    ASSERT_TRUE(store().NotifyPromotionFailure(node_, "d", task_.generation).ok());
    EXPECT_TRUE(store().NotifyPromotionFailure(node_, "d", task_.generation).ok());
    EXPECT_EQ(Failed("io_failed"), 1);
    EXPECT_EQ(DramUsed(), 0u) << "staging not freed";
    EXPECT_EQ(PinsOf("d"), 0u);
    EXPECT_TRUE(store().Tasks().empty());
    EXPECT_EQ(TiersOf("d"), std::vector<Tier>{Tier::kLocalDisk});
    // A success after the failure commits nothing.
    EXPECT_EQ(store().NotifyPromotionSuccess(node_, "d", task_.generation).code(),
              StatusCode::kNotFound);
    EXPECT_EQ(TiersOf("d"), std::vector<Tier>{Tier::kLocalDisk});
    // The node is told the staging range no longer holds (d, generation).
    Result<HeartbeatReply> beat = store().Heartbeat(node_);
    bool released = false;
    for (const ReleasedRange& r : beat->released) {
        released = released || (r.key == "d" && r.offset == staging_.offset);
    }
    EXPECT_TRUE(released);
    ExpectInvariants();
}

TEST_F(PromotionCleanupTest, PromotionFailureBeforeAllocStartUnpins) {
    StartOneNode(/*stage=*/false);
    ASSERT_TRUE(store().NotifyPromotionFailure(node_, "d", task_.generation).ok());
    EXPECT_EQ(Failed("io_failed"), 1);
    EXPECT_EQ(PinsOf("d"), 0u);
    EXPECT_EQ(store().PromotionAllocStart(node_, "d", task_.generation, kObject).status().code(),
              StatusCode::kNotFound);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

// ---------------- Remove ----------------

TEST_F(PromotionCleanupTest, PromotionRemoveBeforeAllocStartCancelsTheTask) {
    StartOneNode(/*stage=*/false);
    store().Heartbeat(node_).ok();
    ASSERT_TRUE(store().Remove("d").ok());
    EXPECT_EQ(Cancelled(), 1);
    EXPECT_TRUE(store().Tasks().empty());
    EXPECT_EQ(store().PromotionAllocStart(node_, "d", task_.generation, kObject).status().code(),
              StatusCode::kNotFound);
    EXPECT_EQ(store().NotifyPromotionSuccess(node_, "d", task_.generation).code(),
              StatusCode::kNotFound);
    EXPECT_TRUE(store().NotifyPromotionFailure(node_, "d", task_.generation).ok());
    EXPECT_EQ(Failed("io_failed"), 0) << "a cancelled task counted twice";
    EXPECT_EQ(DramUsed(), 0u);
    Result<HeartbeatReply> beat = store().Heartbeat(node_);
    ASSERT_EQ(beat->disk_deletes.size(), 1u);  // the (pinned) source is deleted now
    EXPECT_EQ(beat->disk_deletes[0].key, "d");
    ExpectInvariants();
}

TEST_F(PromotionCleanupTest, PromotionRemoveAfterAllocStartFreesTheStaging) {
    StartOneNode(/*stage=*/true);
    EXPECT_EQ(DramUsed(), kObject);
    store().Heartbeat(node_).ok();
    ASSERT_TRUE(store().Remove("d").ok());
    EXPECT_EQ(Cancelled(), 1);
    EXPECT_EQ(DramUsed(), 0u);
    Result<HeartbeatReply> beat = store().Heartbeat(node_);
    ASSERT_EQ(beat->released.size(), 1u);
    EXPECT_EQ(beat->released[0].offset, staging_.offset);
    EXPECT_EQ(beat->released[0].generation, task_.generation);
    // The node finishes writing and reports: nothing is committed.
    EXPECT_EQ(store().NotifyPromotionSuccess(node_, "d", task_.generation).code(),
              StatusCode::kNotFound);
    EXPECT_EQ(store().Stat("d").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

TEST_F(PromotionCleanupTest, PromotionRemoveRefusedWhileLeasedLeavesTheTaskAlone) {
    config_.Set("default_kv_lease_ttl", "60000").ok();
    StartOneNode(/*stage=*/true);
    EXPECT_EQ(store().Remove("d").code(), StatusCode::kHasLease);
    EXPECT_EQ(Cancelled(), 0);
    ASSERT_TRUE(store().NotifyPromotionSuccess(node_, "d", task_.generation).ok());
    EXPECT_EQ(TiersOf("d").front(), Tier::kMemory);
    ASSERT_TRUE(store().Remove("d", /*force=*/true).ok());
    ExpectInvariants();
}

TEST_F(PromotionCleanupTest, PromotionRemoveByPrefixCancelsToo) {
    StartOneNode(/*stage=*/true);
    EXPECT_EQ(store().RemoveByPrefix("d", true), 1u);
    EXPECT_EQ(Cancelled(), 1);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

// ---------------- the key removed and put again ----------------

TEST_F(PromotionCleanupTest, PromotionLateSuccessAfterReputCommitsNothing) {
    StartOneNode(/*stage=*/true);
    ASSERT_TRUE(store().Remove("d").ok());
    Generation fresh = Put("d");  // a new incarnation, in MEMORY
    ASSERT_GT(fresh, task_.generation);
    uint64_t used = DramUsed();
    EXPECT_EQ(used, kObject);
    EXPECT_EQ(store().NotifyPromotionSuccess(node_, "d", task_.generation).code(),
              StatusCode::kStaleGeneration);
    EXPECT_EQ(store().NotifyPromotionFailure(node_, "d", task_.generation).code(),
              StatusCode::kStaleGeneration);
    Result<ObjectView> stat = store().Stat("d");
    ASSERT_TRUE(stat.ok());
    EXPECT_EQ(stat->generation, fresh);
    ASSERT_EQ(stat->replicas.size(), 1u);
    EXPECT_EQ(stat->replicas[0].state, ReplicaState::kComplete);
    EXPECT_EQ(DramUsed(), used);
    EXPECT_EQ(Metric("promotion_completed_total"), 0);
    ExpectInvariants();
}

// The new incarnation falls to disk and gets its own task; reports naming the old one must
// not touch it.
TEST_F(PromotionCleanupTest, PromotionOfANewIncarnationIsUntouchedByTheOldTask) {
    StartOneNode(/*stage=*/true);
    ASSERT_TRUE(store().Remove("d").ok());
    PutOnDisk("d", node_);
    Trigger("d");
    ASSERT_EQ(Metric("promotion_queued_total"), 2);
    EXPECT_EQ(store().PromotionAllocStart(node_, "d", task_.generation, kObject).status().code(),
              StatusCode::kStaleGeneration);
    EXPECT_EQ(store().NotifyPromotionSuccess(node_, "d", task_.generation).code(),
              StatusCode::kStaleGeneration);
    EXPECT_EQ(store().Tasks().size(), 1u);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants(1, 1);
    ASSERT_EQ(RunPromotions(node_), 1u);
    EXPECT_EQ(TiersOf("d").front(), Tier::kMemory);
    ExpectInvariants();
}

TEST_F(PromotionCleanupTest, PromotionAllocStartAfterReputIsRefused) {
    StartOneNode(/*stage=*/false);
    ASSERT_TRUE(store().Remove("d").ok());
    Put("d");
    uint64_t used = DramUsed();
    EXPECT_EQ(store().PromotionAllocStart(node_, "d", task_.generation, kObject).status().code(),
              StatusCode::kStaleGeneration);
    EXPECT_EQ(DramUsed(), used);
    ExpectInvariants();
}

// ---------------- the reaper ----------------

TEST_F(PromotionCleanupTest, PromotionReaperExpiresTasksPastTheTimeout) {
    config_.Set("promotion_task_timeout_sec", "30").ok();
    config_.Set("client_live_ttl_sec", "3600").ok();
    StartOneNode(/*stage=*/false);
    clock_.Advance(seconds(29));
    EXPECT_EQ(store().ReapExpired(), 0u);
    clock_.Advance(seconds(2));
    EXPECT_EQ(store().ReapExpired(), 1u);
    EXPECT_EQ(Expired(), 1);
    EXPECT_EQ(PinsOf("d"), 0u);
    EXPECT_TRUE(store().Tasks().empty());
    EXPECT_EQ(store().PromotionAllocStart(node_, "d", task_.generation, kObject).status().code(),
              StatusCode::kNotFound);
    ExpectInvariants();
}

TEST_F(PromotionCleanupTest, PromotionReaperRestartsTheClockAtAllocStartAndFreesStaging) {
    config_.Set("promotion_task_timeout_sec", "30").ok();
    config_.Set("client_live_ttl_sec", "3600").ok();
    StartOneNode(/*stage=*/false);
    clock_.Advance(seconds(20));
    ASSERT_TRUE(store().PromotionAllocStart(node_, "d", task_.generation, kObject).ok());
    clock_.Advance(seconds(11));  // 31 s after admission, 11 s after AllocStart
    EXPECT_EQ(store().ReapExpired(), 0u);
    clock_.Advance(seconds(20));  // 31 s after AllocStart
    EXPECT_EQ(store().ReapExpired(), 1u);
    EXPECT_EQ(DramUsed(), 0u);
    EXPECT_EQ(PinsOf("d"), 0u);
    // The late success commits nothing.
    EXPECT_EQ(store().NotifyPromotionSuccess(node_, "d", task_.generation).code(),
              StatusCode::kNotFound);
    EXPECT_EQ(TiersOf("d"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

TEST_F(PromotionCleanupTest, PromotionTickRunsTheReaper) {
    config_.Set("promotion_task_timeout_sec", "5").ok();
    StartOneNode(/*stage=*/true);
    for (int i = 0; i < 6; ++i) {
        clock_.Advance(seconds(1));
        store().Heartbeat(node_).ok();
        store().Tick();
    }
    EXPECT_EQ(Expired(), 1);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

// ---------------- node expiry: the holder, and the staging's node ----------------

class PromotionTwoNodeTest : public PromotionCleanupTest {
public:
    // Holder a has the source on its disk and no DRAM; the staging lands on b.
    void SetUp() override {
        PromotionCleanupTest::SetUp();
        config_.Set("client_live_ttl_sec", "10").ok();
        a_ = AddNode("a", /*dram=*/0);
        b_ = AddNode("b", 16 * kObject);
        AdoptOnDisk(a_, "d", (uint64_t{7} << 32) | 1000);
        Trigger("d");
        Take("d", a_, /*stage=*/true);
        ASSERT_EQ(staging_.node, b_);
        ASSERT_EQ(DramUsed(), kObject);
        ExpectInvariants(1, 1);
    }
    NodeId a_ = kNoNode, b_ = kNoNode;
};

TEST_F(PromotionTwoNodeTest, PromotionHolderExpiryCancelsAndFreesTheStagingElsewhere) {
    clock_.Advance(seconds(6));
    ASSERT_TRUE(store().Heartbeat(b_).ok());
    clock_.Advance(seconds(5));
    ASSERT_EQ(store().ExpireNodes(), 1u);  // a
    EXPECT_EQ(Cancelled(), 1);
    EXPECT_EQ(DramUsed(), 0u) << "the staging on b leaked";
    EXPECT_EQ(store().Stat("d").status().code(), StatusCode::kNotFound)  // its only copy
        << "object left without replicas";
    Result<HeartbeatReply> beat = store().Heartbeat(b_);
    ASSERT_EQ(beat->released.size(), 1u);  // b is told the staging range is void
    EXPECT_EQ(beat->released[0].offset, staging_.offset);
    ExpectInvariants();
}

TEST_F(PromotionTwoNodeTest, PromotionStagingNodeExpiryCancelsAndUnpinsTheSource) {
    clock_.Advance(seconds(6));
    ASSERT_TRUE(store().Heartbeat(a_).ok());
    clock_.Advance(seconds(5));
    ASSERT_EQ(store().ExpireNodes(), 1u);  // b
    EXPECT_EQ(Cancelled(), 1);
    EXPECT_EQ(TiersOf("d"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(PinsOf("d"), 0u);
    EXPECT_TRUE(store().Tasks().empty());
    // The holder's late report commits nothing.
    EXPECT_EQ(store().NotifyPromotionSuccess(a_, "d", task_.generation).code(),
              StatusCode::kNotFound);
    EXPECT_EQ(TiersOf("d"), std::vector<Tier>{Tier::kLocalDisk});
    ExpectInvariants();
    // With DRAM again, the key can be promoted again.
    NodeId c = AddNode("c", 16 * kObject);
    ASSERT_EQ(Get("d"), StatusCode::kOk);
    ASSERT_EQ(RunPromotions(a_), 1u);
    Result<ObjectView> view = store().GetReplicaList("d");
    EXPECT_EQ(view->replicas[0].tier, Tier::kMemory);
    EXPECT_EQ(view->replicas[0].node, c);
    ExpectInvariants();
}

TEST_F(PromotionTwoNodeTest, PromotionHolderUnregisterCancelsToo) {
    ASSERT_TRUE(store().UnregisterNode(a_).ok());
    EXPECT_EQ(Cancelled(), 1);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

// ---------------- the source ----------------

// While a task is in flight its source is pinned: nothing the store does on its own drops it.
TEST_F(PromotionCleanupTest, PromotionSourceIsPinnedAndNotDroppedWhileInFlight) {
    config_.Set("promotion_drop_source", "true").ok();
    node_ = AddNode("n1", 4 * kObject);
    PutOnDisk("d", node_);
    Trigger("d");
    Result<ObjectView> stat = store().Stat("d");
    ASSERT_EQ(stat->replicas.size(), 1u);
    EXPECT_EQ(stat->replicas[0].tier, Tier::kLocalDisk);
    EXPECT_EQ(stat->replicas[0].pins, 1u);
    // Pressure, eviction rounds, manual evict/offload, another promote: the source stays.
    for (int i = 0; i < 6; ++i) {
        const std::string key = "m" + std::to_string(i);
        Result<PutStartReply> put = store().PutStart(1, key, kObject);
        while (!put.ok() && RunOffloads(node_) > 0) put = store().PutStart(1, key, kObject);
        ASSERT_TRUE(put.ok()) << put.status().ToString();
        ASSERT_TRUE(store().PutEnd(1, key, put->generation).ok());
    }
    RunOffloads(node_);
    config_.Set("eviction_watermark_drop", "true").ok();
    store().RunWatermarkEviction();
    RunOffloads(node_);
    EXPECT_EQ(*store().Evict("d"), ManualOutcome::kAlreadyThere);
    EXPECT_EQ(*store().Offload("d"), ManualOutcome::kAlreadyThere);
    EXPECT_EQ(*store().Promote("d", true), ManualOutcome::kInFlight);
    EXPECT_EQ(TiersOf("d"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(PinsOf("d"), 1u);
    Result<HeartbeatReply> beat = store().Heartbeat(node_);
    ASSERT_TRUE(beat.ok());
    for (const DiskDelete& del : beat->disk_deletes) {
        EXPECT_NE(del.key, "d") << "the node was told to delete a pinned source";
    }
    ExpectInvariants(1, 1);
    // Only once the task has committed does drop_source remove it.
    ASSERT_EQ(RunPromotions(node_), 1u);
    EXPECT_EQ(TiersOf("d"), std::vector<Tier>{Tier::kMemory});
    ExpectInvariants();
}

// The node lost the bytes (disk eviction or a checksum failure): the task cannot succeed and
// ends at once, staging freed.
TEST_F(PromotionCleanupTest, PromotionSourceLostByTheNodeCancelsTheTask) {
    StartOneNode(/*stage=*/true);
    ASSERT_TRUE(store().ReportDiskReplicaDropped(node_, "d", task_.generation).ok());
    EXPECT_EQ(Cancelled(), 1);
    EXPECT_EQ(DramUsed(), 0u);
    EXPECT_EQ(store().Stat("d").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store().NotifyPromotionSuccess(node_, "d", task_.generation).code(),
              StatusCode::kNotFound);
    ExpectInvariants();
}

// ---------------- the funnel over a mix of outcomes ----------------

TEST_F(PromotionCleanupTest, PromotionFunnelHoldsOverEveryOutcome) {
    config_.Set("promotion_admission_threshold", "1").ok();
    config_.Set("client_live_ttl_sec", "3600").ok();
    config_.Set("promotion_task_timeout_sec", "30").ok();
    node_ = AddNode("n1", 64 * kObject);
    for (int i = 0; i < 6; ++i) PutOnDisk("d" + std::to_string(i), node_);
    for (int i = 0; i < 6; ++i) ASSERT_EQ(Get("d" + std::to_string(i)), StatusCode::kOk);
    std::vector<PromotionTask> tasks = store().PromotionObjectHeartbeat(node_, 100);
    ASSERT_EQ(tasks.size(), 6u);
    auto gen = [&](int i) { return tasks[i].generation; };
    // d0 completes, d1 fails its I/O, d2 is removed while staged, d3 (staged) and d4 (never
    // staged) time out, d5's allocation fails.
    for (int i : {0, 1, 2, 3}) {
        ASSERT_TRUE(store().PromotionAllocStart(node_, tasks[i].key, gen(i), kObject).ok());
    }
    ASSERT_TRUE(store().NotifyPromotionSuccess(node_, "d0", gen(0)).ok());
    ASSERT_TRUE(store().NotifyPromotionFailure(node_, "d1", gen(1)).ok());
    ASSERT_TRUE(store().Remove("d2").ok());
    // DRAM fills with leased objects (d0's new MEMORY copy too): d5 cannot get room.
    config_.Set("lease_blocks_eviction", "true").ok();  // leases make DRAM unevictable
    config_.Set("default_kv_lease_ttl", "3600000").ok();
    ASSERT_EQ(Get("d0"), StatusCode::kOk);
    const uint64_t fillers = 64 - DramUsed() / kObject;
    for (uint64_t i = 0; i < fillers; ++i) {
        Put("f" + std::to_string(i));
        ASSERT_EQ(Get("f" + std::to_string(i)), StatusCode::kOk);
    }
    EXPECT_EQ(store().PromotionAllocStart(node_, "d5", gen(5), kObject).status().code(),
              StatusCode::kNoSpace);
    clock_.Advance(seconds(31));
    EXPECT_EQ(store().ReapExpired(), 2u);  // d3 and d4
    EXPECT_EQ(Metric("promotion_queued_total"), 6);
    EXPECT_EQ(Metric("promotion_completed_total"), 1);
    EXPECT_EQ(Failed("io_failed"), 1);
    EXPECT_EQ(Failed("alloc_failed"), 1);
    EXPECT_EQ(Cancelled(), 1);
    EXPECT_EQ(Expired(), 2);
    EXPECT_EQ(Metric("promotion_in_flight"), 0);
    EXPECT_EQ(DramUsed(), (1 + fillers) * kObject);  // d0's committed copy and the fillers
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
