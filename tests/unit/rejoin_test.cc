// What a node that registers again reports holding (core/master/store_rejoin.cc): its DRAM ranges and
// disk records come back after a master restart or after the master expired it, and nothing
// removed or rewritten meanwhile comes back with them.
#include "gtest/gtest.h"
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class RejoinTest : public StoreFixture {
public:
    // The ranges a node holds, as its segment table would report them.
    std::vector<MemoryReplicaReport> MemoryOf(NodeId node, const std::vector<std::string>& keys) {
        std::vector<MemoryReplicaReport> out;
        for (const std::string& key : keys) {
            Result<ObjectView> v = store().Stat(key);
            EXPECT_TRUE(v.ok()) << key;
            if (!v.ok()) continue;
            for (const ReplicaDesc& r : v->replicas) {
                if (r.tier == Tier::kMemory && r.node == node) {
                    out.push_back({key, v->generation, v->size, r.offset});
                }
            }
        }
        return out;
    }

    static std::vector<StatusCode> CodesOf(const Result<std::vector<Status>>& out) {
        EXPECT_TRUE(out.ok()) << out.status().ToString();
        std::vector<StatusCode> codes;
        if (out.ok()) {
            for (const Status& st : *out) codes.push_back(st.code());
        }
        return codes;
    }
    std::vector<StatusCode> RegisterMemory(NodeId node,
                                           const std::vector<MemoryReplicaReport>& reports) {
        return CodesOf(store().RegisterMemoryReplicas(node, reports));
    }
    std::vector<StatusCode> RegisterDisk(NodeId node, const std::vector<DiskReplicaReport>& r) {
        return CodesOf(store().RegisterDiskReplicas(node, r));
    }

    // The master loses every node's heartbeat for longer than the TTL.
    void ExpireAll() {
        clock_.Advance(std::chrono::seconds(config_.client_live_ttl_sec() + 1));
        store().ExpireNodes();
    }

    // A new master process: same config, empty metadata, a later epoch.
    void RestartMaster() {
        store_.reset();  // its callback gauges are replaced by the new store's
        store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 8);
    }
};

using Codes = std::vector<StatusCode>;  // expected outcomes, one per report
constexpr StatusCode kOk = StatusCode::kOk;

TEST_F(RejoinTest, AfterAMasterRestartDramRangesAreServedAgainAtTheirOffsets) {
    NodeId a = AddNode("a", 16 * kObject);
    Put("k1");
    Put("k2", 3 * kObject);
    std::vector<MemoryReplicaReport> held = MemoryOf(a, {"k1", "k2"});
    ASSERT_EQ(held.size(), 2u);

    RestartMaster();
    NodeId again = AddNode("a", 16 * kObject);
    EXPECT_EQ(RegisterMemory(again, held), (Codes{kOk, kOk}));
    for (const MemoryReplicaReport& r : held) {
        Result<ObjectView> v = store().GetReplicaList(r.key);
        ASSERT_TRUE(v.ok()) << r.key;
        EXPECT_EQ(v->generation, r.generation);
        ASSERT_EQ(v->replicas.size(), 1u);
        EXPECT_EQ(v->replicas[0].tier, Tier::kMemory);
        EXPECT_EQ(v->replicas[0].offset, r.offset);
    }
    EXPECT_EQ(DramUsed(), 4 * kObject);
    // Reported again (the node retried after a lost reply): the same answer, nothing doubled.
    EXPECT_EQ(RegisterMemory(again, held), (Codes{kOk, kOk}));
    EXPECT_EQ(DramUsed(), 4 * kObject);
    // New Puts get other ranges, never the adopted ones.
    Put("k3", 12 * kObject);
    EXPECT_EQ(Get("k1"), kOk);
    ExpectInvariants();
}

