// Issue 3: eviction — the three offload modes, LRU order, leased (issue 36) and pinned objects,
// the watermark round, manual evict. DESIGN.md "Object lifecycle" / "Eviction".
#include <algorithm>
#include <numeric>
#include <random>

#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class EvictionTest : public StoreFixture {
public:
    void OffloadOff() { config_.Set("enable_offload", "false").ok(); }
    void OffloadAtPutEnd() {
        config_.Set("enable_offload", "true").ok();
        config_.Set("offload_on_evict", "false").ok();
    }
    static std::string K(int i) { return "k" + std::to_string(i); }
    bool InMemory(const std::string& key) {
        std::vector<Tier> tiers = TiersOf(key);
        return !tiers.empty() && tiers.front() == Tier::kMemory;
    }
};

// ---------------- the three modes ----------------

TEST_F(EvictionTest, OffloadOffDropsMemoryAndRemovesTheObject) {
    OffloadOff();
    AddNode("n1", 4 * kObject);
    Generation g0 = Put(K(0));
    for (int i = 1; i < 4; ++i) Put(K(i));
    Put(K(4));  // needs room: k0, the coldest, goes
    EXPECT_EQ(store().Stat(K(0)).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(Get(K(0)), StatusCode::kNotFound);
    for (int i = 1; i <= 4; ++i) EXPECT_TRUE(InMemory(K(i))) << K(i);
    EXPECT_EQ(Metric("evictions_total"), 1);
    EXPECT_EQ(Metric("offload_queued_total"), 0);
    // The key is free again: a later Put succeeds (evicting k1), with a newer generation.
    Generation again = Put(K(0));
    EXPECT_GT(again, g0);
    EXPECT_FALSE(*store().Exists(K(1)));
    EXPECT_EQ(DramUsed(), 4 * kObject);
    ExpectInvariants();
}

TEST_F(EvictionTest, OffloadAtPutEndWritesTheDiskCopyAndEvictionJustDrops) {
    OffloadAtPutEnd();
    NodeId node = AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i));
    EXPECT_EQ(Metric("offload_queued_total"), 4);  // at PutEnd, before any pressure
    ExpectInvariants(/*pins=*/4, /*tasks=*/4);
    EXPECT_EQ(RunOffloads(node), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(TiersOf(K(i)), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    }
    Put(K(4));  // k0's MEMORY copy is simply dropped: no new disk write
    EXPECT_EQ(TiersOf(K(0)), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(Metric("offload_queued_total"), 5);  // only k4's own PutEnd offload
    EXPECT_EQ(Metric("evictions_total"), 1);
    EXPECT_EQ(DramUsed(), 4 * kObject);
    ExpectInvariants(1, 1);
    RunOffloads(node);
    ExpectInvariants();
}

TEST_F(EvictionTest, OffloadOnEvictPinsQueuesAndDropsOnlyAfterSuccess) {
    NodeId node = AddNode("n1", 4 * kObject);  // defaults: enable_offload, offload_on_evict
    for (int i = 0; i < 4; ++i) Put(K(i));
    EXPECT_EQ(Metric("offload_queued_total"), 0);  // nothing written at PutEnd
    // No room and put_wait_for_offload_ms = 0: the Put fails, but k0 is on its way out.
    Result<PutStartReply> put = store().PutStart(1, K(4), kObject);
    EXPECT_EQ(put.status().code(), StatusCode::kNoSpace);
    EXPECT_EQ(Metric("offload_queued_total"), 1);
    EXPECT_EQ(PinsOf(K(0)), 1u);
    // Still readable meanwhile (a read then keeps it in MEMORY once its copy lands:
    // OffloadCompletingAfterAReadKeepsMemory).
    EXPECT_EQ(TiersOf(K(0)), std::vector<Tier>{Tier::kMemory});
    ExpectInvariants(1, 1);

    std::vector<OffloadTask> tasks = store().OffloadObjectHeartbeat(node, 8);
    ASSERT_EQ(tasks.size(), 1u);
    EXPECT_EQ(tasks[0].key, K(0));
    EXPECT_EQ(tasks[0].size, kObject);
    EXPECT_EQ(tasks[0].source_offset, store().Stat(K(0))->replicas[0].offset);
    EXPECT_EQ(DramUsed(), 4 * kObject);  // not dropped before the disk copy exists
    ASSERT_TRUE(store().NotifyOffloadSuccess(node, K(0), tasks[0].generation).ok());
    EXPECT_EQ(TiersOf(K(0)), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(DramUsed(), 3 * kObject);
    Put(K(4));
    ExpectInvariants();
}

// A Put retried while its room is being offloaded does not queue another victim: the room on
// its way out already covers it.
TEST_F(EvictionTest, RetriedPutDoesNotEvictMoreWhileItsRoomIsOnItsWay) {
    NodeId node = AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i));
    for (int retry = 0; retry < 3; ++retry) {
        EXPECT_EQ(store().PutStart(1, K(4), kObject).status().code(), StatusCode::kNoSpace);
    }
    EXPECT_EQ(Metric("offload_queued_total"), 1);
    EXPECT_EQ(Metric("evictions_total"), 1);
    // A bigger Put needs more than what is on its way: one more victim.
    EXPECT_EQ(store().PutStart(1, "big", 2 * kObject).status().code(), StatusCode::kNoSpace);
    EXPECT_EQ(Metric("offload_queued_total"), 2);
    RunOffloads(node);
    Put(K(4));
    ExpectInvariants();
}

