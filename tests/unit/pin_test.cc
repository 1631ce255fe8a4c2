// Issue 33: ReplicateConfig's pins honoured (core/master/pin_table.h). A soft-pinned object is evicted
// only after unpinned ones until its pin lapses (one TTL after the put ends or its last read),
// in every eviction order; a hard-pinned one is never evicted, its bytes counted and capped.
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class PinTest : public StoreFixture, public ::testing::WithParamInterface<const char*> {
public:
    void SetUp() override {
        StoreFixture::SetUp();
        config_.Set("eviction_policy", GetParam()).ok();
        config_.Set("enable_offload", "false").ok();
    }
    static std::string K(int i) { return "k" + std::to_string(i); }
    static PutConfig Soft(Nanos ttl) {
        PutConfig config;
        config.soft = true;
        config.soft_ttl = ttl;
        return config;
    }
    static PutConfig Hard() {
        PutConfig config;
        config.hard = true;
        return config;
    }

    Status PutPinned(const std::string& key, const PutConfig& pin) {
        Result<PutStartReply> start = store().PutStart(1, key, kObject, kNoNode, nullptr, pin);
        if (!start.ok()) return start.status();
        return store().PutEnd(1, key, start->generation);
    }
    bool Has(const std::string& key) { return *store().Exists(key); }
};

TEST_P(PinTest, SoftPinnedOutlivesColderUnpinnedOnesUntilItsTtl) {
    AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutPinned("p", Soft(seconds(10))).ok());  // the coldest
    for (int i = 1; i < 4; ++i) Put(K(i));
    clock_.Advance(seconds(1));
    Put(K(4));  // k1 goes, not the colder p
    Put(K(5));  // k2
    EXPECT_TRUE(Has("p"));
    EXPECT_FALSE(Has(K(1)));
    EXPECT_FALSE(Has(K(2)));
    Result<ObjectView> view = store().Stat("p");
    ASSERT_TRUE(view.ok());
    EXPECT_TRUE(view->soft_pinned);
    EXPECT_EQ(view->soft_pin_expiry, clock_.Now() + seconds(9));
    clock_.Advance(seconds(10));  // the pin lapsed: p is the coldest again
    Put(K(6));
    EXPECT_FALSE(Has("p"));
    EXPECT_TRUE(Has(K(3)));
    ExpectInvariants();
}

TEST_P(PinTest, AReadExtendsTheSoftPin) {
    AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutPinned("p", Soft(seconds(10))).ok());
    clock_.Advance(seconds(8));
    Read("p");  // pinned until 18 s
    for (int i = 1; i < 4; ++i) Put(K(i));
    clock_.Advance(seconds(8));  // 16 s: 2 s left
    Put(K(4));
    EXPECT_TRUE(Has("p"));
    EXPECT_FALSE(Has(K(1)));
    clock_.Advance(seconds(3));
    Put(K(5));
    EXPECT_FALSE(Has("p"));
    ExpectInvariants();
}

TEST_P(PinTest, SoftPinWithoutTtlTakesTheKnobDefault) {
    config_.Set("default_kv_soft_pin_ttl_ms", "5000").ok();
    AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutPinned("p", Soft(Nanos(0))).ok());
    Result<ObjectView> view = store().Stat("p");
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->soft_pin_expiry, clock_.Now() + seconds(5));
}

// Soft pins order eviction; they do not refuse a Put (Mooncake evicts soft-pinned objects
// when the unpinned ones are not enough).
TEST_P(PinTest, AllSoftPinnedStillMakesRoomColdestFirst) {
    AddNode("n1", 2 * kObject);
    ASSERT_TRUE(PutPinned("p0", Soft(seconds(60))).ok());
    ASSERT_TRUE(PutPinned("p1", Soft(seconds(60))).ok());
    Put(K(2));
    EXPECT_FALSE(Has("p0"));
    EXPECT_TRUE(Has("p1"));
    ExpectInvariants();
}

TEST_P(PinTest, HardPinnedIsNeverEvicted) {
    AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutPinned("h0", Hard()).ok());
    ASSERT_TRUE(PutPinned("h1", Hard()).ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), 2 * kObject);
    for (int i = 2; i < 10; ++i) Put(K(i));
    EXPECT_TRUE(Has("h0"));
    EXPECT_TRUE(Has("h1"));
    EXPECT_EQ(store().Evict("h0").status().code(), StatusCode::kInvalidArgument);
    Result<ObjectView> view = store().Stat("h0");
    ASSERT_TRUE(view.ok());
    EXPECT_TRUE(view->hard_pinned);
    EXPECT_FALSE(view->soft_pinned);
    // Removing one gives its bytes back.
    ASSERT_TRUE(store().Remove("h0").ok());
    EXPECT_EQ(Metric("hard_pinned_bytes"), kObject);
    ExpectInvariants();
}