// A node registering again (a master restart, an HA failover) reports the DRAM ranges it holds
// only after RegisterNode has given it an id. A Put placed in between could take one of those
// ranges, and the report (refused: overlapping) would lose that object, acknowledged long
// before. So a node that says it holds ranges gets no new data until its first heartbeat,
// which it sends once its reports are in; a Put meanwhile waits, and says Busy if it cannot.
TEST_F(RejoinTest, NothingIsPlacedInASegmentBeforeTheRangesItHoldsAreReported) {
    NodeId a = AddNode("a", 16 * kObject);
    Put("before");
    std::vector<MemoryReplicaReport> held = MemoryOf(a, {"before"});
    ASSERT_EQ(held.size(), 1u);

    RestartMaster();
    ASSERT_TRUE(config_.Set("put_wait_for_offload_ms", "50").ok());
    NodeSpec spec{"a", "a:data", 16 * kObject, 1ull << 30};
    spec.holds_memory = true;
    Result<NodeId> again = store().RegisterNode(spec);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    ASSERT_EQ(store().Nodes().size(), 1u);
    EXPECT_TRUE(store().Nodes()[0].reporting);
    EXPECT_EQ(Metric("nodes_reporting"), 1);
    Result<PutStartReply> early = store().PutStart(1, "after", kObject, kNoNode);
    EXPECT_TRUE(early.status().Is(StatusCode::kBusy)) << early.status().ToString();
    EXPECT_NE(early.status().message().find("node a registered again"), std::string::npos)
        << "the Busy names the node to look at: " << early.status().ToString();

    EXPECT_EQ(RegisterMemory(*again, held), (Codes{kOk}));
    ASSERT_TRUE(store().Heartbeat(*again, 0).ok());
    EXPECT_FALSE(store().Nodes()[0].reporting);
    EXPECT_EQ(Metric("nodes_reporting"), 0);
    Put("after");
    EXPECT_EQ(Get("before"), kOk);
    EXPECT_EQ(DramUsed(), 2 * kObject);
    ExpectInvariants();
}

// A node that registered again holding ranges and then went (expired before it had reported
// them) is awaited no longer: Puts make room by eviction again.
TEST_F(RejoinTest, AReportingNodeThatExpiresIsAwaitedNoLonger) {
    ASSERT_TRUE(config_.Set("enable_offload", "false").ok());  // an eviction frees at once
    ASSERT_TRUE(config_.Set("put_wait_for_offload_ms", "50").ok());
    NodeId b = AddNode("b", kObject);
    Put("old");
    NodeSpec spec{"a", "a:data", 16 * kObject, 1ull << 30};
    spec.holds_memory = true;
    ASSERT_TRUE(store().RegisterNode(spec).ok());
    Result<PutStartReply> early = store().PutStart(1, "new", kObject, kNoNode);
    EXPECT_TRUE(early.status().Is(StatusCode::kBusy)) << early.status().ToString();

    clock_.Advance(std::chrono::seconds(config_.client_live_ttl_sec() + 1));
    ASSERT_TRUE(store().Heartbeat(b, 0).ok());
    store().ExpireNodes();
    ASSERT_EQ(store().Nodes().size(), 1u);
    EXPECT_EQ(Metric("nodes_reporting"), 0);
    Put("new");  // "old" makes room
    EXPECT_EQ(MemoryNodes("new"), std::vector<NodeId>{b});
    ExpectInvariants();
}

// A node that holds nothing (a new process) says so, and its segment takes data at once.
TEST_F(RejoinTest, ANodeHoldingNothingTakesDataAtOnce) {
    RestartMaster();
    NodeSpec spec{"a", "a:data", 16 * kObject, 1ull << 30};
    ASSERT_TRUE(store().RegisterNode(spec).ok());
    EXPECT_FALSE(store().Nodes()[0].reporting);
    Put("at-once");
    ExpectInvariants();
}

// The reply to a registration was lost and the node registered again, getting its id back
// (same incarnation); a Put placed in its segment meanwhile is still being written. The node
// lists that range among what it holds: it is its own, and stays (refused, the node would let
// go of it under the writer and the Put would end into a range nobody holds).
TEST_F(RejoinTest, ARangeBeingWrittenIntoTheNodeIsKeptWhenItRegistersAgain) {
    RestartMaster();
    NodeSpec spec{"a", "a:data", 16 * kObject, 1ull << 30};
    spec.incarnation = 5;
    Result<NodeId> first = store().RegisterNode(spec);
    ASSERT_TRUE(first.ok());
    Result<PutStartReply> writing = store().PutStart(1, "writing", kObject, kNoNode);
    ASSERT_TRUE(writing.ok()) << writing.status().ToString();

    spec.holds_memory = true;
    Result<NodeId> again = store().RegisterNode(spec);
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(*again, *first);
    EXPECT_EQ(RegisterMemory(*again,
                             {{"writing", writing->generation, kObject, writing->replica.offset}}),
              (Codes{kOk}));
    ASSERT_TRUE(store().Heartbeat(*again, 0).ok());
    ASSERT_TRUE(store().PutEnd(1, "writing", writing->generation).ok());
    EXPECT_EQ(Get("writing"), kOk);
    EXPECT_EQ(DramUsed(), kObject);
    ExpectInvariants();
}

