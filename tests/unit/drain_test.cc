// Draining a node (core/master/store_drain.cc): placement skips it, its units are listed
// hottest first, a unit with another MEMORY copy just drops this one, a copied unit commits
// on the target and leaves the node, and a unit whose object changed meanwhile gives its
// target's DRAM back. Eviction passes over objects held only on draining segments, and a
// drain's room is made only from colder objects.
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class DrainTest : public StoreFixture {
  public:
    void SetUp() override {
        StoreFixture::SetUp();
        config_.Set("enable_offload", "false").ok();
    }
    // Moves one unit as DrainJobs does, with the copy itself taken as done.
    Status Move(NodeId from, const DrainUnit& unit) {
        Result<DrainStep> step = store().DrainStart(from, unit);
        if (!step.ok()) return step.status();
        return store().DrainEnd(from, unit, *step, /*copied=*/true);
    }
};

TEST_F(DrainTest, PlacementSkipsADrainingNodeUntilItIsBackInService) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    ASSERT_TRUE(store().SetSegmentState(a, SegmentState::kDraining).ok());
    Put("k", kObject, a);  // asked for by name: still elsewhere
    EXPECT_EQ(MemoryNodes("k"), std::vector<NodeId>{b});
    ASSERT_TRUE(store().SetSegmentState(a, SegmentState::kOk).ok());
    Put("k2", kObject, a);
    EXPECT_EQ(MemoryNodes("k2"), std::vector<NodeId>{a});
    EXPECT_TRUE(store().SetSegmentState(999, SegmentState::kDraining).Is(StatusCode::kUnknownNode));
    for (const NodeInfo& n : store().Nodes()) EXPECT_EQ(n.segment_state, SegmentState::kOk);
}

TEST_F(DrainTest, UnitsAreListedHottestFirstAndMoveToAnotherNode) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    Put("cold", kObject, a);
    Put("hot", kObject, a);
    ASSERT_TRUE(store().GetReplicaList("hot").ok());
    ASSERT_TRUE(store().SetSegmentState(a, SegmentState::kDraining).ok());
    std::vector<DrainUnit> units = store().DrainUnits(a);
    ASSERT_EQ(units.size(), 2u);
    EXPECT_EQ(units[0].key, "hot");
    EXPECT_EQ(units[1].key, "cold");
    const uint64_t used = DramUsed();
    for (const DrainUnit& unit : units) {
        Result<DrainStep> step = store().DrainStart(a, unit);
        ASSERT_TRUE(step.ok()) << step.status().ToString();
        ASSERT_EQ(step->kind, DrainStep::kCopy);
        EXPECT_EQ(step->target.node, b);
        EXPECT_EQ(DramUsed(), used + kObject) << "the target range is reserved";
        ASSERT_TRUE(store().DrainEnd(a, unit, *step, /*copied=*/true).ok());
        EXPECT_EQ(MemoryNodes(unit.key), std::vector<NodeId>{b});
        EXPECT_EQ(DramUsed(), used) << "the copy on the drained node is freed";
    }
    EXPECT_TRUE(store().DrainUnits(a).empty());
    ExpectInvariants();
}

TEST_F(DrainTest, AUnitWithAnotherMemoryCopyJustDropsThisOne) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    PutConfig two;
    two.replicas = 2;
    Result<PutStartReply> start = store().PutStart(1, "two", kObject, a, nullptr, two);
    ASSERT_TRUE(start.ok());
    ASSERT_TRUE(store().PutEnd(1, "two", start->generation).ok());
    std::vector<DrainUnit> units = store().DrainUnits(a);
    ASSERT_EQ(units.size(), 1u);
    Result<DrainStep> step = store().DrainStart(a, units[0]);
    ASSERT_TRUE(step.ok());
    EXPECT_EQ(step->kind, DrainStep::kDone);
    EXPECT_EQ(MemoryNodes("two"), std::vector<NodeId>{b});
    EXPECT_EQ(DramUsed(), kObject);
    ExpectInvariants();
}

TEST_F(DrainTest, AnObjectRemovedOrPutAgainWhileCopiedGivesTheTargetBack) {
    NodeId a = AddNode("a", 8 * kObject);
    AddNode("b", 8 * kObject);
    Put("gone", kObject, a);
    Put("again", kObject, a);
    std::vector<DrainUnit> units = store().DrainUnits(a);
    ASSERT_EQ(units.size(), 2u);
    std::vector<Result<DrainStep>> steps;
    for (const DrainUnit& unit : units) steps.push_back(store().DrainStart(a, unit));
    ASSERT_TRUE(store().Remove("gone").ok());
    ASSERT_TRUE(store().Remove("again").ok());
    Put("again", kObject, a);
    for (size_t i = 0; i < units.size(); ++i) {
        ASSERT_TRUE(steps[i].ok());
        EXPECT_TRUE(
            store().DrainEnd(a, units[i], *steps[i], /*copied=*/true).Is(StatusCode::kNotFound));
    }
    EXPECT_EQ(DramUsed(), kObject) << "only the new \"again\" holds DRAM";
    EXPECT_EQ(MemoryNodes("again"), std::vector<NodeId>{a});
    // A unit listed before its object went: nothing to move.
    Result<DrainStep> late = store().DrainStart(a, units[0]);
    ASSERT_TRUE(late.ok());
    EXPECT_EQ(late->kind, DrainStep::kDone);
    ExpectInvariants();
}

