// Issue 12 fixes: node incarnations (a restarted node re-registers under its name at once),
// heartbeats from expired nodes, and disk-drop reports for replicas a node does not hold.
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

using std::chrono::seconds;

class NodeRegistrationTest : public StoreFixture {
public:
    void SetUp() override {
        StoreFixture::SetUp();
        config_.Set("client_live_ttl_sec", "10").ok();
    }
    Result<NodeId> Register(const std::string& name, uint64_t incarnation,
                            uint64_t dram = 8 * kObject) {
        NodeSpec spec{name, name + ":data", dram, 1ull << 30};
        spec.incarnation = incarnation;
        return store().RegisterNode(spec);
    }
    size_t LiveNamed(const std::string& name) {
        size_t n = 0;
        for (const NodeInfo& info : store().Nodes()) n += info.spec.name == name;
        return n;
    }
};

TEST_F(NodeRegistrationTest, DropReportForAReplicaTheNodeDoesNotHoldIsRefused) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    Generation g = PutOnDisk("k", a);
    Status st = store().ReportDiskReplicaDropped(b, "k", g);
    EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
    EXPECT_EQ(TiersOf("k"), std::vector<Tier>{Tier::kLocalDisk});

    // A Put still in flight (PROCESSING MEMORY only) is not destroyed by a bogus report.
    Result<PutStartReply> start = store().PutStart(1, "p", kObject, a);
    ASSERT_TRUE(start.ok()) << start.status().ToString();
    st = store().ReportDiskReplicaDropped(a, "p", start->generation);
    EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
    ASSERT_TRUE(store().PutEnd(1, "p", start->generation).ok());
    EXPECT_EQ(TiersOf("p"), std::vector<Tier>{Tier::kMemory});

    // The rightful holder's report still drops its replica (and the object with it).
    EXPECT_TRUE(store().ReportDiskReplicaDropped(a, "k", g).ok());
    EXPECT_FALSE(store().Stat("k").ok());
    ExpectInvariants();
}

TEST_F(NodeRegistrationTest, HeartbeatOfAnExpiredNodeIsUnknownNodeAndItRegistersAgain) {
    Result<NodeId> a = Register("a", 11);
    ASSERT_TRUE(a.ok());
    clock_.Advance(seconds(11));
    ASSERT_EQ(store().ExpireNodes(), 1u);
    EXPECT_EQ(store().Heartbeat(*a).status().code(), StatusCode::kUnknownNode);
    // The node answers UnknownNode by registering again (core/node/node_worker.cc Heartbeat).
    Result<NodeId> again = Register("a", 11);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_NE(*again, *a);
    EXPECT_TRUE(store().Heartbeat(*again).ok());
    EXPECT_EQ(LiveNamed("a"), 1u);
}

TEST_F(NodeRegistrationTest, SameIncarnationGetsItsRegistrationBack) {
    Result<NodeId> first = Register("a", 42);
    ASSERT_TRUE(first.ok());
    Put("m", kObject, *first);
    Result<NodeId> retry = Register("a", 42);  // the first reply was lost
    ASSERT_TRUE(retry.ok()) << retry.status().ToString();
    EXPECT_EQ(*retry, *first);
    EXPECT_EQ(LiveNamed("a"), 1u);
    EXPECT_EQ(TiersOf("m"), std::vector<Tier>{Tier::kMemory});
    // Its DRAM ranges, reported again after the retried registration, are accepted as they are.
    Result<ObjectView> view = store().Stat("m");
    ASSERT_TRUE(view.ok());
    std::vector<MemoryReplicaReport> reports{
        {"m", view->generation, kObject, view->replicas[0].offset}};
    auto out = store().RegisterMemoryReplicas(*first, reports);
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE((*out)[0].ok()) << (*out)[0].ToString();
    EXPECT_EQ(Metric("nodes_replaced_total"), 0);
    ExpectInvariants();
}

TEST_F(NodeRegistrationTest, ANewIncarnationReplacesTheOldRegistrationAtOnce) {
    config_.Set("offload_on_evict", "true").ok();
    Result<NodeId> old_id = Register("a", 1);
    ASSERT_TRUE(old_id.ok());
    Generation on_disk = PutOnDisk("d", *old_id);
    Put("m", kObject, *old_id);
    Put("busy", kObject, *old_id);
    // An offload in flight on the old process (source pinned).
    Result<ManualOutcome> queued = store().Evict("busy");
    ASSERT_TRUE(queued.ok() && *queued == ManualOutcome::kQueued);
    ASSERT_EQ(store().OffloadObjectHeartbeat(*old_id, 16).size(), 1u);

    // The node crashed and restarted: same name, new incarnation, no client_live_ttl wait.
    Result<NodeId> new_id = Register("a", 2);
    ASSERT_TRUE(new_id.ok()) << new_id.status().ToString();
    EXPECT_NE(*new_id, *old_id);
    EXPECT_EQ(LiveNamed("a"), 1u);
    EXPECT_EQ(Metric("nodes_replaced_total"), 1);
    // The old registration was cleaned up as expiry does: DRAM replicas gone, task cancelled,
    // nothing pinned.
    EXPECT_FALSE(store().Stat("m").ok());
    EXPECT_FALSE(store().Stat("busy").ok());
    EXPECT_FALSE(store().Stat("d").ok());
    ExpectInvariants();
    // The late report of the old process is refused.
    EXPECT_FALSE(store().NotifyOffloadSuccess(*old_id, "busy", 0).ok());
    // Its disk record comes back with the new process (it left with the old one).
    AdoptOnDisk(*new_id, "d", on_disk);
    EXPECT_EQ(TiersOf("d"), std::vector<Tier>{Tier::kLocalDisk});

    // The old process, still alive, is told at its next heartbeat and may not take the name
    // back: the newest wins.
    EXPECT_EQ(store().Heartbeat(*old_id).status().code(), StatusCode::kUnknownNode);
    Result<NodeId> back = Register("a", 1);
    EXPECT_EQ(back.status().code(), StatusCode::kStaleGeneration) << back.status().ToString();
    EXPECT_TRUE(store().Heartbeat(*new_id).ok());
    EXPECT_EQ(LiveNamed("a"), 1u);
    ExpectInvariants();
}

TEST_F(NodeRegistrationTest, WithoutIncarnationsALiveNameIsStillRefused) {
    ASSERT_TRUE(Register("a", 0).ok());
    EXPECT_EQ(Register("a", 0).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(Register("a", 9).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(LiveNamed("a"), 1u);
}

}  // namespace
}  // namespace mooncake::testing