TEST_F(EvictionTest, EvictionOnANodeWithoutDiskDropsEvenWithOffloadOn) {
    AddNode("n1", 2 * kObject, /*disk=*/0);
    Put(K(0));
    Put(K(1));
    Put(K(2));
    EXPECT_FALSE(*store().Exists(K(0)));
    EXPECT_EQ(Metric("offload_queued_total"), 0);
    ExpectInvariants();
}

// ---------------- LRU order ----------------

TEST_F(EvictionTest, GetRefreshesRecency) {
    OffloadOff();
    AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i));
    ASSERT_EQ(Get(K(0)), StatusCode::kOk);  // k0 is now the most recent
    Put(K(4));
    EXPECT_TRUE(*store().Exists(K(0)));
    EXPECT_FALSE(*store().Exists(K(1)));
    ASSERT_EQ(Get(K(2)), StatusCode::kOk);
    Put(K(5));
    EXPECT_FALSE(*store().Exists(K(3)));
    EXPECT_TRUE(*store().Exists(K(2)));
    ExpectInvariants();
}

// Exact LRU across shards: keys spread over all 64 shards, read in a random order; the ones
// evicted are exactly the least recently read.
TEST_F(EvictionTest, EvictionIsExactLruAcrossShards) {
    OffloadOff();
    constexpr int kN = 256;
    AddNode("n1", kN * kObject);
    for (int i = 0; i < kN; ++i) Put(K(i));
    std::vector<int> order(kN);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(5));
    for (int i : order) ASSERT_EQ(Get(K(i)), StatusCode::kOk);
    constexpr int kNew = 40;
    for (int j = 0; j < kNew; ++j) Put("new" + std::to_string(j));
    for (int pos = 0; pos < kN; ++pos) {
        EXPECT_EQ(*store().Exists(K(order[pos])), pos >= kNew) << "read at position " << pos;
    }
    EXPECT_EQ(Metric("evictions_total"), kNew);
    ExpectInvariants();
}

TEST_F(EvictionTest, LargePutEvictsSeveralOfTheColdest) {
    OffloadOff();
    AddNode("n1", 8 * kObject);
    for (int i = 0; i < 8; ++i) Put(K(i));
    Put("big", 3 * kObject);
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(*store().Exists(K(i))) << i;
    for (int i = 3; i < 8; ++i) EXPECT_TRUE(*store().Exists(K(i))) << i;
    ExpectInvariants();
}

// ---------------- leased and pinned objects ----------------

