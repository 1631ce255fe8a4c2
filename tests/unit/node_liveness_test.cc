// Issue 3: node liveness — heartbeats refresh a TTL; an expired (or unregistered) node's
// segment goes, its replicas are dropped (objects left with none removed), its queued work is
// cancelled and nothing it held stays pinned. Also what a (re)started node reports of its disk.
#include <future>

#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class NodeLivenessTest : public StoreFixture {
public:
    void SetUp() override {
        StoreFixture::SetUp();
        config_.Set("client_live_ttl_sec", "10").ok();
    }
    static std::string K(int i) { return "k" + std::to_string(i); }
};

TEST_F(NodeLivenessTest, HeartbeatsKeepANodeAliveAndSilenceExpiresIt) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    for (int round = 0; round < 5; ++round) {
        clock_.Advance(seconds(9));
        ASSERT_TRUE(store().Heartbeat(a).ok());
        ASSERT_TRUE(store().Heartbeat(b).ok());
        EXPECT_EQ(store().ExpireNodes(), 0u);
    }
    clock_.Advance(seconds(9));
    ASSERT_TRUE(store().Heartbeat(a).ok());
    clock_.Advance(seconds(2));  // b: 11 s of silence
    EXPECT_EQ(store().ExpireNodes(), 1u);
    ASSERT_EQ(store().Nodes().size(), 1u);
    EXPECT_EQ(store().Nodes()[0].id, a);
    EXPECT_EQ(Metric("nodes_expired_total"), 1);
    EXPECT_EQ(store().Heartbeat(b).status().code(), StatusCode::kUnknownNode);
    EXPECT_EQ(store().ComputeTotals().dram_capacity, 8 * kObject);
    ExpectInvariants();
}

TEST_F(NodeLivenessTest, TickExpiresNodes) {
    AddNode("a", 8 * kObject);
    clock_.Advance(seconds(11));
    store().Tick();
    EXPECT_TRUE(store().Nodes().empty());
    ExpectInvariants();
}

// A master stopped for 30 s (SIGSTOP, a paused VM) heard nothing in that time: on waking it
// keeps both leases, and a node expires only for the silence the master was awake to hear.
TEST_F(NodeLivenessTest, AMasterThatDidNotRunKeepsTheLeasesItCouldNotHear) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    store().Tick();
    for (int i = 0; i < 18; ++i) {  // 9 s awake; b says nothing
        clock_.Advance(milliseconds(500));
        store().Tick();
    }
    ASSERT_TRUE(store().Heartbeat(a).ok());
    clock_.Advance(seconds(30));
    store().Tick();
    EXPECT_EQ(store().Nodes().size(), 2u);
    EXPECT_EQ(Metric("node_expiries_forgiven_total"), 2);
    EXPECT_EQ(Metric("nodes_expired_total"), 0);
    // b had 9 s of silence before the pause: one more second awake expires it; a stays.
    for (int i = 0; i < 3; ++i) {
        clock_.Advance(milliseconds(500));
        store().Tick();
    }
    ASSERT_EQ(store().Nodes().size(), 1u);
    EXPECT_EQ(store().Nodes()[0].id, a);
    EXPECT_EQ(store().Heartbeat(b).status().code(), StatusCode::kUnknownNode);
    EXPECT_EQ(Metric("nodes_expired_total"), 1);
    ExpectInvariants();
}

TEST_F(NodeLivenessTest, ExpiredNodeMayRegisterAgainUnderANewId) {
    NodeId a = AddNode("a", 8 * kObject);
    clock_.Advance(seconds(11));
    ASSERT_EQ(store().ExpireNodes(), 1u);
    NodeId again = AddNode("a", 8 * kObject);
    EXPECT_NE(again, a);
    EXPECT_EQ(store().Heartbeat(a).status().code(), StatusCode::kUnknownNode);
    ExpectInvariants();
}

