// Issue 4: promotion on hit — the trigger and its gates, the task queue and heartbeat, the
// execution API (AllocStart, success), manual promote, and the funnel metrics. Cleanup paths
// (failure, Remove, re-put, reaper, node expiry) are in promotion_cleanup_test.cc.
// Every test ends with ExpectInvariants(): DRAM used = live allocations, the expected pins
// and tasks, and queued = completed + failed{alloc,io} + cancelled + expired + in_flight.
#include <atomic>
#include <future>
#include <thread>

#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class PromotionTest : public StoreFixture {
public:
    static std::string D(int i) { return "d" + std::to_string(i); }
    double Queued() { return Metric("promotion_queued_total"); }
    double Attempts() { return Metric("promotion_attempts_total"); }
    // One node with room, and `n` LOCAL_DISK-only objects d0..d(n-1) on its disk.
    NodeId NodeWithDiskObjects(int n, uint64_t dram = 64 * kObject) {
        NodeId node = AddNode("n1", dram);
        for (int i = 0; i < n; ++i) PutOnDisk(D(i), node);
        return node;
    }
    // The task the node is handed for `key` (delivers every queued task of the node).
    std::optional<PromotionTask> Deliver(NodeId node, const std::string& key) {
        for (PromotionTask& t : store().PromotionObjectHeartbeat(node, 1 << 20)) {
            if (t.key == key) return t;
        }
        return std::nullopt;
    }
};

// ---------------- the trigger ----------------

TEST_F(PromotionTest, PromotionFlagOffNothingEverFires) {
    config_.Set("promotion_on_hit", "false").ok();
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId node = NodeWithDiskObjects(4);
    std::vector<std::string> keys{D(0), D(1), D(2), D(3)};
    for (int r = 0; r < 300; ++r) {
        for (int i = 0; i < 4; ++i) ASSERT_EQ(Get(D(i)), StatusCode::kOk);
        store().BatchGetReplicaList(keys);
        clock_.Advance(milliseconds(100));
        store().Heartbeat(node).ok();
        store().Tick();
    }
    EXPECT_EQ(Attempts(), 0);
    EXPECT_EQ(Queued(), 0);
    for (const char* reason :
         {"admission_gated", "watermark_gated", "queue_full", "alloc_failed", "io_failed"}) {
        EXPECT_EQ(Failed(reason), 0) << reason;
    }
    EXPECT_EQ(Metric("promotion_deduplicated_total"), 0);
    EXPECT_TRUE(store().Tasks().empty());
    EXPECT_TRUE(store().PromotionObjectHeartbeat(node, 100).empty());
    for (int i = 0; i < 4; ++i) EXPECT_EQ(TiersOf(D(i)), std::vector<Tier>{Tier::kLocalDisk});
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionNeverFiresWhileAMemoryReplicaExists) {
    config_.Set("offload_on_evict", "false").ok();  // MEMORY + LOCAL_DISK after PutEnd
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId node = AddNode("n1", 64 * kObject);
    Put("both");
    Put("memory-only");
    RunOffloads(node);
    ASSERT_EQ(TiersOf("both"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    ASSERT_EQ(*store().Evict("both"), ManualOutcome::kDone);
    ASSERT_EQ(*store().Promote("both", false), ManualOutcome::kQueued);
    RunPromotions(node);  // back: MEMORY + LOCAL_DISK again
    const double queued = Queued();
    const double attempts = Attempts();  // the manual promote's
    for (int i = 0; i < 50; ++i) {
        ASSERT_EQ(Get("both"), StatusCode::kOk);
        ASSERT_EQ(Get("memory-only"), StatusCode::kOk);
    }
    EXPECT_EQ(Attempts(), attempts);
    EXPECT_EQ(Queued(), queued);
    EXPECT_EQ(Metric("gets_total", {{"tier", "MEMORY"}}), 100);
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionOneGetAtThresholdTwoDoesNotFire) {
    NodeId node = NodeWithDiskObjects(1);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Attempts(), 1);
    EXPECT_EQ(Failed("admission_gated"), 1);
    EXPECT_EQ(Queued(), 0);
    EXPECT_TRUE(store().Tasks().empty());
    EXPECT_TRUE(store().PromotionObjectHeartbeat(node, 8).empty());
    EXPECT_EQ(PinsOf(D(0)), 0u);
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionRepeatedGetsFireAndNextGetListsMemoryFirst) {
    NodeId node = NodeWithDiskObjects(1);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    Result<ObjectView> second = store().GetReplicaList(D(0));
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(Queued(), 1);
    EXPECT_EQ(Metric("promotion_in_flight"), 1);
    // The reply is unchanged: this reader still reads from disk.
    ASSERT_EQ(second->replicas.size(), 1u);
    EXPECT_EQ(second->replicas[0].tier, Tier::kLocalDisk);
    EXPECT_EQ(PinsOf(D(0)), 1u);
    ExpectInvariants(1, 1);
    ASSERT_EQ(RunPromotions(node), 1u);
    Result<ObjectView> third = store().GetReplicaList(D(0));
    ASSERT_TRUE(third.ok());
    ASSERT_EQ(third->replicas.size(), 2u);
    EXPECT_EQ(third->replicas[0].tier, Tier::kMemory);
    EXPECT_EQ(third->replicas[0].state, ReplicaState::kComplete);
    EXPECT_EQ(third->replicas[0].node, node);
    EXPECT_EQ(third->replicas[1].tier, Tier::kLocalDisk);
    EXPECT_EQ(Metric("promotion_completed_total"), 1);
    EXPECT_EQ(Metric("gets_total", {{"tier", "MEMORY"}}), 1);
    EXPECT_EQ(Metric("gets_total", {{"tier", "LOCAL_DISK"}}), 2);
    ExpectInvariants();
}

// ExistOptions.prefetch_to_memory (Exists with prefetch): a promotion request for the read
// the check announces (Mooncake RFC #4271). The probe is the hotness signal, so the admission
// gate is skipped, and it is not a read (not counted; no lease, no recency). A plain Exists is
// inspection and counts nothing.
TEST_F(PromotionTest, PromotionExistsWithPrefetchQueuesPastTheAdmissionGate) {
    NodeId node = NodeWithDiskObjects(2);
    ASSERT_TRUE(*store().Exists(D(0)));
    EXPECT_EQ(Attempts(), 0);
    EXPECT_EQ(Metric("prefetch_on_exist_total"), 0);
    // Threshold 2 and no read yet: a Get would be admission-gated, a prefetch is queued.
    ASSERT_TRUE(*store().Exists(D(0), /*prefetch=*/true));
    EXPECT_EQ(Queued(), 1);
    EXPECT_EQ(Failed("admission_gated"), 0);
    EXPECT_EQ(Metric("prefetch_on_exist_total"), 1);
    EXPECT_EQ(Metric("gets_total", {{"tier", "LOCAL_DISK"}}), 0);  // not a read
    // Checked again while in flight: nothing more to ask.
    ASSERT_TRUE(*store().Exists(D(0), /*prefetch=*/true));
    EXPECT_EQ(Queued(), 1);
    EXPECT_EQ(Metric("prefetch_on_exist_total"), 1);
    // The read that follows finds the task in flight.
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 1);
    EXPECT_EQ(Metric("promotion_deduplicated_total"), 1);
    // A key that is not there: false, nothing counted.
    EXPECT_FALSE(*store().Exists("absent", /*prefetch=*/true));
    EXPECT_EQ(Metric("prefetch_on_exist_total"), 1);
    ASSERT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(Metric("promotion_completed_total"), 1);
    // In MEMORY now: a prefetch has nothing to do.
    ASSERT_TRUE(*store().Exists(D(0), /*prefetch=*/true));
    EXPECT_EQ(Metric("prefetch_on_exist_total"), 1);
    ExpectInvariants();
}