// Issue 36: by default a lease keeps nothing in MEMORY once its read has ended; the node's
// range lock and (key, generation) check protect a read still in progress.
TEST_F(EvictionTest, LeasedObjectsAreEvictedOnceTheirReadsEnd) {
    OffloadOff();
    AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i));
    config_.Set("default_kv_lease_ttl", "60000").ok();
    ASSERT_EQ(Get(K(0)), StatusCode::kOk);  // leased for a minute
    for (int i = 1; i < 4; ++i) ASSERT_EQ(Get(K(i)), StatusCode::kOk);
    Put(K(4));  // k0 is the least recently used: it goes, lease or not
    EXPECT_FALSE(*store().Exists(K(0)));
    EXPECT_TRUE(*store().Exists(K(1)));
    // The lease still keeps a key from Remove.
    EXPECT_EQ(store().Remove(K(1)).code(), StatusCode::kHasLease);
    ExpectInvariants();
}

TEST_F(EvictionTest, UnderLeaseBlocksEvictionLeasedObjectsAreSkipped) {
    OffloadOff();
    config_.Set("lease_blocks_eviction", "true").ok();
    AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i));
    config_.Set("default_kv_lease_ttl", "60000").ok();
    ASSERT_EQ(Get(K(0)), StatusCode::kOk);  // leased for a minute
    config_.Set("default_kv_lease_ttl", "0").ok();
    for (int i = 1; i < 4; ++i) ASSERT_EQ(Get(K(i)), StatusCode::kOk);  // newer, not leased
    // k0 is the least recently used, but leased: k1 goes instead.
    Put(K(4));
    EXPECT_TRUE(*store().Exists(K(0)));
    EXPECT_FALSE(*store().Exists(K(1)));
    // Once the lease is over, k0 is evictable again.
    clock_.Advance(seconds(61));
    Put(K(5));
    EXPECT_FALSE(*store().Exists(K(0)));
    ExpectInvariants();
}

TEST_F(EvictionTest, PinnedObjectsAreSkipped) {
    NodeId node = AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i));
    // k1..k3 get disk copies (droppable at once); k0's copy is in flight: pinned.
    for (int i = 1; i < 4; ++i) ASSERT_EQ(*store().Offload(K(i)), ManualOutcome::kQueued);
    RunOffloads(node);
    ASSERT_EQ(*store().Offload(K(0)), ManualOutcome::kQueued);
    EXPECT_EQ(PinsOf(K(0)), 1u);
    Put(K(4));
    EXPECT_TRUE(InMemory(K(0))) << "a pinned object was evicted";
    EXPECT_EQ(TiersOf(K(1)), std::vector<Tier>{Tier::kLocalDisk});
    ExpectInvariants(1, 1);
    RunOffloads(node);  // k0's manual offload keeps MEMORY
    EXPECT_EQ(TiersOf(K(0)), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    ExpectInvariants();
}

TEST_F(EvictionTest, PutsInProgressAreNeverEvicted) {
    OffloadOff();
    AddNode("n1", 4 * kObject);
    Result<PutStartReply> pending = store().PutStart(1, "pending", kObject);
    ASSERT_TRUE(pending.ok());
    for (int i = 0; i < 3; ++i) Put(K(i));
    Put(K(3));  // evicts k0, not the older PROCESSING one
    EXPECT_FALSE(*store().Exists(K(0)));
    ASSERT_TRUE(store().PutEnd(1, "pending", pending->generation).ok());
    EXPECT_EQ(Get("pending"), StatusCode::kOk);
    ExpectInvariants();
}

// The engine-shaped case of issue 36: everything in DRAM was read a moment ago.
TEST_F(EvictionTest, PutsSucceedWhenEverythingWasJustRead) {
    config_.Set("default_kv_lease_ttl", "60000").ok();
    NodeId node = AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) {
        Put(K(i));
        ASSERT_EQ(Get(K(i)), StatusCode::kOk);
    }
    Result<PutStartReply> put = store().PutStart(1, "x", kObject);
    ASSERT_EQ(put.status().code(), StatusCode::kNoSpace)  // room frees as k0's copy lands
        << "offload on evict writes the coldest object's disk copy first";
    RunOffloads(node);
    Put("x");
    EXPECT_EQ(TiersOf(K(0)), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(Metric("put_no_space_total"), 1);
    ExpectInvariants();
}