// Everything the node held, in every state: COMPLETE MEMORY, a put in progress, queued and
// delivered offloads (pinned), LOCAL_DISK-only objects with a promotion in flight, objects
// with a copy on each node. After expiry: DRAM used and pins back, tasks cancelled.
TEST_F(NodeLivenessTest, ExpiryDropsReplicasCancelsTasksAndUnpins) {
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId a = AddNode("a", 16 * kObject);
    NodeId b = AddNode("b", 16 * kObject);
    // On b only (survives).
    Put("b-only", kObject, b);
    // On a: a disk-only object with a promotion in flight (source pinned on a's disk) ...
    PutOnDisk("a-disk", a);
    ASSERT_EQ(Get("a-disk"), StatusCode::kOk);
    ASSERT_EQ(Metric("promotion_queued_total"), 1);
    // ... MEMORY objects, two with offloads queued (one delivered), a put in progress.
    for (int i = 0; i < 4; ++i) Put(K(i), kObject, a);
    ASSERT_EQ(*store().Offload(K(0)), ManualOutcome::kQueued);
    ASSERT_EQ(*store().Evict(K(1)), ManualOutcome::kQueued);
    ASSERT_EQ(store().OffloadObjectHeartbeat(a, 1).size(), 1u);
    ASSERT_TRUE(store().PutStart(1, "a-pending", kObject, a).ok());
    // Split: MEMORY on b, disk copy on a.
    Put("split", kObject, b);
    store().Heartbeat(a).ok();
    ASSERT_TRUE(store().RegisterDiskReplicas(a, std::vector<DiskReplicaReport>{
                                                    {"split", store().Stat("split")->generation,
                                                     kObject}})
                    .ok());
    ASSERT_EQ(TiersOf("split"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    ExpectInvariants(/*pins=*/3, /*tasks=*/3);

    clock_.Advance(seconds(6));
    ASSERT_TRUE(store().Heartbeat(b).ok());
    clock_.Advance(seconds(5));
    ASSERT_EQ(store().ExpireNodes(), 1u);

    for (const std::string key : {"a-disk", "k0", "k1", "k2", "k3", "a-pending"}) {
        EXPECT_EQ(store().Stat(key).status().code(), StatusCode::kNotFound) << key;
    }
    EXPECT_EQ(TiersOf("b-only"), std::vector<Tier>{Tier::kMemory});
    EXPECT_EQ(TiersOf("split"), std::vector<Tier>{Tier::kMemory});  // lost only a's copy
    MasterStore::Totals t = store().ComputeTotals();
    EXPECT_EQ(t.dram_capacity, 16 * kObject);
    EXPECT_EQ(t.dram_used, 2 * kObject);
    EXPECT_EQ(t.objects, 2u);
    EXPECT_EQ(Metric("offload_cancelled_total"), 2);
    EXPECT_EQ(Metric("promotion_cancelled_total"), 1);
    EXPECT_TRUE(store().Tasks().empty());
    ExpectInvariants();
    // Late reports from the dead node are refused.
    EXPECT_EQ(store().PromotionAllocStart(a, "a-disk", 1, kObject).status().code(),
              StatusCode::kUnknownNode);
    EXPECT_TRUE(store().OffloadObjectHeartbeat(a, 8).empty());
    // A put the dead node held is gone for its client.
    EXPECT_EQ(store().PutEnd(1, "a-pending", 1).code(), StatusCode::kNotFound);
    // The keys are free again.
    Put("k0");
    ExpectInvariants();
}

TEST_F(NodeLivenessTest, DiskCopyOnASurvivorKeepsTheObject) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    Put("x", kObject, a);
    AdoptOnDisk(b, "x", store().Stat("x")->generation);
    ASSERT_EQ(TiersOf("x"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    ASSERT_TRUE(store().UnregisterNode(a).ok());
    EXPECT_EQ(TiersOf("x"), std::vector<Tier>{Tier::kLocalDisk});
    Result<ObjectView> view = store().GetReplicaList("x");
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->replicas[0].node, b);
    ASSERT_TRUE(store().UnregisterNode(b).ok());
    EXPECT_EQ(store().Stat("x").status().code(), StatusCode::kNotFound);
    ExpectInvariants();
}

TEST_F(NodeLivenessTest, UnregisterIsTheSameCleanupAsExpiry) {
    NodeId a = AddNode("a", 8 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i), kObject, a);
    ASSERT_EQ(*store().Evict(K(0)), ManualOutcome::kQueued);
    ASSERT_TRUE(store().UnregisterNode(a).ok());
    EXPECT_EQ(store().ComputeTotals().objects, 0u);
    EXPECT_EQ(Metric("nodes_expired_total"), 0);  // graceful, not expired
    EXPECT_EQ(store().UnregisterNode(a).code(), StatusCode::kUnknownNode);
    ExpectInvariants();
}

TEST_F(NodeLivenessTest, LongPollsOfAGoneNodeReturn) {
    NodeId a = AddNode("a", 8 * kObject);
    auto offload_poll = std::async(std::launch::async, [&] {
        return store().OffloadObjectHeartbeat(a, 8, seconds(60));
    });
    auto promotion_poll = std::async(std::launch::async, [&] {
        return store().PromotionObjectHeartbeat(a, 8, seconds(60));
    });
    ASSERT_TRUE(store().UnregisterNode(a).ok());
    EXPECT_TRUE(offload_poll.get().empty());  // returns long before 60 s
    EXPECT_TRUE(promotion_poll.get().empty());
    ExpectInvariants();
}

TEST_F(NodeLivenessTest, ReleasedRangesAndDiskDeletesReachTheNodeAtItsHeartbeat) {
    NodeId a = AddNode("a", 8 * kObject);
    Generation g1 = Put("x", kObject, a);
    ASSERT_TRUE(store().Remove("x").ok());
    Result<HeartbeatReply> beat = store().Heartbeat(a);
    ASSERT_TRUE(beat.ok());
    ASSERT_EQ(beat->released.size(), 1u);
    EXPECT_EQ(beat->released[0].key, "x");
    EXPECT_EQ(beat->released[0].generation, g1);
    EXPECT_EQ(beat->released[0].size, kObject);
    // Told once.
    EXPECT_TRUE(store().Heartbeat(a)->released.empty());
    ExpectInvariants();
}

// A reply lost on the way (the node confirms an older seq, or none) is sent again with what
// is new; a confirmed one is forgotten.
TEST_F(NodeLivenessTest, HeartbeatRepliesAreSentAgainUntilTheNodeConfirmsThem) {
    NodeId a = AddNode("a", 8 * kObject);
    Put("x", kObject, a);
    ASSERT_TRUE(store().Remove("x").ok());
    Result<HeartbeatReply> lost = store().Heartbeat(a, 0);
    ASSERT_TRUE(lost.ok());
    ASSERT_EQ(lost->released.size(), 1u);
    EXPECT_NE(lost->seq, 0u);
    Put("y", kObject, a);
    ASSERT_TRUE(store().Remove("y").ok());
    Result<HeartbeatReply> again = store().Heartbeat(a, 0);
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->released.size(), 2u);
    EXPECT_EQ(again->released[0].key, "x");
    EXPECT_EQ(again->released[1].key, "y");
    EXPECT_NE(again->seq, lost->seq);
    // Confirming the lost one is not confirming the latest.
    EXPECT_EQ(store().Heartbeat(a, lost->seq)->released.size(), 2u);
    Result<HeartbeatReply> latest = store().Heartbeat(a, 0);
    Result<HeartbeatReply> after = store().Heartbeat(a, latest->seq);
    ASSERT_TRUE(after.ok());
    EXPECT_TRUE(after->empty());
    EXPECT_EQ(after->seq, 0u);
    ExpectInvariants();
}

