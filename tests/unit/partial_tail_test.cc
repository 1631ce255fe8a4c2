// Issue 37: a batched put's partial tail (its last value, smaller than the others, all one
// size) is listed at the cold end of the LRU order when its put ends (core/master/put_hint.h
// BatchShape, knob partial_tail_cold, metric put_cold_inserted_total).
#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

// The rule over a whole batch, fed one value at a time as a daemon sees them.
bool LastIsPartialTail(const std::vector<uint64_t>& sizes) {
    BatchShape shape;
    for (uint64_t size : sizes) shape.Add(size);
    return shape.LastIsPartialTail();
}

TEST(BatchShape, OnlyASmallerLastAfterEqualOthersIsAPartialTail) {
    using V = std::vector<uint64_t>;
    EXPECT_FALSE(LastIsPartialTail(V{}));
    EXPECT_FALSE(LastIsPartialTail(V{100}));           // a single put says nothing
    EXPECT_FALSE(LastIsPartialTail(V{100, 100}));      // full pages only (vLLM, SGLang)
    EXPECT_FALSE(LastIsPartialTail(V{100, 100, 100}));
    EXPECT_TRUE(LastIsPartialTail(V{100, 40}));
    EXPECT_TRUE(LastIsPartialTail(V{100, 100, 100, 1}));
    EXPECT_FALSE(LastIsPartialTail(V{40, 100}));       // larger last
    EXPECT_FALSE(LastIsPartialTail(V{100, 90, 40}));   // the others differ
    EXPECT_FALSE(LastIsPartialTail(V{100, 40, 40}));
    // Fed one value at a time, it answers for the value added last.
    BatchShape shape;
    shape.Add(100);
    EXPECT_FALSE(shape.LastIsPartialTail());
    shape.Add(30);
    EXPECT_TRUE(shape.LastIsPartialTail());
    shape.Add(30);
    EXPECT_FALSE(shape.LastIsPartialTail());
    shape.Reset();
    shape.Add(30);
    EXPECT_FALSE(shape.LastIsPartialTail());
}

class PartialTailTest : public StoreFixture {
public:
    void SetUp() override {
        StoreFixture::SetUp();
        // Evicted objects go at once: the order of eviction is what is looked at.
        config_.Set("enable_offload", "false").ok();
        AddNode("n1", 4 * kObject);
    }
    // A tail one byte short of a full block: smaller as a value, and as large in DRAM, so
    // what eviction frees for it is one whole block's room (no fragment decides).
    static constexpr uint64_t kTail = kObject - 1;
    // What the daemon's batch put does (daemon/master_service.cc BatchPutStart): the batch's
    // sizes through the core rule, the last value told as a partial tail when it is one.
    void PutBatch(const std::vector<std::pair<std::string, uint64_t>>& batch) {
        BatchShape shape;
        for (const auto& item : batch) shape.Add(item.second);
        PutHint tail;
        tail.last_partial = true;
        for (size_t i = 0; i < batch.size(); ++i) {
            const bool is_tail = i + 1 == batch.size() && shape.LastIsPartialTail();
            Result<PutStartReply> start = store().PutStart(1, batch[i].first, batch[i].second,
                                                           kNoNode, is_tail ? &tail : nullptr);
            ASSERT_TRUE(start.ok()) << start.status().ToString();
            ASSERT_TRUE(store().PutEnd(1, batch[i].first, start->generation).ok());
        }
    }
    bool Held(const std::string& key) { return store().Stat(key).ok(); }
};

TEST_F(PartialTailTest, ASmallerLastValueIsEvictedBeforeOlderFullBlocks) {
    Put("old-0");
    Put("old-1");
    PutBatch({{"req-0", kObject}, {"req-1", kTail}});
    EXPECT_EQ(Metric("put_cold_inserted_total"), 1);
    Put("new");  // needs room: the tail goes, not the least recent full block
    EXPECT_FALSE(Held("req-1"));
    for (const char* key : {"old-0", "old-1", "req-0", "new"}) EXPECT_TRUE(Held(key)) << key;
    Put("newer");  // then LRU as usual
    EXPECT_FALSE(Held("old-0"));
    ExpectInvariants();
}

TEST_F(PartialTailTest, AGetMakesTheTailHot) {
    Put("old-0");
    Put("old-1");
    PutBatch({{"req-0", kObject}, {"req-1", kTail}});
    EXPECT_EQ(Get("req-1"), StatusCode::kOk);
    Put("new");
    EXPECT_FALSE(Held("old-0"));
    EXPECT_TRUE(Held("req-1"));
    ExpectInvariants();
}

TEST_F(PartialTailTest, EqualSizesAndSinglePutsChangeNothing) {
    Put("old-0");
    Put("old-1");
    PutBatch({{"req-0", kObject}, {"req-1", kObject}});  // full pages only
    Put("new");
    EXPECT_FALSE(Held("old-0"));
    EXPECT_TRUE(Held("req-1"));
    PutBatch({{"single", kTail}});  // a small value alone is not a tail
    EXPECT_FALSE(Held("old-1"));
    Put("newer");
    EXPECT_FALSE(Held("req-0"));
    EXPECT_TRUE(Held("single"));
    EXPECT_EQ(Metric("put_cold_inserted_total"), 0);
    ExpectInvariants();
}

TEST_F(PartialTailTest, KnobOffListsTheTailAsAnyPut) {
    config_.Set("partial_tail_cold", "false").ok();
    Put("old-0");
    Put("old-1");
    PutBatch({{"req-0", kObject}, {"req-1", kTail}});
    Put("new");
    EXPECT_FALSE(Held("old-0"));
    EXPECT_TRUE(Held("req-1"));
    EXPECT_EQ(Metric("put_cold_inserted_total"), 0);
    ExpectInvariants();
}

// Each tail is colder than every full block, even the least recent: a tail put after it is
// colder still (it is listed at the cold end too).
TEST_F(PartialTailTest, TailsGoBeforeAnyFullBlock) {
    Put("old-0");
    PutBatch({{"a-0", kObject}, {"a-1", kTail}});
    PutBatch({{"b-0", kObject}, {"b-1", kTail - 1}});  // b-1 needs room: a-1 goes, not old-0
    EXPECT_FALSE(Held("a-1"));
    for (const char* key : {"old-0", "a-0", "b-0", "b-1"}) EXPECT_TRUE(Held(key)) << key;
    Put("new");
    EXPECT_FALSE(Held("b-1"));
    EXPECT_TRUE(Held("old-0"));
    EXPECT_EQ(Metric("put_cold_inserted_total"), 2);
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