// Skipping admission is all a prefetch skips: the strict watermark (an operator's explicit
// interlock) still refuses it.
TEST_F(PromotionTest, PromotionPrefetchIsStillJudgedByTheStrictWatermark) {
    config_.Set("promotion_strict_watermark", "true").ok();
    NodeId node = AddNode("n1", 4 * kObject);
    PutOnDisk(D(0), node);
    for (int i = 1; i <= 4; ++i) Put(D(i));  // DRAM full
    ASSERT_TRUE(*store().Exists(D(0), /*prefetch=*/true));
    EXPECT_EQ(Failed("watermark_gated"), 1);
    EXPECT_EQ(Queued(), 0);
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionThresholdZeroActsAsOne) {
    config_.Set("promotion_admission_threshold", "0").ok();
    NodeWithDiskObjects(1);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 1);
    EXPECT_EQ(Failed("admission_gated"), 0);
    ExpectInvariants(1, 1);
}

TEST_F(PromotionTest, PromotionThresholdOneFiresOnTheFirstGet) {
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeWithDiskObjects(3);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(Get(D(i)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 3);
    EXPECT_EQ(Failed("admission_gated"), 0);
    ExpectInvariants(3, 3);
}

TEST_F(PromotionTest, PromotionThreshold255NeedsTwoHundredFiftyFiveGets) {
    config_.Set("promotion_admission_threshold", "255").ok();
    NodeWithDiskObjects(1);
    for (int i = 0; i < 254; ++i) ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 0);
    EXPECT_EQ(Failed("admission_gated"), 254);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 1);
    EXPECT_EQ(Attempts(), 255);
    ExpectInvariants(1, 1);
}

TEST_F(PromotionTest, PromotionThresholdIsRuntimeTunable) {
    NodeWithDiskObjects(1);
    ASSERT_TRUE(store().Tune({{"promotion_admission_threshold", "5"}}).ok());
    for (int i = 0; i < 4; ++i) ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 0);
    ASSERT_TRUE(store().Tune({{"promotion_admission_threshold", "4"}}).ok());
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 1);
    EXPECT_FALSE(store().Tune({{"promotion_admission_threshold", "256"}}).ok());
    ExpectInvariants(1, 1);
}

TEST_F(PromotionTest, PromotionAdmissionCountsEarlierMisses) {
    // The lead's choice (ffdb153): a miss is a request for the key too.
    NodeId node = AddNode("n1", 64 * kObject);
    EXPECT_EQ(Get(D(0)), StatusCode::kNotFound);
    PutOnDisk(D(0), node);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);  // the second request
    EXPECT_EQ(Queued(), 1);
    ExpectInvariants(1, 1);
}

TEST_F(PromotionTest, PromotionTriggeredByBatchGetToo) {
    NodeWithDiskObjects(2);
    std::vector<std::string> keys{D(0), D(1), D(0), "missing"};
    std::vector<Result<ObjectView>> got = store().BatchGetReplicaList(keys);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_TRUE(got[0].ok() && got[1].ok() && got[2].ok());
    EXPECT_EQ(got[3].status().code(), StatusCode::kNotFound);
    EXPECT_EQ(Queued(), 1);  // d0 was read twice
    EXPECT_EQ(store().Tasks().at(0).key, D(0));
    ExpectInvariants(1, 1);
}