// Released, then the same object (key and generation) promoted back into the very range:
// the node's record there is the promoted replica, and the old release must not reach it.
TEST_F(NodeLivenessTest, AReleaseIsNotSentForARangeTheSameObjectHoldsAgain) {
    NodeId a = AddNode("a", kObject);  // one range: a promotion can only land where x was
    Generation g = PutOnDisk("x", a);
    ASSERT_TRUE(store().Promote("x", /*force=*/true).ok());
    ASSERT_EQ(RunPromotions(a), 1u);
    Result<ObjectView> view = store().Stat("x");
    ASSERT_TRUE(view.ok());
    const ReplicaDesc* memory = nullptr;
    for (const ReplicaDesc& r : view->replicas) {
        if (r.tier == Tier::kMemory) memory = &r;
    }
    ASSERT_NE(memory, nullptr);
    EXPECT_EQ(memory->offset, 0u);
    EXPECT_EQ(view->generation, g);
    Result<HeartbeatReply> beat = store().Heartbeat(a, 0);
    ASSERT_TRUE(beat.ok());
    EXPECT_TRUE(beat->released.empty()) << beat->released.size() << " release(s) of a live range";
    // Once it is let go of again, the release goes out.
    ASSERT_TRUE(store().Remove("x").ok());
    beat = store().Heartbeat(a, beat->seq);
    ASSERT_TRUE(beat.ok());
    ASSERT_FALSE(beat->released.empty());
    EXPECT_EQ(beat->released.back().key, "x");
    ExpectInvariants();
}