TEST_F(DrainTest, RoomIsMadeOnlyFromColderObjectsAndNeverOnTheDrainingNode) {
    NodeId a = AddNode("a", 4 * kObject);
    NodeId b = AddNode("b", 2 * kObject);
    Put("b-colder", kObject, b);
    Put("a-cold", kObject, a);
    Put("a-hot", kObject, a);
    Put("b-hotter", kObject, b);
    ASSERT_TRUE(store().GetReplicaList("a-hot").ok());  // the hottest of all now
    ASSERT_TRUE(store().SetSegmentState(a, SegmentState::kDraining).ok());
    std::vector<DrainUnit> units = store().DrainUnits(a);
    ASSERT_EQ(units.size(), 2u);
    // a-hot: b is full, so its coldest object (b-colder) goes for it; a-cold, colder still,
    // lies on the draining node, where room would be of no use.
    ASSERT_TRUE(Move(a, units[0]).ok());
    EXPECT_EQ(MemoryNodes("a-hot"), std::vector<NodeId>{b});
    EXPECT_TRUE(MemoryNodes("b-colder").empty());
    EXPECT_EQ(MemoryNodes("a-cold"), std::vector<NodeId>{a});
    // a-cold: everything on b is hotter than it, so no room is made and it stays.
    Result<DrainStep> refused = store().DrainStart(a, units[1]);
    EXPECT_TRUE(refused.status().Is(StatusCode::kNoSpace)) << refused.status().ToString();
    EXPECT_EQ(MemoryNodes("a-cold"), std::vector<NodeId>{a});
    EXPECT_EQ(MemoryNodes("b-hotter"), std::vector<NodeId>{b});
    ExpectInvariants();
}

TEST_F(DrainTest, ACopyAnOffloadIsReadingWaitsForIt) {
    config_.Set("enable_offload", "true").ok();
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 8 * kObject);
    Put("k", kObject, a);
    Result<ManualOutcome> queued = store().Offload("k");
    ASSERT_TRUE(queued.ok()) << queued.status().ToString();
    std::vector<DrainUnit> units = store().DrainUnits(a);
    ASSERT_EQ(units.size(), 1u);
    // Its offload reads the first MEMORY copy: the drain neither drops nor displaces it.
    EXPECT_TRUE(store().DrainStart(a, units[0]).status().Is(StatusCode::kBusy));
    EXPECT_EQ(RunOffloads(a), 1u);
    ASSERT_TRUE(Move(a, units[0]).ok());
    EXPECT_EQ(MemoryNodes("k"), std::vector<NodeId>{b});
    ExpectInvariants();
}

TEST_F(DrainTest, RoomOnANamedTargetTakesTheCopyThereNotAnother) {
    NodeId a = AddNode("a", 2 * kObject);
    NodeId b = AddNode("b", 1 * kObject);
    NodeId c = AddNode("c", 2 * kObject);
    PutConfig two;
    two.replicas = 2;
    two.copy_nodes = {c};
    Result<PutStartReply> start = store().PutStart(1, "cold", kObject, b, nullptr, two);
    ASSERT_TRUE(start.ok());
    ASSERT_TRUE(store().PutEnd(1, "cold", start->generation).ok());
    ASSERT_EQ(MemoryNodes("cold"), (std::vector<NodeId>{b, c}));
    Put("hot", kObject, a);
    ASSERT_TRUE(store().SetSegmentState(a, SegmentState::kDraining).ok());
    std::vector<DrainUnit> units = store().DrainUnits(a);
    ASSERT_EQ(units.size(), 1u);
    const std::vector<NodeId> targets{b};
    Result<DrainStep> step = store().DrainStart(a, units[0], targets);
    ASSERT_TRUE(step.ok()) << step.status().ToString();
    EXPECT_EQ(step->target.node, b);
    // The cold object's copy on b made the room; its copy on c stays.
    EXPECT_EQ(MemoryNodes("cold"), std::vector<NodeId>{c});
    ASSERT_TRUE(store().DrainEnd(a, units[0], *step, /*copied=*/true).ok());
    EXPECT_EQ(MemoryNodes("hot"), std::vector<NodeId>{b});
    ExpectInvariants();
}

// A node that registered again (a failover, a master restart) is still reporting the DRAM
// ranges it holds. A drain makes no room by eviction meanwhile, as a Put does not (the objects
// just reported back may be the coldest): the unit waits, Busy (counted blocked, and tried
// again), instead of evicting or failing; once the node has reported, its segment takes it.
TEST_F(DrainTest, NoRoomIsMadeForAUnitWhileANodeReportsWhatItHolds) {
    NodeId a = AddNode("a", 2 * kObject);
    NodeId b = AddNode("b", 1 * kObject);
    Put("b-cold", kObject, b);
    Put("a-hot", kObject, a);
    NodeSpec spec{"c", "c:data", 2 * kObject, 1ull << 30};
    spec.holds_memory = true;
    Result<NodeId> c = store().RegisterNode(spec);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_TRUE(store().SetSegmentState(a, SegmentState::kDraining).ok());
    std::vector<DrainUnit> units = store().DrainUnits(a);
    ASSERT_EQ(units.size(), 1u);
    Result<DrainStep> waiting = store().DrainStart(a, units[0]);
    EXPECT_TRUE(waiting.status().Is(StatusCode::kBusy)) << waiting.status().ToString();
    EXPECT_NE(waiting.status().message().find("node c "), std::string::npos)
        << waiting.status().ToString();
    EXPECT_EQ(MemoryNodes("b-cold"), std::vector<NodeId>{b}) << "evicted for the drain";

    ASSERT_TRUE(store().Heartbeat(*c, 0).ok());  // its reports are in
    ASSERT_TRUE(Move(a, units[0]).ok());
    EXPECT_EQ(MemoryNodes("a-hot"), std::vector<NodeId>{*c});
    EXPECT_EQ(MemoryNodes("b-cold"), std::vector<NodeId>{b});
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