TEST_F(EvictionTest, PutFailsWithNoSpaceWhenEverythingIsLeasedUnderLeaseBlocksEviction) {
    config_.Set("lease_blocks_eviction", "true").ok();
    config_.Set("default_kv_lease_ttl", "60000").ok();
    config_.Set("put_wait_for_offload_ms", "60000").ok();  // must not wait: nothing in flight
    AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) {
        Put(K(i));
        ASSERT_EQ(Get(K(i)), StatusCode::kOk);
    }
    Result<PutStartReply> put = store().PutStart(1, "x", kObject);
    EXPECT_EQ(put.status().code(), StatusCode::kNoSpace);
    EXPECT_NE(put.status().message().find("nothing in it can be evicted"), std::string::npos)
        << put.status().message();
    EXPECT_EQ(Metric("put_no_space_total"), 1);
    EXPECT_EQ(Metric("evictions_total"), 0);
    EXPECT_EQ(store().ComputeTotals().objects, 4u);
    ExpectInvariants();
}

// ---------------- the watermark round ----------------

TEST_F(EvictionTest, WatermarkDropFreesAboutEvictionRatioLruFirst) {
    OffloadOff();
    config_.Set("eviction_watermark_drop", "true").ok();
    config_.Set("eviction_high_watermark_ratio", "0.9").ok();
    config_.Set("eviction_ratio", "0.2").ok();
    AddNode("n1", 100 * kObject);
    for (int i = 0; i < 90; ++i) Put(K(i));
    EXPECT_EQ(store().RunWatermarkEviction(), 0u);  // at the watermark, not above it
    for (int i = 90; i < 95; ++i) Put(K(i));
    EXPECT_EQ(store().RunWatermarkEviction(), 20u);  // 20% of 100 objects
    EXPECT_EQ(DramUsed(), 75 * kObject);
    for (int i = 0; i < 95; ++i) EXPECT_EQ(*store().Exists(K(i)), i >= 20) << i;
    EXPECT_EQ(store().RunWatermarkEviction(), 0u);  // below the watermark now
    ExpectInvariants();
}

TEST_F(EvictionTest, WatermarkDropWithOffloadOnEvictCountsPendingBytes) {
    config_.Set("eviction_watermark_drop", "true").ok();
    config_.Set("eviction_high_watermark_ratio", "0.9").ok();
    config_.Set("eviction_ratio", "0.2").ok();
    NodeId node = AddNode("n1", 100 * kObject);
    for (int i = 0; i < 95; ++i) Put(K(i));
    EXPECT_EQ(store().RunWatermarkEviction(), 20u);  // queued for offload
    EXPECT_EQ(DramUsed(), 95 * kObject);
    // A second round while those are in flight must not evict again.
    EXPECT_EQ(store().RunWatermarkEviction(), 0u);
    ExpectInvariants(20, 20);
    EXPECT_EQ(RunOffloads(node), 20u);
    EXPECT_EQ(DramUsed(), 75 * kObject);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(TiersOf(K(i)), std::vector<Tier>{Tier::kLocalDisk});
    ExpectInvariants();
}

// The default round (eviction_watermark_drop off) keeps DRAM full but makes sure the coldest
// offload_clean_ratio has LOCAL_DISK copies, so a later allocation can drop them without
// waiting; eviction_ratio plays no part in it.
TEST_F(EvictionTest, WatermarkCleanReadiesTheColdEndForInstantDrops) {
    config_.Set("eviction_high_watermark_ratio", "0.9").ok();
    config_.Set("eviction_ratio", "0.05").ok();
    config_.Set("offload_clean_ratio", "0.2").ok();
    NodeId node = AddNode("n1", 100 * kObject);
    for (int i = 0; i < 95; ++i) Put(K(i));
    EXPECT_EQ(store().RunWatermarkEviction(), 20u);
    EXPECT_EQ(DramUsed(), 95 * kObject);  // nothing dropped
    EXPECT_EQ(store().RunWatermarkEviction(), 0u);  // already covered
    EXPECT_EQ(RunOffloads(node), 20u);
    for (int i = 0; i < 95; ++i) {
        std::vector<Tier> want{Tier::kMemory};
        if (i < 20) want.push_back(Tier::kLocalDisk);
        EXPECT_EQ(TiersOf(K(i)), want) << i;
    }
    // DRAM fills; the Puts past capacity drop clean copies at once (wait is 0 here).
    for (int i = 95; i < 110; ++i) Put(K(i));
    EXPECT_EQ(DramUsed(), 100 * kObject);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(TiersOf(K(i)), std::vector<Tier>{Tier::kLocalDisk});
    ExpectInvariants();
}