TEST_F(PromotionTest, PromotionDeduplicatesGetsWhileATaskExists) {
    NodeWithDiskObjects(1);
    for (int i = 0; i < 5; ++i) ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 1);
    EXPECT_EQ(Attempts(), 5);
    EXPECT_EQ(Failed("admission_gated"), 1);
    EXPECT_EQ(Metric("promotion_deduplicated_total"), 3);
    EXPECT_EQ(store().Tasks().size(), 1u);
    ExpectInvariants(1, 1);
}

// ---------------- the cap ----------------

TEST_F(PromotionTest, PromotionCapWithABurstAcrossShardsCountsQueueFull) {
    constexpr int kCap = 8, kExtra = 13;
    config_.Set("promotion_queue_limit", std::to_string(kCap)).ok();
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId node = NodeWithDiskObjects(kCap + kExtra, 256 * kObject);
    for (int i = 0; i < kCap + kExtra; ++i) ASSERT_EQ(Get(D(i)), StatusCode::kOk);
    EXPECT_EQ(Queued(), kCap);
    EXPECT_EQ(Failed("queue_full"), kExtra);
    EXPECT_EQ(Metric("promotion_in_flight"), kCap);
    ExpectInvariants(kCap, kCap);
    // Room in the queue again: the refused keys get in on their next read.
    ASSERT_EQ(RunPromotions(node), static_cast<size_t>(kCap));
    for (int i = kCap; i < kCap + kExtra; ++i) ASSERT_EQ(Get(D(i)), StatusCode::kOk);
    EXPECT_EQ(Queued(), kCap + kCap);
    EXPECT_EQ(Failed("queue_full"), kExtra + (kExtra - kCap));
    ExpectInvariants(kCap, kCap);
}

// Racing admissions from several threads must not overshoot the cap.
TEST_F(PromotionTest, PromotionCapHoldsUnderConcurrentBursts) {
    constexpr int kCap = 10, kThreads = 4, kPerThread = 16;
    config_.Set("promotion_queue_limit", std::to_string(kCap)).ok();
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeWithDiskObjects(kThreads * kPerThread, 256 * kObject);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) {
            }
            for (int i = 0; i < kPerThread; ++i) (void)Get(D(t * kPerThread + i));
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(Queued(), kCap);
    EXPECT_EQ(Failed("queue_full"), kThreads * kPerThread - kCap);
    ExpectInvariants(kCap, kCap);
}

// ---------------- racing readers ----------------

TEST_F(PromotionTest, PromotionRacingReadersOnOneKeyMakeExactlyOneTask) {
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId node = NodeWithDiskObjects(1);
    constexpr int kThreads = 4, kGets = 250;
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            ready.fetch_add(1);
            while (ready.load() < kThreads) {
            }
            for (int i = 0; i < kGets; ++i) EXPECT_EQ(Get(D(0)), StatusCode::kOk);
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(Queued(), 1);
    EXPECT_EQ(Attempts(), kThreads * kGets);
    EXPECT_EQ(Metric("promotion_deduplicated_total"), kThreads * kGets - 1);
    EXPECT_EQ(store().Tasks().size(), 1u);
    EXPECT_EQ(store().PromotionObjectHeartbeat(node, 100).size(), 1u);
    ExpectInvariants(1, 1);
}

// ---------------- the heartbeat ----------------

TEST_F(PromotionTest, PromotionHeartbeatBatchesAreBoundedFifoWithLeftoversKept) {
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId node = NodeWithDiskObjects(10);
    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(Get(D(i)), StatusCode::kOk);
        clock_.Advance(milliseconds(1));
    }
    EXPECT_TRUE(store().PromotionObjectHeartbeat(node, 0).empty());
    std::vector<PromotionTask> got;
    for (int beat = 0; beat < 4; ++beat) {
        std::vector<PromotionTask> batch = store().PromotionObjectHeartbeat(node, 3);
        EXPECT_EQ(batch.size(), beat < 3 ? 3u : 1u);
        got.insert(got.end(), batch.begin(), batch.end());
    }
    ASSERT_EQ(got.size(), 10u);
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(got[i].key, D(i)) << "admission order";
        EXPECT_EQ(got[i].holder, node);
        EXPECT_EQ(got[i].size, kObject);
        EXPECT_EQ(got[i].generation, store().Stat(D(i))->generation);
        if (i > 0) {
            EXPECT_LT(got[i - 1].start, got[i].start);
        }
    }
    EXPECT_TRUE(store().PromotionObjectHeartbeat(node, 100).empty()) << "handed out twice";
    ExpectInvariants(10, 10);  // delivered, still in flight
    for (const PromotionTask& t : got) {
        ASSERT_TRUE(store().PromotionAllocStart(node, t.key, t.generation, t.size).ok());
        ASSERT_TRUE(store().NotifyPromotionSuccess(node, t.key, t.generation).ok());
    }
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionHeartbeatHandsTasksOnlyToTheirHolder) {
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId a = AddNode("a", 32 * kObject);
    NodeId b = AddNode("b", 32 * kObject);
    for (int i = 0; i < 6; ++i) PutOnDisk(D(i), i % 2 == 0 ? a : b);
    for (int i = 0; i < 6; ++i) ASSERT_EQ(Get(D(i)), StatusCode::kOk);
    std::vector<PromotionTask> for_a = store().PromotionObjectHeartbeat(a, 100);
    std::vector<PromotionTask> for_b = store().PromotionObjectHeartbeat(b, 100);
    ASSERT_EQ(for_a.size(), 3u);
    ASSERT_EQ(for_b.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(for_a[i].key, D(2 * i));
        EXPECT_EQ(for_a[i].holder, a);
        EXPECT_EQ(for_b[i].key, D(2 * i + 1));
        EXPECT_EQ(for_b[i].holder, b);
    }
    ExpectInvariants(6, 6);
}

