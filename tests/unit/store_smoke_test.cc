#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class StoreSmokeTest : public StoreFixture {};

TEST_F(StoreSmokeTest, PutGetEvictOffloadPromoteRoundTrip) {
    NodeId node = AddNode("n1", 8 * kObject);
    for (int i = 0; i < 8; ++i) Put("k" + std::to_string(i));
    EXPECT_EQ(store().ComputeTotals().dram_used, 8 * kObject);
    // The ninth Put needs room: k0 (coldest) is queued for offload; with no wait it fails.
    EXPECT_EQ(store().PutStart(1, "k8", kObject).status().code(), StatusCode::kNoSpace);
    EXPECT_EQ(RunOffloads(node), 1u);
    EXPECT_EQ(TiersOf("k0"), std::vector<Tier>{Tier::kLocalDisk});
    Put("k8");
    ExpectInvariants();
    // k0 is on disk only; two reads make it hot enough (threshold 2).
    ASSERT_TRUE(store().GetReplicaList("k0").ok());
    EXPECT_EQ(Metric("promotion_queued_total"), 0);
    ASSERT_TRUE(store().GetReplicaList("k0").ok());
    EXPECT_EQ(Metric("promotion_queued_total"), 1);
    ExpectInvariants(1, 1);
    EXPECT_EQ(RunPromotions(node), 1u);
    Result<ObjectView> view = store().GetReplicaList("k0");
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->replicas.front().tier, Tier::kMemory);
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
