// Issue 33: ReplicateConfig.replica_num honoured (PutConfig::replicas). A Put asking for N
// copies gets up to N PROCESSING MEMORY ranges on distinct nodes, all COMPLETE at PutEnd;
// eviction takes one copy at a time; a departed node takes only its own; a manual evict or an
// offload on evict takes them all; hard pins and revokes count every copy.
#include <set>

#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class ReplicaCopiesTest : public StoreFixture {
public:
    void SetUp() override {
        StoreFixture::SetUp();
        config_.Set("enable_offload", "false").ok();
    }
    static PutConfig Copies(uint32_t n, std::vector<NodeId> nodes = {}) {
        PutConfig config;
        config.replicas = n;
        config.copy_nodes = std::move(nodes);
        return config;
    }
    Result<PutStartReply> Start(const std::string& key, const PutConfig& config,
                                NodeId preferred = kNoNode) {
        return store().PutStart(1, key, kObject, preferred, nullptr, config);
    }
    Status PutCopies(const std::string& key, const PutConfig& config, NodeId preferred = kNoNode) {
        Result<PutStartReply> start = Start(key, config, preferred);
        if (!start.ok()) return start.status();
        return store().PutEnd(1, key, start->generation);
    }
};

TEST_F(ReplicaCopiesTest, CopiesAreOnDistinctNodesAndReadableOnlyOnceThePutEnds) {
    NodeId a = AddNode("a", 8 * kObject);
    AddNode("b", 8 * kObject);
    AddNode("c", 8 * kObject);
    Result<PutStartReply> start = Start("k", Copies(3), a);
    ASSERT_TRUE(start.ok()) << start.status().ToString();
    ASSERT_EQ(start->copies.size(), 2u);
    std::set<NodeId> nodes{start->replica.node};
    for (const ReplicaDesc& copy : start->copies) {
        EXPECT_EQ(copy.state, ReplicaState::kProcessing);
        nodes.insert(copy.node);
    }
    EXPECT_EQ(nodes.size(), 3u);
    EXPECT_EQ(start->replica.node, a);
    EXPECT_EQ(Get("k"), StatusCode::kNotReady);
    EXPECT_EQ(DramUsed(), 3 * kObject);
    ASSERT_TRUE(store().PutEnd(1, "k", start->generation).ok());
    Result<ObjectView> read = store().GetReplicaList("k");
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(read->replicas.size(), 3u);
    EXPECT_EQ(read->replicas.front().node, a);
    EXPECT_EQ(Metric("put_copies_short_total"), 0);
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, CopyNodesArePlacedFirstAndUnknownOnesAreOnlyHints) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    NodeId c = AddNode("c", 8 * kObject);
    ASSERT_TRUE(PutCopies("k", Copies(3, {c, b}), a).ok());
    EXPECT_EQ(MemoryNodes("k"), (std::vector<NodeId>{a, c, b}));
    // A copy node that is the first range's, or no live node, places the copy elsewhere.
    ASSERT_TRUE(PutCopies("k2", Copies(2, {a}), a).ok());
    EXPECT_EQ(MemoryNodes("k2").size(), 2u);
    ASSERT_TRUE(PutCopies("k3", Copies(2, {NodeId{999999}}), a).ok());
    EXPECT_EQ(MemoryNodes("k3").size(), 2u);
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, MoreCopiesThanNodesPlacesWhatItCanAndCountsThePut) {
    AddNode("a", 8 * kObject);
    AddNode("b", 8 * kObject);
    ASSERT_TRUE(PutCopies("k", Copies(5)).ok());
    EXPECT_EQ(MemoryNodes("k").size(), 2u);
    EXPECT_EQ(Metric("put_copies_short_total"), 1);
    EXPECT_EQ(Start("zero", Copies(0)).status().code(), StatusCode::kInvalidArgument);
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, ACopyFindsRoomByEvictingTheColdest) {
    NodeId a = AddNode("a", 2 * kObject);
    NodeId b = AddNode("b", 2 * kObject);
    Put("b1", kObject, b);
    Put("b2", kObject, b);  // b is full
    ASSERT_TRUE(PutCopies("k", Copies(2), a).ok());
    EXPECT_EQ(MemoryNodes("k"), (std::vector<NodeId>{a, b}));
    EXPECT_FALSE(*store().Exists("b1"));  // the coldest made the copy's room
    EXPECT_TRUE(*store().Exists("b2"));
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, EvictionTakesOneCopyAtATime) {
    NodeId a = AddNode("a", 2 * kObject);
    NodeId b = AddNode("b", 2 * kObject);
    ASSERT_TRUE(PutCopies("old", Copies(2), a).ok());  // the coldest
    Put("x", kObject, a);
    Put("y", kObject, b);  // DRAM is full
    Put("z", kObject, b);
    EXPECT_EQ(MemoryNodes("old"), std::vector<NodeId>{a});  // b's copy made the room
    EXPECT_EQ(Get("old"), StatusCode::kOk);
    EXPECT_EQ(Metric("evictions_total"), 1);
    Put("w", kObject, a);  // old is read, so x is the coldest now
    EXPECT_FALSE(*store().Exists("x"));
    EXPECT_EQ(MemoryNodes("old"), std::vector<NodeId>{a});
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, ADepartedNodeTakesOnlyItsCopyAndABackOneIsACopyAgain) {
    NodeId a = AddNode("a", 4 * kObject);
    NodeId b = AddNode("b", 4 * kObject);
    Result<PutStartReply> start = Start("k", Copies(2, {b}), a);
    ASSERT_TRUE(start.ok());
    ASSERT_TRUE(store().PutEnd(1, "k", start->generation).ok());
    const uint64_t b_offset = start->copies.at(0).offset;
    ASSERT_TRUE(store().UnregisterNode(b).ok());
    EXPECT_EQ(MemoryNodes("k"), std::vector<NodeId>{a});
    EXPECT_EQ(Get("k"), StatusCode::kOk);
    ExpectInvariants();
    // b comes back with its copy (the same generation: the same bytes): a copy again.
    NodeId back = AddNode("b", 4 * kObject);
    std::vector<MemoryReplicaReport> reports{{"k", start->generation, kObject, b_offset}};
    Result<std::vector<Status>> out = store().RegisterMemoryReplicas(back, reports);
    ASSERT_TRUE(out.ok());
    EXPECT_TRUE((*out)[0].ok()) << (*out)[0].ToString();
    EXPECT_EQ(MemoryNodes("k"), (std::vector<NodeId>{a, back}));
    // A second copy on one node is not.
    std::vector<MemoryReplicaReport> twice{{"k", start->generation, kObject, 2 * kObject}};
    out = store().RegisterMemoryReplicas(back, twice);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ((*out)[0].code(), StatusCode::kAlreadyExists);
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, AHardPinCountsTheCopiesItHasNotThoseItHad) {
    NodeId a = AddNode("a", 4 * kObject);
    NodeId b = AddNode("b", 4 * kObject);
    PutConfig hard = Copies(2, {b});
    hard.hard = true;
    Result<PutStartReply> start = Start("k", hard, a);
    ASSERT_TRUE(start.ok());
    ASSERT_TRUE(store().PutEnd(1, "k", start->generation).ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), 2 * kObject);
    // b leaves with its copy: the pin counts the one left.
    ASSERT_TRUE(store().UnregisterNode(b).ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), kObject);
    ExpectInvariants();
    // b comes back with it: two again.
    NodeId back = AddNode("b", 4 * kObject);
    std::vector<MemoryReplicaReport> reports{
        {"k", start->generation, kObject, start->copies.at(0).offset}};
    Result<std::vector<Status>> out = store().RegisterMemoryReplicas(back, reports);
    ASSERT_TRUE(out.ok() && (*out)[0].ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), 2 * kObject);
    ExpectInvariants();
    // A drain of one copy's node drops that copy (the other holds the bytes): one again.
    std::vector<DrainUnit> units = store().DrainUnits(back);
    ASSERT_EQ(units.size(), 1u);
    Result<DrainStep> step = store().DrainStart(back, units[0]);
    ASSERT_TRUE(step.ok());
    EXPECT_EQ(step->kind, DrainStep::kDone);
    EXPECT_EQ(Metric("hard_pinned_bytes"), kObject);
    ASSERT_TRUE(store().Remove("k").ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), 0);
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, ANewMasterLearnsEveryCopyFromTheNodes) {
    NodeId a = AddNode("a", 4 * kObject);
    NodeId b = AddNode("b", 4 * kObject);
    Result<PutStartReply> start = Start("k", Copies(2, {b}), a);
    ASSERT_TRUE(start.ok());
    ASSERT_TRUE(store().PutEnd(1, "k", start->generation).ok());
    // A takeover (HA) or a restart: the new master knows only what the nodes report.
    store_.reset();
    store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 8);
    NodeId a2 = AddNode("a", 4 * kObject);
    NodeId b2 = AddNode("b", 4 * kObject);
    for (auto [node, offset] : {std::pair{a2, start->replica.offset},
                                std::pair{b2, start->copies.at(0).offset}}) {
        std::vector<MemoryReplicaReport> report{{"k", start->generation, kObject, offset}};
        Result<std::vector<Status>> out = store().RegisterMemoryReplicas(node, report);
        ASSERT_TRUE(out.ok());
        EXPECT_TRUE((*out)[0].ok()) << (*out)[0].ToString();
    }
    EXPECT_EQ(MemoryNodes("k"), (std::vector<NodeId>{a2, b2}));
    EXPECT_EQ(DramUsed(), 2 * kObject);
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, ManualEvictAndOffloadOnEvictTakeEveryCopy) {
    config_.Set("enable_offload", "true").ok();
    NodeId a = AddNode("a", 4 * kObject);
    NodeId b = AddNode("b", 4 * kObject);
    ASSERT_TRUE(PutCopies("k", Copies(2), a).ok());
    Result<ManualOutcome> evicted = store().Evict("k");
    ASSERT_TRUE(evicted.ok());
    EXPECT_EQ(*evicted, ManualOutcome::kQueued);  // a disk copy first
    RunOffloads(a);
    EXPECT_EQ(TiersOf("k"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(DramUsed(), 0u);
    // Without a disk tier, the evict drops them at once.
    config_.Set("enable_offload", "false").ok();
    ASSERT_TRUE(PutCopies("k2", Copies(2), b).ok());
    evicted = store().Evict("k2");
    ASSERT_TRUE(evicted.ok());
    EXPECT_EQ(*evicted, ManualOutcome::kDone);
    EXPECT_FALSE(*store().Exists("k2"));
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, ATenantsCopiesStayWithinItsMemoryQuota) {
    AddNode("a", 8 * kObject);
    AddNode("b", 8 * kObject);
    AddNode("c", 8 * kObject);
    ASSERT_TRUE(store().SetTenant("t", {2 * kObject, 0}).ok());
    const std::string key = *KeyScope::Make("t")->Scope("k");
    ASSERT_TRUE(PutCopies(key, Copies(3)).ok());
    EXPECT_EQ(MemoryNodes(key).size(), 2u);  // the third would pass the quota
    EXPECT_EQ(Metric("put_copies_short_total"), 1);
    ExpectInvariants();
}

TEST_F(ReplicaCopiesTest, HardPinsAndRevokesCountEveryCopy) {
    AddNode("a", 4 * kObject);
    AddNode("b", 4 * kObject);
    PutConfig hard = Copies(2);
    hard.hard = true;
    ASSERT_TRUE(PutCopies("pinned", hard).ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), 2 * kObject);
    ASSERT_TRUE(store().Remove("pinned").ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), 0);
    // Past hard_pin_max_ratio the copies stop, not the put: a quarter of 8 objects is 2.
    config_.Set("hard_pin_max_ratio", "0.25").ok();
    ASSERT_TRUE(PutCopies("p1", hard).ok());  // 2 objects pinned: the cap
    EXPECT_EQ(PutCopies("p2", hard).code(), StatusCode::kNoSpace);  // its first range is past it
    ASSERT_TRUE(store().Remove("p1").ok());
    PutConfig single = Copies(1);
    single.hard = true;
    ASSERT_TRUE(PutCopies("p4", single).ok());  // 1 object pinned
    ASSERT_TRUE(PutCopies("p5", hard).ok());   // its first range fits, its copy would not
    EXPECT_EQ(MemoryNodes("p5").size(), 1u);
    EXPECT_EQ(Metric("hard_pinned_bytes"), 2 * kObject);
    ASSERT_TRUE(store().Remove("p4").ok());
    ASSERT_TRUE(store().Remove("p5").ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), 0);
    Result<PutStartReply> start = Start("revoked", Copies(2));
    ASSERT_TRUE(start.ok());
    EXPECT_EQ(DramUsed(), 2 * kObject);
    ASSERT_TRUE(store().PutRevoke(1, "revoked", start->generation).ok());
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