TEST_F(PromotionTest, PromotionHeartbeatLongPollWakesOnANewTask) {
    NodeId node = NodeWithDiskObjects(1);
    auto poll = std::async(std::launch::async, [&] {
        return store().PromotionObjectHeartbeat(node, 8, seconds(60));
    });
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    std::vector<PromotionTask> tasks = poll.get();  // long before 60 s
    ASSERT_EQ(tasks.size(), 1u);
    EXPECT_EQ(tasks[0].key, D(0));
    ExpectInvariants(1, 1);
}

TEST_F(PromotionTest, PromotionHeartbeatSkipsTasksEndedWhileQueued) {
    config_.Set("promotion_admission_threshold", "1").ok();
    NodeId node = NodeWithDiskObjects(3);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(Get(D(i)), StatusCode::kOk);
    ASSERT_TRUE(store().Remove(D(0)).ok());
    std::vector<PromotionTask> tasks = store().PromotionObjectHeartbeat(node, 2);
    ASSERT_EQ(tasks.size(), 2u);
    EXPECT_EQ(tasks[0].key, D(1));
    EXPECT_EQ(tasks[1].key, D(2));
    ExpectInvariants(2, 2);
}

TEST_F(PromotionTest, PromotionTasksViewFollowsTheTask) {
    NodeId node = NodeWithDiskObjects(1);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    clock_.Advance(seconds(2));
    std::vector<TaskView> tasks = store().Tasks();
    ASSERT_EQ(tasks.size(), 1u);
    EXPECT_EQ(tasks[0].kind, TaskKind::kPromotion);
    EXPECT_EQ(tasks[0].node, node);
    EXPECT_EQ(tasks[0].age, seconds(2));
    EXPECT_FALSE(tasks[0].delivered);
    EXPECT_FALSE(tasks[0].staged);
    std::optional<PromotionTask> t = Deliver(node, D(0));
    ASSERT_TRUE(t);
    EXPECT_TRUE(store().Tasks()[0].delivered);
    ASSERT_TRUE(store().PromotionAllocStart(node, t->key, t->generation, t->size).ok());
    EXPECT_TRUE(store().Tasks()[0].staged);
    EXPECT_TRUE(store().Stat(D(0))->promotion_in_flight);
    ExpectInvariants(1, 1);
}

// ---------------- PromotionAllocStart checks ----------------

class PromotionAllocStartTest : public PromotionTest {
public:
    void SetUp() override {
        PromotionTest::SetUp();
        a_ = AddNode("a", 16 * kObject);
        b_ = AddNode("b", 16 * kObject);
        PutOnDisk("d", a_);
        ASSERT_EQ(Get("d"), StatusCode::kOk);
        ASSERT_EQ(Get("d"), StatusCode::kOk);
        std::optional<PromotionTask> t = Deliver(a_, "d");
        ASSERT_TRUE(t);
        task_ = *t;
        used_ = DramUsed();
    }
    // Refused calls change nothing: the task is still there, unstaged, the source pinned.
    void ExpectUnchanged() {
        EXPECT_EQ(DramUsed(), used_);
        ASSERT_EQ(store().Tasks().size(), 1u);
        EXPECT_FALSE(store().Tasks()[0].staged);
        EXPECT_EQ(PinsOf("d"), 1u);
        EXPECT_EQ(Failed("alloc_failed"), 0);
        ExpectInvariants(1, 1);
    }
    NodeId a_ = kNoNode, b_ = kNoNode;
    PromotionTask task_;
    uint64_t used_ = 0;
};

TEST_F(PromotionAllocStartTest, PromotionAllocStartByANonHolderIsRefused) {
    Result<ReplicaDesc> r = store().PromotionAllocStart(b_, "d", task_.generation, kObject);
    EXPECT_EQ(r.status().code(), StatusCode::kIllegalClient) << r.status().ToString();
    EXPECT_EQ(store().NotifyPromotionSuccess(b_, "d", task_.generation).code(),
              StatusCode::kIllegalClient);
    EXPECT_EQ(store().NotifyPromotionFailure(b_, "d", task_.generation).code(),
              StatusCode::kIllegalClient);
    ExpectUnchanged();
}

TEST_F(PromotionAllocStartTest, PromotionAllocStartWithAWrongSizeIsRefused) {
    for (uint64_t size : {kObject - 1, kObject + 1, uint64_t{0}, 100 * kObject}) {
        Result<ReplicaDesc> r = store().PromotionAllocStart(a_, "d", task_.generation, size);
        EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << size;
    }
    ExpectUnchanged();
}

TEST_F(PromotionAllocStartTest, PromotionAllocStartWithAStaleGenerationIsRefused) {
    for (Generation g : {task_.generation - 1, task_.generation + 1}) {
        Result<ReplicaDesc> r = store().PromotionAllocStart(a_, "d", g, kObject);
        EXPECT_EQ(r.status().code(), StatusCode::kStaleGeneration);
        EXPECT_EQ(store().NotifyPromotionSuccess(a_, "d", g).code(),
                  StatusCode::kStaleGeneration);
    }
    ExpectUnchanged();
}