// With a LOCAL_DISK copy, dropping MEMORY would lose nothing; a hard pin keeps it anyway.
TEST_P(PinTest, HardPinnedKeepsMemoryBesideItsDiskCopy) {
    config_.Set("enable_offload", "true").ok();
    config_.Set("offload_on_evict", "false").ok();
    NodeId node = AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutPinned("h", Hard()).ok());
    RunOffloads(node);
    for (int i = 1; i < 8; ++i) {
        Put(K(i));
        RunOffloads(node);
    }
    EXPECT_EQ(TiersOf("h"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    EXPECT_EQ(TiersOf(K(1)), std::vector<Tier>{Tier::kLocalDisk});
    ExpectInvariants();
}

TEST_P(PinTest, HardPinPastTheCapIsRefusedWithNoSpace) {
    config_.Set("hard_pin_max_ratio", "0.5").ok();
    AddNode("n1", 4 * kObject);
    ASSERT_TRUE(PutPinned("h0", Hard()).ok());
    ASSERT_TRUE(PutPinned("h1", Hard()).ok());
    Status refused = PutPinned("h2", Hard());
    EXPECT_EQ(refused.code(), StatusCode::kNoSpace) << refused.ToString();
    EXPECT_NE(refused.message().find("hard_pin_max_ratio"), std::string::npos);
    EXPECT_FALSE(Has("h2"));
    EXPECT_EQ(Metric("hard_pinned_bytes"), 2 * kObject);
    // An unpinned put of the same key still fits.
    Put("h2");
    EXPECT_TRUE(Has("h2"));
    ExpectInvariants();
}

TEST_P(PinTest, EverythingHardPinnedRefusesAPut) {
    config_.Set("hard_pin_max_ratio", "1").ok();
    AddNode("n1", 2 * kObject);
    ASSERT_TRUE(PutPinned("h0", Hard()).ok());
    ASSERT_TRUE(PutPinned("h1", Hard()).ok());
    Result<PutStartReply> start = store().PutStart(1, "k", kObject);
    EXPECT_EQ(start.status().code(), StatusCode::kNoSpace);
    ExpectInvariants();
}

// A round sets soft-pinned objects aside instead of walking past them again
// (EvictionLists::held); once their pins lapse they are the coldest again, and one read in the
// meantime keeps its object pinned and hot.
TEST_P(PinTest, ObjectsSetAsideComeBackColdestWhenTheirPinsLapse) {
    AddNode("n1", 8 * kObject);
    for (int i = 0; i < 4; ++i)
        ASSERT_TRUE(PutPinned("p" + std::to_string(i), Soft(seconds(10))).ok());
    for (int i = 4; i < 8; ++i) Put(K(i));
    Put(K(8));  // the round sets p0..p3 aside and takes k4
    Put(K(9));  // k5, without walking past them again
    EXPECT_FALSE(Has(K(4)));
    EXPECT_FALSE(Has(K(5)));
    clock_.Advance(seconds(5));
    Read("p2");                  // pinned until 15 s, and listed again as the most recent
    clock_.Advance(seconds(6));  // 11 s: p0, p1, p3 lapsed
    for (int i = 10; i < 13; ++i) Put(K(i));
    EXPECT_FALSE(Has("p0"));
    EXPECT_FALSE(Has("p1"));
    EXPECT_FALSE(Has("p3"));
    EXPECT_TRUE(Has(K(6)));
    EXPECT_TRUE(Has("p2"));
    for (int i = 13; i < 16; ++i) Put(K(i));  // k6, k7, k8: p2 is still pinned
    EXPECT_TRUE(Has("p2"));
    EXPECT_FALSE(Has(K(8)));
    ExpectInvariants();
}

// A batch read is a request's prefix in order: the pin of its last block covers the blocks
// before it, which are of no use to an engine without them.
TEST_P(PinTest, ABatchReadLendsTheLastBlocksSoftPinToItsPrefix) {
    AddNode("n1", 5 * kObject);
    Put("a");
    Put("b");
    ASSERT_TRUE(PutPinned("c", Soft(seconds(10))).ok());
    Put("d");
    Put("e");
    clock_.Advance(seconds(1));
    const std::vector<std::string> prefix = {"a", "b", "c"};
    for (const auto& r : store().BatchGetReplicaList(prefix)) ASSERT_TRUE(r.ok());
    Read("d");
    Read("e");  // coldest first: a, b, c, d, e
    Put("f");   // a and b are covered until c's pin lapses (11 s): d goes
    EXPECT_TRUE(Has("a"));
    EXPECT_TRUE(Has("b"));
    EXPECT_FALSE(Has("d"));
    Result<ObjectView> view = store().Stat("a");
    ASSERT_TRUE(view.ok());
    EXPECT_TRUE(view->soft_pinned);
    EXPECT_EQ(view->soft_pin_expiry, clock_.Now() + seconds(10));
    clock_.Advance(seconds(11));  // lapsed together
    Put("g");
    EXPECT_FALSE(Has("a"));
    ExpectInvariants();
}

TEST_P(PinTest, ABatchReadWithoutPinsPinsNothing) {
    AddNode("n1", 3 * kObject);
    Put("a");
    Put("b");
    Put("c");
    const std::vector<std::string> prefix = {"a", "b"};
    (void)store().BatchGetReplicaList(prefix);
    Read("c");
    Put("d");  // plain LRU: a goes
    EXPECT_FALSE(Has("a"));
    Result<ObjectView> view = store().Stat("b");
    ASSERT_TRUE(view.ok());
    EXPECT_FALSE(view->soft_pinned);
    ExpectInvariants();
}

INSTANTIATE_TEST_SUITE_P(EveryOrder, PinTest, ::testing::Values("lru", "hit_density", "adaptive"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace mooncake::testing