TEST_F(RejoinTest, OverlappingOrOutOfRangeReportsAreRefusedAndLeaveNothing) {
    NodeId a = AddNode("a", 8 * kObject);
    const Generation g = (uint64_t{3} << 32) | 1;
    EXPECT_EQ(RegisterMemory(a, {{"x", g, 2 * kObject, 0},
                                 {"y", g, kObject, kObject},       // overlaps x
                                 {"z", g, kObject, 8 * kObject},   // past the end
                                 {"u", g, kObject, 100},           // misaligned
                                 {"", g, kObject, 4 * kObject}}),  // bad key
              (Codes{kOk, StatusCode::kInvalidArgument, StatusCode::kInvalidArgument,
                     StatusCode::kInvalidArgument, StatusCode::kInvalidArgument}));
    EXPECT_EQ(Get("y"), StatusCode::kNotFound);
    EXPECT_EQ(Get("z"), StatusCode::kNotFound);
    EXPECT_EQ(DramUsed(), 2 * kObject);
    // A second MEMORY copy of a key is refused.
    EXPECT_EQ(RegisterMemory(a, {{"x", g, 2 * kObject, 4 * kObject}}),
              (Codes{StatusCode::kAlreadyExists}));
    ExpectInvariants();
}

TEST_F(RejoinTest, AnExpiredNodeGetsBackWhatLeftWithItButNothingRemovedOrRewritten) {
    NodeId a = AddNode("a", 16 * kObject);
    Put("stays");
    Put("removed");
    Put("rewritten");
    Generation on_disk = PutOnDisk("disk", a);
    std::vector<MemoryReplicaReport> held = MemoryOf(a, {"stays", "removed", "rewritten"});
    ASSERT_EQ(held.size(), 3u);

    ExpireAll();  // a partition: the master drops everything a held
    EXPECT_EQ(Get("stays"), StatusCode::kNotFound);
    EXPECT_EQ(store().Remove("removed").code(), StatusCode::kNotFound);  // removed meanwhile
    NodeId b = AddNode("b", 16 * kObject);
    Put("rewritten", kObject, b);                                       // a new incarnation

    NodeId again = AddNode("a", 16 * kObject);
    EXPECT_EQ(RegisterMemory(again, held),
              (Codes{kOk, StatusCode::kNotFound, StatusCode::kStaleGeneration}));
    EXPECT_EQ(RegisterDisk(again, {{"disk", on_disk, kObject}}), (Codes{kOk}));
    EXPECT_EQ(Get("stays"), kOk);
    EXPECT_EQ(Get("disk"), kOk);
    EXPECT_EQ(TiersOf("disk"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(Get("removed"), StatusCode::kNotFound);
    EXPECT_EQ(store().Stat("rewritten")->replicas[0].node, b);
    // Claimed once: the same report again is now a known key (idempotent for disk).
    EXPECT_EQ(RegisterDisk(again, {{"disk", on_disk, kObject}}), (Codes{kOk}));
    ExpectInvariants();
}

TEST_F(RejoinTest, AKeyPutAndRemovedWhileTheNodeWasAwayDoesNotComeBack) {
    NodeId a = AddNode("a", 16 * kObject);
    Generation old = PutOnDisk("k", a);
    ExpireAll();
    NodeId b = AddNode("b", 16 * kObject);
    Put("k", kObject, b);  // forgets the departed incarnation
    ASSERT_TRUE(store().Remove("k").ok());
    NodeId again = AddNode("a", 16 * kObject);
    EXPECT_EQ(RegisterDisk(again, {{"k", old, kObject}}), (Codes{StatusCode::kNotFound}));
    EXPECT_EQ(Get("k"), StatusCode::kNotFound);
    ExpectInvariants();
}

TEST_F(RejoinTest, RemoveByPrefixAlsoForgetsDepartedKeys) {
    NodeId a = AddNode("a", 16 * kObject);
    Generation g1 = PutOnDisk("p/1", a);
    Generation g2 = PutOnDisk("q/1", a);
    ExpireAll();
    AddNode("b", 16 * kObject);
    EXPECT_EQ(store().RemoveByPrefix("p/", false), 0u);
    NodeId again = AddNode("a", 16 * kObject);
    EXPECT_EQ(RegisterDisk(again, {{"p/1", g1, kObject}, {"q/1", g2, kObject}}),
              (Codes{StatusCode::kNotFound, kOk}));
    ExpectInvariants();
}

TEST_F(RejoinTest, OnlyTheFirstRegistrationOfANameAdoptsUnknownKeys) {
    const Generation g = (uint64_t{3} << 32) | 9;  // from an earlier master
    NodeId a = AddNode("a", 16 * kObject);
    EXPECT_EQ(RegisterDisk(a, {{"old", g, kObject}}), (Codes{kOk}));  // master restarted
    ASSERT_TRUE(store().UnregisterNode(a).ok());
    // The same name again, in this master's lifetime: "old" left with it and comes back, a
    // key this master never saw does not.
    NodeId again = AddNode("a", 16 * kObject);
    EXPECT_EQ(RegisterDisk(again, {{"old", g, kObject}, {"never", g, kObject}}),
              (Codes{kOk, StatusCode::kNotFound}));
    ExpectInvariants();
}

// An HA leader (KeepTombstones) also remembers copies that left with a node while their object
// stayed readable elsewhere: removing such an object leaves a tombstone, since for the next
// leader the node's return is the first of its name and it would adopt the copy. A copy that
// came back first (claimed by this leader) needs none.
TEST_F(RejoinTest, RemovingAnObjectWithACopyAwayLeavesATombstoneForTheNextLeader) {
    store().KeepTombstones(true);
    const Generation g_k = (uint64_t{3} << 32) | 1;
    const Generation g_j = (uint64_t{3} << 32) | 2;
    NodeId a = AddNode("a", /*dram=*/0);  // disk only: the promotions land on b
    AdoptOnDisk(a, "k", g_k);
    AdoptOnDisk(a, "j", g_j);
    NodeId b = AddNode("b", 16 * kObject);
    for (const char* key : {"k", "j"}) {
        ASSERT_TRUE(store().Promote(key, false).ok()) << key;
    }
    Drain(b);
    Drain(a);
    ASSERT_EQ(TiersOf("k"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    ASSERT_EQ(store().Stat("k")->replicas[0].node, b);

    ASSERT_TRUE(store().UnregisterNode(a).ok());  // a leaves with the disk copies
    EXPECT_EQ(Get("k"), kOk);                    // still read from b's DRAM
    NodeId again = AddNode("a", 0);
    EXPECT_EQ(RegisterDisk(again, {{"j", g_j, kObject}}), (Codes{kOk}));  // j's copy is back
    ASSERT_TRUE(store().Remove("k", /*force=*/true).ok());
    ASSERT_TRUE(store().Remove("j", /*force=*/true).ok());
    EXPECT_EQ(store().TakeNewTombstones(),
              (std::vector<std::pair<std::string, Generation>>{{"k", g_k}}));
    ExpectInvariants();
}

TEST_F(RejoinTest, WithoutHaNoCopyAwayIsRecorded) {
    const Generation g = (uint64_t{3} << 32) | 1;
    NodeId a = AddNode("a", 0);
    AdoptOnDisk(a, "k", g);
    NodeId b = AddNode("b", 16 * kObject);
    ASSERT_TRUE(store().Promote("k", false).ok());
    Drain(b);
    Drain(a);
    ASSERT_TRUE(store().UnregisterNode(a).ok());
    ASSERT_TRUE(store().Remove("k", true).ok());
    store().KeepTombstones(true);
    EXPECT_TRUE(store().TakeNewTombstones().empty());
}

TEST_F(RejoinTest, DramAndDiskCopiesOfOneObjectBothComeBack) {
    NodeId a = AddNode("a", 16 * kObject);
    Generation g = Put("k");
    ASSERT_TRUE(store().Offload("k").ok());  // a LOCAL_DISK copy, MEMORY kept
    RunOffloads(a);
    ASSERT_EQ(TiersOf("k"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    std::vector<MemoryReplicaReport> held = MemoryOf(a, {"k"});
    RestartMaster();
    NodeId again = AddNode("a", 16 * kObject);
    EXPECT_EQ(RegisterMemory(again, held), (Codes{kOk}));
    EXPECT_EQ(RegisterDisk(again, {{"k", g, kObject}}), (Codes{kOk}));
    EXPECT_EQ(TiersOf("k"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing

namespace mooncake::testing {
namespace {

TEST_F(RejoinTest, ANodeIdFromAnEarlierMasterIsUnknownToTheNextOne) {
    NodeId old_id = AddNode("a", 16 * kObject);
    RestartMaster();
    NodeId other = AddNode("b", 16 * kObject);  // first in the new master, as `a` was
    EXPECT_NE(other, old_id);
    EXPECT_EQ(store().Heartbeat(old_id).status().code(), StatusCode::kUnknownNode);
}

}  // namespace
}  // namespace mooncake::testing