TEST_F(PromotionAllocStartTest, PromotionAllocStartForNoTaskIsNotFound) {
    EXPECT_EQ(store().PromotionAllocStart(a_, "other", 1, kObject).status().code(),
              StatusCode::kNotFound);
    Put("m", kObject, a_);
    EXPECT_EQ(store()
                  .PromotionAllocStart(a_, "m", store().Stat("m")->generation, kObject)
                  .status()
                  .code(),
              StatusCode::kNotFound);
    EXPECT_EQ(store().PromotionAllocStart(a_, "", 1, kObject).status().code(),
              StatusCode::kInvalidArgument);
    used_ = DramUsed();
    ExpectUnchanged();
}

TEST_F(PromotionAllocStartTest, PromotionAllocStartUsesTheHolderSegmentFirst) {
    // b has more free room, but the holder's own segment comes first.
    Put("fill", kObject, a_);
    Result<ReplicaDesc> r = store().PromotionAllocStart(a_, "d", task_.generation, kObject);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->node, a_);
    EXPECT_EQ(r->tier, Tier::kMemory);
    EXPECT_EQ(r->state, ReplicaState::kProcessing);
    EXPECT_EQ(r->size, kObject);
    EXPECT_EQ(r->offset % kSegmentAlignment, 0u);
    ExpectInvariants(1, 1);
}

TEST_F(PromotionAllocStartTest, PromotionAllocStartSpillsToAnotherNodeWhenTheHolderIsFull) {
    for (int i = 0; i < 16; ++i) Put("fill" + std::to_string(i), kObject, a_);
    Result<ReplicaDesc> r = store().PromotionAllocStart(a_, "d", task_.generation, kObject);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->node, b_);
    ASSERT_TRUE(store().NotifyPromotionSuccess(a_, "d", task_.generation).ok());
    Result<ObjectView> view = store().GetReplicaList("d");
    EXPECT_EQ(view->replicas[0].node, b_);
    EXPECT_EQ(view->replicas[1].node, a_);
    ExpectInvariants();
}

TEST_F(PromotionAllocStartTest, PromotionAllocStartRetriedHandsBackTheSameRange) {
    Result<ReplicaDesc> first = store().PromotionAllocStart(a_, "d", task_.generation, kObject);
    ASSERT_TRUE(first.ok());
    uint64_t used = DramUsed();
    Result<ReplicaDesc> again = store().PromotionAllocStart(a_, "d", task_.generation, kObject);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->node, first->node);
    EXPECT_EQ(again->offset, first->offset);
    EXPECT_EQ(DramUsed(), used) << "allocated twice";
    ExpectInvariants(1, 1);
}

TEST_F(PromotionAllocStartTest, PromotionSuccessBeforeAllocStartIsNotReady) {
    EXPECT_EQ(store().NotifyPromotionSuccess(a_, "d", task_.generation).code(),
              StatusCode::kNotReady);
    ExpectUnchanged();
}

// ---------------- allocation failure, success, staging ----------------

TEST_F(PromotionTest, PromotionAllocationFailureCountsAllocFailedAndUnpins) {
    NodeId node = NodeWithDiskObjects(1, 4 * kObject);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);  // admitted: DRAM had room
    std::optional<PromotionTask> t = Deliver(node, D(0));
    ASSERT_TRUE(t);
    // Meanwhile DRAM fills with objects readers hold leases on.
    config_.Set("lease_blocks_eviction", "true").ok();  // leases make DRAM unevictable
    config_.Set("default_kv_lease_ttl", "60000").ok();
    for (int i = 0; i < 4; ++i) {
        Put("m" + std::to_string(i));
        ASSERT_EQ(Get("m" + std::to_string(i)), StatusCode::kOk);
    }
    uint64_t used = DramUsed();
    Result<ReplicaDesc> r = store().PromotionAllocStart(node, t->key, t->generation, t->size);
    EXPECT_EQ(r.status().code(), StatusCode::kNoSpace) << r.status().ToString();
    EXPECT_EQ(Failed("alloc_failed"), 1);
    EXPECT_EQ(PinsOf(D(0)), 0u);
    EXPECT_TRUE(store().Tasks().empty());
    EXPECT_EQ(DramUsed(), used);
    EXPECT_EQ(TiersOf(D(0)), std::vector<Tier>{Tier::kLocalDisk});
    // The task is gone: later reports about it are refused or ignored.
    EXPECT_EQ(store().NotifyPromotionSuccess(node, t->key, t->generation).code(),
              StatusCode::kNotFound);
    EXPECT_TRUE(store().NotifyPromotionFailure(node, t->key, t->generation).ok());
    EXPECT_EQ(Failed("io_failed"), 0);
    ExpectInvariants();
}