// Issue 36: Puts into full DRAM while the round's copies are still being written take those
// (MEMORY goes as each lands) instead of queueing new copies of warmer objects behind the
// whole round. Was: the round's objects were not evictable, every Put waited for the round.
TEST_F(EvictionTest, PutsTakeTheWatermarkRoundsCopiesInFlight) {
    config_.Set("eviction_high_watermark_ratio", "0.9").ok();
    config_.Set("offload_clean_ratio", "0.2").ok();
    NodeId node = AddNode("n1", 100 * kObject);
    for (int i = 0; i < 100; ++i) Put(K(i));
    EXPECT_EQ(store().RunWatermarkEviction(), 20u);  // K(0)..K(19) copies queued, none written
    // The Put takes the coldest, K(0), whose copy is on its way (it waits 0 ms here: NoSpace).
    EXPECT_EQ(store().PutStart(1, "new", kObject).status().code(), StatusCode::kNoSpace);
    EXPECT_EQ(Metric("offload_queued_total"), 20) << "no copy queued behind the round's";
    EXPECT_EQ(Metric("evictions_total"), 1);
    ExpectInvariants(/*expected_pins=*/20, /*expected_tasks=*/20);
    EXPECT_EQ(RunOffloads(node), 20u);
    // K(0) went as its copy landed; the other nineteen stay, clean.
    EXPECT_EQ(TiersOf(K(0)), std::vector<Tier>{Tier::kLocalDisk});
    for (int i = 1; i < 20; ++i) {
        EXPECT_EQ(TiersOf(K(i)), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk})) << i;
    }
    Put("new");
    EXPECT_EQ(DramUsed(), 100 * kObject);
    ExpectInvariants();
}

// A clean share the disk cannot hold would churn (each copy written ahead evicting another
// record of the full disk, maybe the only copy of a colder object): the round cleans at most a
// quarter of the disks.
TEST_F(EvictionTest, WatermarkCleanIsCappedAtAQuarterOfTheDisks) {
    config_.Set("eviction_high_watermark_ratio", "0.9").ok();
    config_.Set("offload_clean_ratio", "0.2").ok();
    NodeId node = AddNode("n1", 100 * kObject, /*disk=*/40 * kObject);
    for (int i = 0; i < 95; ++i) Put(K(i));
    EXPECT_EQ(store().RunWatermarkEviction(), 10u);  // 40 / 4 objects, not 0.2 x 100
    EXPECT_EQ(RunOffloads(node), 10u);
    EXPECT_EQ(store().RunWatermarkEviction(), 0u);  // covered
    for (int i = 0; i < 95; ++i) {
        std::vector<Tier> want{Tier::kMemory};
        if (i < 10) want.push_back(Tier::kLocalDisk);
        EXPECT_EQ(TiersOf(K(i)), want) << i;
    }
    ExpectInvariants();
}