// The same for a disk record: with promotion_drop_source the promotion deletes x's disk copy;
// evicted again within the heartbeat interval, x is written to that disk again under the same
// generation (the node finds the record still there: "already stored"). The old delete would
// remove the only copy left.
TEST_F(NodeLivenessTest, ADiskDeleteIsNotSentForARecordTheSameObjectHoldsAgain) {
    ASSERT_TRUE(config_.Set("promotion_drop_source", "true").ok());
    NodeId a = AddNode("a", 8 * kObject);
    PutOnDisk("x", a);
    ASSERT_TRUE(store().Promote("x", /*force=*/true).ok());
    ASSERT_EQ(RunPromotions(a), 1u);
    ASSERT_EQ(TiersOf("x"), std::vector<Tier>{Tier::kMemory});
    ASSERT_TRUE(store().Evict("x").ok());
    ASSERT_EQ(RunOffloads(a), 1u);
    ASSERT_EQ(TiersOf("x"), std::vector<Tier>{Tier::kLocalDisk});
    Result<HeartbeatReply> beat = store().Heartbeat(a, 0);
    ASSERT_TRUE(beat.ok());
    for (const DiskDelete& d : beat->disk_deletes) EXPECT_NE(d.key, "x") << "the only copy";
    ExpectInvariants();
}

// ---------------- disk reports of a (re)started node ----------------

TEST_F(NodeLivenessTest, DiskReportsAreAdoptedOrRefused) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    NodeId nodisk = AddNode("c", 8 * kObject, /*disk=*/0);
    const Generation g = (uint64_t{3} << 32) | 5;  // from an earlier master epoch
    std::vector<DiskReplicaReport> reports{
        {"adopt", g, 1000}, {"", g, 1000}, {"zero", g, 0}, {"nogen", kNoGeneration, 10}};
    Result<std::vector<Status>> out = store().RegisterDiskReplicas(a, reports);
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE((*out)[0].ok());
    EXPECT_EQ((*out)[1].code(), StatusCode::kInvalidArgument);
    EXPECT_EQ((*out)[2].code(), StatusCode::kInvalidArgument);
    EXPECT_EQ((*out)[3].code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(TiersOf("adopt"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(store().Stat("adopt")->size, 1000u);
    // Reported again by the same node: idempotent. By another: refused.
    EXPECT_TRUE((*store().RegisterDiskReplicas(a, reports))[0].ok());
    EXPECT_EQ((*store().RegisterDiskReplicas(b, reports))[0].code(), StatusCode::kAlreadyExists);
    // Another size for the same generation: a different incarnation.
    std::vector<DiskReplicaReport> other{{"adopt", g, 999}};
    EXPECT_EQ((*store().RegisterDiskReplicas(a, other))[0].code(), StatusCode::kStaleGeneration);
    EXPECT_EQ(store().RegisterDiskReplicas(nodisk, reports).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(store().Nodes()[0].disk_used, DiskFootprint(1000));  // whole 4 KiB blocks
    EXPECT_EQ(store().ComputeTotals().objects, 1u);
    ExpectInvariants();
}

TEST_F(NodeLivenessTest, DiskReplicaDroppedByTheNodeRemovesALastCopy) {
    NodeId a = AddNode("a", 8 * kObject);
    Generation g = PutOnDisk("x", a);
    store().Heartbeat(a).ok();
    ASSERT_TRUE(store().ReportDiskReplicaDropped(a, "x", g).ok());
    EXPECT_EQ(store().Stat("x").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store().Nodes()[0].disk_used, 0u);
    // The node deleted it itself: it is not told to delete it again.
    EXPECT_TRUE(store().Heartbeat(a)->disk_deletes.empty());
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