// DRAM full of cold objects without disk copies: room is being made by offloads, so
// AllocStart says NotReady and keeps the task; once the node has written them, it succeeds.
TEST_F(PromotionTest, PromotionAllocStartWaitsForEvictionOffloadsWithNotReady) {
    NodeId node = NodeWithDiskObjects(1, 4 * kObject);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    std::optional<PromotionTask> t = Deliver(node, D(0));
    ASSERT_TRUE(t);
    for (int i = 0; i < 4; ++i) Put("m" + std::to_string(i));  // never read: colder than d0
    Result<ReplicaDesc> r = store().PromotionAllocStart(node, t->key, t->generation, t->size);
    EXPECT_EQ(r.status().code(), StatusCode::kNotReady) << r.status().ToString();
    EXPECT_EQ(store().Tasks().size(), 2u);  // the promotion, and m0's offload
    ExpectInvariants(2, 2);
    ASSERT_EQ(RunOffloads(node), 1u);
    r = store().PromotionAllocStart(node, t->key, t->generation, t->size);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(store().NotifyPromotionSuccess(node, t->key, t->generation).ok());
    EXPECT_EQ(TiersOf("m0"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(TiersOf(D(0)).front(), Tier::kMemory);
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionStagingIsInvisibleToReadersBeforeCommit) {
    NodeId node = NodeWithDiskObjects(1);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    std::optional<PromotionTask> t = Deliver(node, D(0));
    ASSERT_TRUE(t);
    uint64_t used = DramUsed();
    Result<ReplicaDesc> staged = store().PromotionAllocStart(node, t->key, t->generation, t->size);
    ASSERT_TRUE(staged.ok());
    EXPECT_EQ(DramUsed(), used + kObject);
    // Readers: LOCAL_DISK only, in every form.
    Result<ObjectView> view = store().GetReplicaList(D(0));
    ASSERT_TRUE(view.ok());
    ASSERT_EQ(view->replicas.size(), 1u);
    EXPECT_EQ(view->replicas[0].tier, Tier::kLocalDisk);
    std::vector<std::string> keys{D(0)};
    EXPECT_EQ(store().BatchGetReplicaList(keys)[0]->replicas.size(), 1u);
    ListOptions memory_only;
    memory_only.tier = Tier::kMemory;
    EXPECT_TRUE(store().List(memory_only).empty());
    EXPECT_EQ(store().List({})[0].replicas.size(), 1u);
    EXPECT_EQ(Metric("promotion_deduplicated_total"), 2);  // those reads asked again
    // Inspection shows the staging as PROCESSING MEMORY.
    Result<ObjectView> stat = store().Stat(D(0));
    ASSERT_TRUE(stat.ok());
    EXPECT_EQ(stat->CompleteTiers(), std::vector<Tier>{Tier::kLocalDisk});
    bool found = false;
    for (const ReplicaDesc& r : stat->replicas) {
        if (r.tier == Tier::kMemory) {
            found = true;
            EXPECT_EQ(r.state, ReplicaState::kProcessing);
            EXPECT_EQ(r.offset, staged->offset);
        }
    }
    EXPECT_TRUE(found);
    // Eviction does not touch it.
    config_.Set("eviction_watermark_drop", "true").ok();
    config_.Set("eviction_high_watermark_ratio", "0").ok();
    store().RunWatermarkEviction();
    EXPECT_EQ(DramUsed(), used + kObject);
    ExpectInvariants(1, 1);
}

TEST_F(PromotionTest, PromotionSuccessCommitsCompleteWithFreshRecency) {
    NodeId node = NodeWithDiskObjects(1);
    for (int i = 0; i < 3; ++i) Put("m" + std::to_string(i));
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    std::optional<PromotionTask> t = Deliver(node, D(0));
    ASSERT_TRUE(t);
    ASSERT_TRUE(store().PromotionAllocStart(node, t->key, t->generation, t->size).ok());
    // Reads of other keys after the trigger: still, the commit is the freshest access.
    for (int i = 0; i < 3; ++i) ASSERT_EQ(Get("m" + std::to_string(i)), StatusCode::kOk);
    clock_.Advance(milliseconds(250));
    ASSERT_TRUE(store().NotifyPromotionSuccess(node, t->key, t->generation).ok());
    Result<ObjectView> stat = store().Stat(D(0));
    ASSERT_TRUE(stat.ok());
    EXPECT_EQ(stat->generation, t->generation) << "promotion keeps the incarnation";
    ASSERT_EQ(stat->replicas.size(), 2u);
    EXPECT_EQ(stat->replicas[0].tier, Tier::kMemory);
    EXPECT_EQ(stat->replicas[0].state, ReplicaState::kComplete);
    EXPECT_EQ(stat->replicas[0].pins, 0u);
    EXPECT_EQ(stat->replicas[1].pins, 0u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_GT(stat->recency, store().Stat("m" + std::to_string(i))->recency);
    }
    EXPECT_FALSE(stat->promotion_in_flight);
    EXPECT_EQ(Metric("promotion_completed_total"), 1);
    EXPECT_EQ(Metric("promotion_in_flight"), 0);
    EXPECT_EQ(Metric("memory_objects"), 4);
    EXPECT_EQ(store().Nodes()[0].memory_objects, 4u);
    // A repeated success report: nothing more happens.
    EXPECT_EQ(store().NotifyPromotionSuccess(node, t->key, t->generation).code(),
              StatusCode::kNotFound);
    EXPECT_EQ(Metric("promotion_completed_total"), 1);
    ExpectInvariants();
}

// A promoted object is LRU-ordered by its commit: cold objects go first under pressure.
TEST_F(PromotionTest, PromotedObjectIsEvictedAfterColderOnes) {
    config_.Set("enable_offload", "true").ok();
    NodeId node = NodeWithDiskObjects(1, 4 * kObject);
    for (int i = 0; i < 3; ++i) {
        Put("m" + std::to_string(i));
        ASSERT_EQ(*store().Offload("m" + std::to_string(i)), ManualOutcome::kQueued);
    }
    RunOffloads(node);  // m0..m2 have disk copies: droppable at once
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(RunPromotions(node), 1u);  // DRAM is now full
    Put("new1");
    Put("new2");
    EXPECT_EQ(TiersOf(D(0)).front(), Tier::kMemory);
    EXPECT_EQ(TiersOf("m0"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(TiersOf("m1"), std::vector<Tier>{Tier::kLocalDisk});
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionAfterAnIoFailureIsRetriedByTheNextGet) {
    NodeId node = NodeWithDiskObjects(1);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    std::optional<PromotionTask> t = Deliver(node, D(0));
    ASSERT_TRUE(store().NotifyPromotionFailure(node, t->key, t->generation).ok());
    EXPECT_EQ(Failed("io_failed"), 1);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);  // still hot
    EXPECT_EQ(Queued(), 2);
    ASSERT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(TiersOf(D(0)).front(), Tier::kMemory);
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionDropSourceRemovesTheDiskCopyAfterCommit) {
    config_.Set("promotion_drop_source", "true").ok();
    NodeId node = NodeWithDiskObjects(1);
    ASSERT_EQ(store().Nodes()[0].disk_used, kObject);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    std::optional<PromotionTask> t = Deliver(node, D(0));
    ASSERT_TRUE(store().PromotionAllocStart(node, t->key, t->generation, t->size).ok());
    EXPECT_EQ(TiersOf(D(0)), std::vector<Tier>{Tier::kLocalDisk}) << "dropped before commit";
    store().Heartbeat(node).ok();
    ASSERT_TRUE(store().NotifyPromotionSuccess(node, t->key, t->generation).ok());
    EXPECT_EQ(TiersOf(D(0)), std::vector<Tier>{Tier::kMemory});
    EXPECT_EQ(store().Nodes()[0].disk_used, 0u);
    EXPECT_EQ(store().Nodes()[0].disk_objects, 0u);
    Result<HeartbeatReply> beat = store().Heartbeat(node);
    ASSERT_EQ(beat->disk_deletes.size(), 1u);
    EXPECT_EQ(beat->disk_deletes[0].generation, t->generation);
    // Without a disk copy now, a later eviction writes one again (offload on evict).
    ASSERT_EQ(*store().Evict(D(0)), ManualOutcome::kQueued);
    ExpectInvariants(1, 1);
}

// ---------------- the DRAM pressure gate ----------------

TEST_F(PromotionTest, PromotionStrictWatermarkKnobRefusesAtTheHighWatermark) {
    config_.Set("eviction_high_watermark_ratio", "0.5").ok();
    NodeId node = NodeWithDiskObjects(2, 10 * kObject);
    for (int i = 0; i < 6; ++i) Put("m" + std::to_string(i));  // 60%: room, but over 50%
    config_.Set("promotion_strict_watermark", "true").ok();
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 0);
    EXPECT_EQ(Failed("watermark_gated"), 1);
    // The default (no strict interlock): free room is used.
    config_.Set("promotion_strict_watermark", "false").ok();
    ASSERT_EQ(Get(D(1)), StatusCode::kOk);
    ASSERT_EQ(Get(D(1)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 1);
    ASSERT_EQ(RunPromotions(node), 1u);
    ExpectInvariants();
}

// Everything evictable is leased: no room, named as such (not as the RFC's watermark, which
// only promotion_strict_watermark refuses for).
TEST_F(PromotionTest, PromotionRefusedAsNoRoomWhenNoRoomCanBeHad) {
    config_.Set("lease_blocks_eviction", "true").ok();  // leases make DRAM unevictable
    config_.Set("default_kv_lease_ttl", "60000").ok();
    NodeWithDiskObjects(1, 4 * kObject);
    for (int i = 0; i < 4; ++i) {
        Put("m" + std::to_string(i));
        ASSERT_EQ(Get("m" + std::to_string(i)), StatusCode::kOk);  // leased
    }
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    EXPECT_EQ(Queued(), 0);
    EXPECT_EQ(Failed("no_room"), 1);
    EXPECT_EQ(Failed("watermark_gated"), 0);
    EXPECT_EQ(store().Stat(D(0))->last_promotion->outcome, PromotionOutcome::kNoRoom);
    EXPECT_EQ(PinsOf(D(0)), 0u);
    ExpectInvariants();
}

// ---------------- manual promote ----------------

TEST_F(PromotionTest, ManualPromoteBypassesAdmission) {
    config_.Set("promotion_admission_threshold", "255").ok();
    NodeId node = NodeWithDiskObjects(1);
    EXPECT_EQ(*store().Promote(D(0), false), ManualOutcome::kQueued);
    EXPECT_EQ(Queued(), 1);
    // Counted as an attempt with its outcome (the sum holds), but not as a read.
    EXPECT_EQ(Attempts(), 1);
    EXPECT_EQ(store().Stat(D(0))->sketch_estimate, 0u);
    EXPECT_EQ(*store().Promote(D(0), false), ManualOutcome::kInFlight);
    ASSERT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(*store().Promote(D(0), false), ManualOutcome::kAlreadyThere);
    ExpectInvariants();
}

TEST_F(PromotionTest, ManualPromoteRespectsDramPressureUnlessForced) {
    config_.Set("lease_blocks_eviction", "true").ok();  // leases make DRAM unevictable
    config_.Set("default_kv_lease_ttl", "60000").ok();
    NodeId node = NodeWithDiskObjects(1, 4 * kObject);
    for (int i = 0; i < 4; ++i) {
        Put("m" + std::to_string(i));
        ASSERT_EQ(Get("m" + std::to_string(i)), StatusCode::kOk);  // leased: no room to be had
    }
    Result<ManualOutcome> refused = store().Promote(D(0), false);
    EXPECT_EQ(refused.status().code(), StatusCode::kNoSpace);
    EXPECT_NE(refused.status().message().find("force"), std::string::npos);
    EXPECT_EQ(Queued(), 0);
    ExpectInvariants();
    // Forced: queued regardless; the allocation then fails for real, and nothing leaks.
    EXPECT_EQ(*store().Promote(D(0), true), ManualOutcome::kQueued);
    ExpectInvariants(1, 1);
    std::optional<PromotionTask> t = Deliver(node, D(0));
    EXPECT_EQ(store().PromotionAllocStart(node, t->key, t->generation, t->size).status().code(),
              StatusCode::kNoSpace);
    EXPECT_EQ(Failed("alloc_failed"), 1);
    ExpectInvariants();
}

TEST_F(PromotionTest, ManualPromoteIntoAFullCacheDisplacesColdObjects) {
    NodeId node = NodeWithDiskObjects(1, 4 * kObject);
    for (int i = 0; i < 4; ++i) {
        Put("m" + std::to_string(i));
        for (int r = 0; r < 5; ++r) ASSERT_EQ(Get("m" + std::to_string(i)), StatusCode::kOk);
    }
    // m* are hotter than d0 (never read), but an operator's promote does not compare.
    EXPECT_EQ(*store().Promote(D(0), false), ManualOutcome::kQueued);
    ASSERT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(TiersOf(D(0)).front(), Tier::kMemory);
    ExpectInvariants();
}

TEST_F(PromotionTest, ManualPromoteOutcomesAndErrors) {
    config_.Set("promotion_queue_limit", "1").ok();
    NodeId node = NodeWithDiskObjects(2);
    EXPECT_EQ(store().Promote("missing", false).status().code(), StatusCode::kNotFound);
    ASSERT_TRUE(store().PutStart(1, "pending", kObject).ok());
    EXPECT_EQ(store().Promote("pending", false).status().code(), StatusCode::kNotReady);
    Put("memory");
    EXPECT_EQ(*store().Promote("memory", false), ManualOutcome::kAlreadyThere);
    EXPECT_EQ(*store().Promote(D(0), false), ManualOutcome::kQueued);
    EXPECT_EQ(store().Promote(D(1), false).status().code(), StatusCode::kBusy);  // the cap
    EXPECT_EQ(Failed("queue_full"), 1) << "a manual attempt's outcome is counted like any other";
    EXPECT_EQ(Attempts(), 2);
    ASSERT_EQ(RunPromotions(node), 1u);
    EXPECT_EQ(*store().Promote(D(1), false), ManualOutcome::kQueued);
    ExpectInvariants(1, 1);
}

TEST_F(PromotionTest, PromotionCandidatesAreListedByHotWithoutCountingAsReads) {
    config_.Set("promotion_admission_threshold", "255").ok();
    NodeWithDiskObjects(3);
    Put("memory");
    for (int i = 0; i < 5; ++i) ASSERT_EQ(Get(D(1)), StatusCode::kOk);
    for (int i = 0; i < 2; ++i) ASSERT_EQ(Get(D(2)), StatusCode::kOk);
    std::vector<HotKey> hot = store().Hot(2);
    ASSERT_EQ(hot.size(), 2u);
    EXPECT_EQ(hot[0].key, D(1));
    EXPECT_EQ(hot[0].estimate, 5u);
    EXPECT_EQ(hot[1].key, D(2));
    EXPECT_EQ(store().Hot(10).size(), 3u);  // LOCAL_DISK-only keys only
    EXPECT_EQ(store().Stat(D(1))->sketch_estimate, 5u) << "inspection counted as a read";
    ExpectInvariants();
}

// ---------------- metrics ----------------

TEST_F(PromotionTest, PromotionMetricsArePresentFromStartUp) {
    store();
    std::string text = metrics_.RenderPrometheus();
    for (const char* reason :
         {"admission_gated", "watermark_gated", "queue_full", "alloc_failed", "io_failed"}) {
        EXPECT_EQ(Failed(reason), 0) << reason;
        EXPECT_NE(text.find(std::string("promotion_failed_total{reason=\"") + reason + "\"} 0"),
                  std::string::npos)
            << reason;
    }
    for (const char* name :
         {"promotion_attempts_total", "promotion_queued_total", "promotion_completed_total",
          "promotion_deduplicated_total", "promotion_cancelled_total", "promotion_expired_total",
          "promotion_in_flight"}) {
        EXPECT_EQ(Metric(name), 0) << name;
    }
    ExpectInvariants();
}

TEST_F(PromotionTest, PromotionLatencyIsObservedFromTriggerToCommit) {
    NodeId node = NodeWithDiskObjects(1);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    ASSERT_EQ(Get(D(0)), StatusCode::kOk);
    clock_.Advance(milliseconds(3));
    ASSERT_EQ(RunPromotions(node), 1u);
    std::string text = metrics_.RenderPrometheus();
    EXPECT_NE(text.find("promotion_latency_seconds_count 1"), std::string::npos) << text;
    EXPECT_NE(text.find("promotion_latency_seconds_sum 0.003"), std::string::npos);
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