// A round walks about twice the share of DRAM's objects, so it runs only when the clean share
// may have shrunk: new data took a sixteenth of it, or a second passed (reads reorder the
// cold end). Reads alone make the coldest objects ones without a disk copy here.
TEST_F(EvictionTest, WatermarkCleanRunsAgainAfterNewDataOrASecond) {
    config_.Set("eviction_high_watermark_ratio", "0.9").ok();
    config_.Set("offload_clean_ratio", "0.2").ok();  // 20 objects; a sixteenth is 1.25
    NodeId node = AddNode("n1", 100 * kObject);
    for (int i = 0; i < 95; ++i) Put(K(i));
    EXPECT_EQ(store().RunWatermarkEviction(), 20u);
    EXPECT_EQ(RunOffloads(node), 20u);
    // Copies written ahead, per key (the round's choice of the coldest is close, not exact:
    // it looks at about twice its share per shard).
    auto clean = [&] {
        size_t n = 0;
        for (int i = 0; i < 97; ++i) n += TiersOf(K(i)).size() == 2;
        return n;
    };
    for (int i = 0; i < 20; ++i) ASSERT_EQ(Get(K(i)), StatusCode::kOk);
    EXPECT_EQ(store().RunWatermarkEviction(), 0u);  // nothing allocated, within the second
    clock_.Advance(milliseconds(1001));
    size_t queued = store().RunWatermarkEviction();  // about K(20)..K(39)
    EXPECT_GE(queued, 15u);
    EXPECT_EQ(RunOffloads(node), queued);
    for (int i = 20; i < 40; ++i) ASSERT_EQ(Get(K(i)), StatusCode::kOk);
    EXPECT_EQ(store().RunWatermarkEviction(), 0u);
    const size_t before = clean();
    Put(K(95));
    Put(K(96));  // two objects of new data: more than a sixteenth of the share
    queued = store().RunWatermarkEviction();  // about K(40)..K(59)
    EXPECT_GE(queued, 15u);
    EXPECT_EQ(RunOffloads(node), queued);
    EXPECT_EQ(clean(), before + queued);
    ExpectInvariants();
}

TEST_F(EvictionTest, WatermarkRoundWithOffloadOffLeavesDramFullForOnDemandEviction) {
    OffloadOff();
    config_.Set("eviction_high_watermark_ratio", "0.5").ok();
    AddNode("n1", 10 * kObject);
    for (int i = 0; i < 10; ++i) Put(K(i));
    EXPECT_EQ(store().RunWatermarkEviction(), 0u);
    EXPECT_EQ(DramUsed(), 10 * kObject);
    Put(K(10));  // on demand
    EXPECT_EQ(DramUsed(), 10 * kObject);
    ExpectInvariants();
}

TEST_F(EvictionTest, TickRunsTheWatermarkRound) {
    OffloadOff();
    config_.Set("eviction_watermark_drop", "true").ok();
    config_.Set("eviction_high_watermark_ratio", "0.5").ok();
    config_.Set("eviction_ratio", "0.3").ok();
    AddNode("n1", 10 * kObject);
    for (int i = 0; i < 8; ++i) Put(K(i));
    store().Tick();
    EXPECT_EQ(DramUsed(), 5 * kObject);
    ExpectInvariants();
}

// ---------------- manual evict ----------------

TEST_F(EvictionTest, ManualEvictOutcomes) {
    config_.Set("default_kv_lease_ttl", "0").ok();
    NodeId node = AddNode("n1", 8 * kObject);
    Put("a");
    EXPECT_EQ(*store().Evict("a"), ManualOutcome::kQueued);     // offload first
    EXPECT_EQ(*store().Evict("a"), ManualOutcome::kInFlight);   // deduplicated
    EXPECT_EQ(Metric("offload_queued_total"), 1);
    RunOffloads(node);
    EXPECT_EQ(*store().Evict("a"), ManualOutcome::kAlreadyThere);  // disk only
    EXPECT_EQ(store().Evict("missing").status().code(), StatusCode::kNotFound);
    ASSERT_TRUE(store().PutStart(1, "p", kObject).ok());
    EXPECT_EQ(store().Evict("p").status().code(), StatusCode::kNotReady);
    // With a disk copy already: dropped at once.
    Put("b");
    ASSERT_EQ(*store().Offload("b"), ManualOutcome::kQueued);
    RunOffloads(node);
    EXPECT_EQ(*store().Evict("b"), ManualOutcome::kDone);
    EXPECT_EQ(TiersOf("b"), std::vector<Tier>{Tier::kLocalDisk});
    // Leased: evicted by default (its read has ended), refused under lease_blocks_eviction.
    config_.Set("default_kv_lease_ttl", "60000").ok();
    Put("c");
    ASSERT_EQ(Get("c"), StatusCode::kOk);
    EXPECT_EQ(*store().Evict("c"), ManualOutcome::kQueued);
    config_.Set("lease_blocks_eviction", "true").ok();
    Put("d");
    ASSERT_EQ(Get("d"), StatusCode::kOk);
    EXPECT_EQ(store().Evict("d").status().code(), StatusCode::kHasLease);
    RunOffloads(node);
    ExpectInvariants();
}

