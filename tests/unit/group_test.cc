// Object groups (ReplicateConfig.group_ids, core/master/group_table.h): eviction takes a victim's
// group with it, a read of one member refreshes the others, pinned members keep their pins'
// promise, and a removed member leaves its group.
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class GroupTest : public StoreFixture {
public:
    void SetUp() override {
        StoreFixture::SetUp();
        config_.Set("enable_offload", "false").ok();  // an evicted object is gone: easy to see
    }
    Status PutIn(const std::string& key, const std::string& group, bool hard = false) {
        PutConfig pin;
        pin.group = group;
        pin.hard = hard;
        Result<PutStartReply> start = store().PutStart(1, key, kObject, kNoNode, nullptr, pin);
        if (!start.ok()) return start.status();
        return store().PutEnd(1, key, start->generation);
    }
    bool Has(const std::string& key) { return *store().Exists(key); }
};

TEST_F(GroupTest, AnEvictedMemberTakesItsGroupWithIt) {
    AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutIn("a_k", "page-a").ok());  // the coldest
    ASSERT_TRUE(PutIn("b_k", "page-b").ok());
    ASSERT_TRUE(PutIn("b_v", "page-b").ok());
    ASSERT_TRUE(PutIn("a_v", "page-a").ok());  // hotter than page b
    Put("x");  // DRAM full: a_k goes, and a_v with it, not b_k
    EXPECT_FALSE(Has("a_k"));
    EXPECT_FALSE(Has("a_v"));
    EXPECT_TRUE(Has("b_k"));
    EXPECT_TRUE(Has("b_v"));
    EXPECT_EQ(Metric("group_evictions_total"), 1);
    ExpectInvariants();
}

TEST_F(GroupTest, AReadRefreshesTheWholeGroup) {
    AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutIn("a_k", "page-a").ok());
    ASSERT_TRUE(PutIn("a_v", "page-a").ok());
    Put("u1");
    Put("u2");
    Read("a_v");  // a_k is refreshed too: u1 is now the coldest
    Put("x");
    EXPECT_FALSE(Has("u1"));
    EXPECT_TRUE(Has("a_k"));
    EXPECT_TRUE(Has("a_v"));
    ExpectInvariants();
}

TEST_F(GroupTest, APinnedMemberStays) {
    AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutIn("a_k", "page-a").ok());
    ASSERT_TRUE(PutIn("a_v", "page-a", /*hard=*/true).ok());
    Put("u1");
    Put("u2");
    Put("x");  // a_k goes; its hard-pinned member is never evicted
    EXPECT_FALSE(Has("a_k"));
    EXPECT_TRUE(Has("a_v"));
    ExpectInvariants();
}

TEST_F(GroupTest, StatShowsTheGroupAndARemovedMemberLeavesIt) {
    AddNode("n1", 3 * kObject);
    ASSERT_TRUE(PutIn("a_k", "page-a").ok());
    ASSERT_TRUE(PutIn("a_v", "page-a").ok());
    Put("u");
    Result<ObjectView> view = store().Stat("a_k");
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->group, "page-a");
    EXPECT_EQ(store().Stat("u")->group, "");
    ASSERT_TRUE(store().Remove("a_v", /*force=*/true).ok());
    ASSERT_TRUE(PutIn("a_v", "").ok());  // a new, ungrouped incarnation
    EXPECT_EQ(store().Stat("a_v")->group, "");
    Put("x");  // a_k, the coldest, goes alone
    EXPECT_FALSE(Has("a_k"));
    EXPECT_TRUE(Has("a_v"));
    EXPECT_EQ(Metric("group_evictions_total"), 0);
    ExpectInvariants();
}

TEST_F(GroupTest, AnOverlongGroupIdIsRefused) {
    AddNode("n1", 4 * kObject);
    Status st = PutIn("k", std::string(GroupTable::kMaxGroupIdBytes + 1, 'g'));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_FALSE(Has("k"));
    ExpectInvariants();
}

TEST_F(GroupTest, TwoTenantsNamingTheSameGroupIdHaveTwoGroups) {
    AddNode("n1", 4 * kObject);
    const std::string a_k = *KeyScope::Make("a")->Scope("k");
    const std::string b_k = *KeyScope::Make("b")->Scope("k");
    const std::string b_v = *KeyScope::Make("b")->Scope("v");
    ASSERT_TRUE(PutIn(a_k, "page-1").ok());  // the coldest
    ASSERT_TRUE(PutIn(b_k, "page-1").ok());
    ASSERT_TRUE(PutIn(b_v, "page-1").ok());
    EXPECT_EQ(store().Stat(b_k)->group, "page-1");  // as the tenant named it
    Put("x");
    Put("y");  // DRAM full: a's object goes, alone: b's "page-1" is another group
    EXPECT_FALSE(Has(a_k));
    EXPECT_TRUE(Has(b_k));
    EXPECT_TRUE(Has(b_v));
    EXPECT_EQ(Metric("group_evictions_total"), 0);
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