// An evict asked while the object's PutEnd offload is in flight answers "in flight" — and
// must then happen: MEMORY is dropped once the disk copy exists.
TEST_F(EvictionTest, ManualEvictDuringAPutEndOffloadDropsMemoryWhenItCompletes) {
    OffloadAtPutEnd();
    NodeId node = AddNode("n1", 8 * kObject);
    Put("a");
    EXPECT_EQ(*store().Evict("a"), ManualOutcome::kInFlight);
    EXPECT_EQ(RunOffloads(node), 1u);
    EXPECT_EQ(TiersOf("a"), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

// Offload on evict: the object is read while its disk copy is being written. It is hot again:
// MEMORY stays (clean, so a later eviction drops it at no cost) and the room goes elsewhere.
// Unread, MEMORY goes as the copy lands, lease or not.
TEST_F(EvictionTest, OffloadCompletingAfterAReadKeepsMemory) {
    NodeId node = AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i));
    config_.Set("default_kv_lease_ttl", "60000").ok();
    for (int i = 1; i < 4; ++i) ASSERT_EQ(Get(K(i)), StatusCode::kOk);  // leased, k0 coldest
    ASSERT_EQ(store().PutStart(1, K(4), kObject).status().code(), StatusCode::kNoSpace);
    ASSERT_EQ(Get(K(0)), StatusCode::kOk);  // k0 chosen, then read
    ASSERT_EQ(*store().Evict(K(1)), ManualOutcome::kQueued);  // chosen (by hand), unread
    ASSERT_EQ(RunOffloads(node), 2u);
    EXPECT_EQ(TiersOf(K(0)), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    EXPECT_EQ(TiersOf(K(1)), std::vector<Tier>{Tier::kLocalDisk});
    Put(K(4));
    ExpectInvariants();
}

// Under lease_blocks_eviction the copy is committed but MEMORY stays while the lease lasts;
// the next eviction drops it without writing it again.
TEST_F(EvictionTest, OffloadCompletingWhileLeasedKeepsMemoryUnderLeaseBlocksEviction) {
    config_.Set("lease_blocks_eviction", "true").ok();
    NodeId node = AddNode("n1", 4 * kObject);
    for (int i = 0; i < 4; ++i) Put(K(i));
    ASSERT_EQ(store().PutStart(1, K(4), kObject).status().code(), StatusCode::kNoSpace);
    config_.Set("default_kv_lease_ttl", "1000").ok();
    ASSERT_EQ(Get(K(0)), StatusCode::kOk);  // leased while its offload is in flight
    config_.Set("default_kv_lease_ttl", "0").ok();
    ASSERT_EQ(RunOffloads(node), 1u);
    EXPECT_EQ(TiersOf(K(0)), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    ExpectInvariants();
    clock_.Advance(milliseconds(1001));
    for (int i = 1; i < 4; ++i) ASSERT_EQ(Get(K(i)), StatusCode::kOk);  // k0 is the coldest
    Put(K(4));
    EXPECT_EQ(TiersOf(K(0)), std::vector<Tier>{Tier::kLocalDisk});
    EXPECT_EQ(Metric("offload_queued_total"), 1);
    ExpectInvariants();
}

TEST_F(EvictionTest, ManualEvictWithOffloadOffRemovesTheObject) {
    OffloadOff();
    AddNode("n1", 8 * kObject);
    Put("a");
    EXPECT_EQ(*store().Evict("a"), ManualOutcome::kDone);
    EXPECT_EQ(store().Stat("a").status().code(), StatusCode::kNotFound);
    Put("a");  // the key is free again
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
