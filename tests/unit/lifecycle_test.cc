// Issue 2: the object lifecycle — PutStart / PutEnd / PutRevoke / GetReplicaList / Remove /
// Exists and their batch forms, generations, and bad input. DESIGN.md "Object lifecycle".
#include <algorithm>
#include <set>

#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class LifecycleTest : public StoreFixture {
public:
    // What must not change when a call is refused.
    struct Snapshot {
        MasterStore::Totals totals;
        double puts = 0;
        double removes = 0;
        bool operator==(const Snapshot& o) const {
            return totals.dram_used == o.totals.dram_used &&
                   totals.dram_allocated == o.totals.dram_allocated &&
                   totals.objects == o.totals.objects && totals.pins == o.totals.pins &&
                   totals.promotion_tasks == o.totals.promotion_tasks &&
                   totals.offload_tasks == o.totals.offload_tasks && puts == o.puts &&
                   removes == o.removes;
        }
    };
    Snapshot Snap() {
        return {store().ComputeTotals(), Metric("puts_total"), Metric("removes_total")};
    }
};

// ---------------- PutStart / PutEnd / PutRevoke ----------------

TEST_F(LifecycleTest, PutStartRecordsInvisibleProcessingReplica) {
    NodeId node = AddNode("n1", 16 * kObject);
    Result<PutStartReply> start = store().PutStart(1, "k", 100);
    ASSERT_TRUE(start.ok());
    EXPECT_NE(start->generation, kNoGeneration);
    EXPECT_EQ(start->replica.tier, Tier::kMemory);
    EXPECT_EQ(start->replica.state, ReplicaState::kProcessing);
    EXPECT_EQ(start->replica.node, node);
    EXPECT_EQ(start->replica.size, 100u);
    EXPECT_EQ(start->replica.offset % 64, 0u);
    EXPECT_EQ(DramUsed(), 128u);  // rounded up to dram_alloc_granularity (64 B)

    // Invisible to readers in every form.
    EXPECT_EQ(Get("k"), StatusCode::kNotReady);
    EXPECT_FALSE(*store().Exists("k"));
    std::vector<std::string> keys{"k"};
    EXPECT_EQ(store().BatchGetReplicaList(keys)[0].status().code(), StatusCode::kNotReady);
    EXPECT_TRUE(store().List({}).empty());
    ListOptions memory_only;
    memory_only.tier = Tier::kMemory;
    EXPECT_TRUE(store().List(memory_only).empty());
    // Inspection sees it, as PROCESSING.
    Result<ObjectView> stat = store().Stat("k");
    ASSERT_TRUE(stat.ok());
    ASSERT_EQ(stat->replicas.size(), 1u);
    EXPECT_EQ(stat->replicas[0].state, ReplicaState::kProcessing);
    EXPECT_TRUE(stat->CompleteTiers().empty());
    ExpectInvariants();
}

TEST_F(LifecycleTest, PutEndMakesTheReplicaCompleteAndReadable) {
    NodeId node = AddNode("n1", 16 * kObject);
    Result<PutStartReply> start = store().PutStart(1, "k", 100);
    ASSERT_TRUE(start.ok());
    ASSERT_TRUE(store().PutEnd(1, "k", start->generation).ok());
    Result<ObjectView> view = store().GetReplicaList("k");
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->generation, start->generation);
    EXPECT_EQ(view->size, 100u);
    ASSERT_EQ(view->replicas.size(), 1u);
    EXPECT_EQ(view->replicas[0].tier, Tier::kMemory);
    EXPECT_EQ(view->replicas[0].state, ReplicaState::kComplete);
    EXPECT_EQ(view->replicas[0].node, node);
    EXPECT_EQ(view->replicas[0].offset, start->replica.offset);
    EXPECT_TRUE(*store().Exists("k"));
    EXPECT_EQ(store().List({}).size(), 1u);
    EXPECT_EQ(Metric("puts_total"), 1);
    ExpectInvariants();
}

TEST_F(LifecycleTest, PutEndIsIdempotentForTheSameClient) {
    AddNode("n1", 16 * kObject);
    Result<PutStartReply> start = store().PutStart(1, "k", kObject);
    ASSERT_TRUE(start.ok());
    ASSERT_TRUE(store().PutEnd(1, "k", start->generation).ok());
    EXPECT_TRUE(store().PutEnd(1, "k", start->generation).ok());  // a retried RPC
    EXPECT_EQ(Metric("puts_total"), 1);
    EXPECT_EQ(DramUsed(), kObject);
    ExpectInvariants();
}

TEST_F(LifecycleTest, PutEndAndPutRevokeOnlyFromTheStartingClient) {
    AddNode("n1", 16 * kObject);
    Result<PutStartReply> start = store().PutStart(/*client=*/1, "k", kObject);
    ASSERT_TRUE(start.ok());
    Snapshot before = Snap();
    Status end = store().PutEnd(/*client=*/2, "k", start->generation);
    EXPECT_EQ(end.code(), StatusCode::kIllegalClient) << end.ToString();
    EXPECT_NE(end.message().find("another client"), std::string::npos) << end.message();
    Status revoke = store().PutRevoke(2, "k", start->generation);
    EXPECT_EQ(revoke.code(), StatusCode::kIllegalClient);
    EXPECT_TRUE(Snap() == before);
    EXPECT_EQ(Get("k"), StatusCode::kNotReady);  // still PROCESSING
    // The owner still can.
    EXPECT_TRUE(store().PutEnd(1, "k", start->generation).ok());
    EXPECT_EQ(Get("k"), StatusCode::kOk);
    ExpectInvariants();
}

TEST_F(LifecycleTest, PutRevokeFreesDramAndForgetsTheKey) {
    AddNode("n1", 16 * kObject);
    Result<PutStartReply> start = store().PutStart(1, "k", 3 * kObject);
    ASSERT_TRUE(start.ok());
    EXPECT_EQ(DramUsed(), 3 * kObject);
    ASSERT_TRUE(store().PutRevoke(1, "k", start->generation).ok());
    EXPECT_EQ(DramUsed(), 0u);
    EXPECT_EQ(store().Stat("k").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(Get("k"), StatusCode::kNotFound);
    // A later Put of the key succeeds, with a new generation.
    Generation again = Put("k");
    EXPECT_GT(again, start->generation);
    // A revoke of the old incarnation is refused and changes nothing.
    EXPECT_EQ(store().PutRevoke(1, "k", start->generation).code(), StatusCode::kStaleGeneration);
    EXPECT_EQ(Get("k"), StatusCode::kOk);
    ExpectInvariants();
}

TEST_F(LifecycleTest, PutRevokeAfterPutEndIsRefused) {
    AddNode("n1", 16 * kObject);
    Generation gen = Put("k");
    Status revoke = store().PutRevoke(1, "k", gen);
    EXPECT_EQ(revoke.code(), StatusCode::kInvalidArgument) << revoke.ToString();
    EXPECT_EQ(Get("k"), StatusCode::kOk);
    ExpectInvariants();
}

TEST_F(LifecycleTest, PutOfAnExistingKeyIsRefusedAndChangesNothing) {
    AddNode("n1", 16 * kObject);
    Generation gen = Put("k");
    Snapshot before = Snap();
    Result<PutStartReply> again = store().PutStart(1, "k", kObject);
    EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
    // Also while the first put is still in progress.
    ASSERT_TRUE(store().PutStart(1, "p", kObject).ok());
    EXPECT_EQ(store().PutStart(2, "p", kObject).status().code(), StatusCode::kAlreadyExists);
    EXPECT_EQ(store().Stat("k")->generation, gen);
    EXPECT_EQ(DramUsed(), before.totals.dram_used + kObject);
    ExpectInvariants();
}

TEST_F(LifecycleTest, AbandonedPutIsFreedAfterPutTimeout) {
    config_.Set("put_timeout_sec", "5").ok();
    AddNode("n1", 16 * kObject);
    Result<PutStartReply> start = store().PutStart(1, "k", kObject);
    ASSERT_TRUE(start.ok());
    clock_.Advance(seconds(4));
    store().Tick();
    EXPECT_EQ(DramUsed(), kObject);  // not yet
    clock_.Advance(seconds(2));
    store().Heartbeat(1).ok();  // keep the node alive
    store().Tick();
    EXPECT_EQ(DramUsed(), 0u);
    EXPECT_EQ(store().Stat("k").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store().PutEnd(1, "k", start->generation).code(), StatusCode::kNotFound);
    ExpectInvariants();
}

// The reaper walks a shard only when something in it may be due (core/master/store_reap.cc): a Put
// started after a walk that found nothing, and one started under a timeout shortened since,
// are still freed on time.
TEST_F(LifecycleTest, PutsStartedBetweenReapWalksAreFreedOnTime) {
    config_.Set("put_timeout_sec", "5").ok();
    AddNode("n1", 16 * kObject);
    ASSERT_TRUE(store().PutStart(1, "early", kObject).ok());
    store().Tick();  // walks every shard: "early" due at 5 s, nothing else before 5 s
    clock_.Advance(seconds(3));
    ASSERT_TRUE(store().PutStart(1, "later", kObject).ok());  // due at 8 s
    config_.Set("put_timeout_sec", "1").ok();
    ASSERT_TRUE(store().PutStart(1, "short", kObject).ok());  // due at 4 s
    clock_.Advance(seconds(1) + milliseconds(500));            // 4.5 s
    store().Heartbeat(1).ok();
    EXPECT_EQ(store().ReapExpired(), 1u);
    EXPECT_EQ(store().Stat("short").status().code(), StatusCode::kNotFound);
    clock_.Advance(seconds(1));  // 5.5 s
    store().Heartbeat(1).ok();
    EXPECT_EQ(store().ReapExpired(), 1u);
    EXPECT_EQ(store().Stat("early").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store().ReapExpired(), 0u);
    clock_.Advance(seconds(3));  // 8.5 s
    store().Heartbeat(1).ok();
    EXPECT_EQ(store().ReapExpired(), 1u);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

// ---------------- GetReplicaList ----------------

TEST_F(LifecycleTest, GetReplicaListListsCompleteReplicasMemoryFirst) {
    config_.Set("offload_on_evict", "false").ok();  // disk copy written at PutEnd
    NodeId node = AddNode("n1", 16 * kObject);
    Put("k");
    RunOffloads(node);
    Result<ObjectView> view = store().GetReplicaList("k");
    ASSERT_TRUE(view.ok());
    ASSERT_EQ(view->replicas.size(), 2u);
    EXPECT_EQ(view->replicas[0].tier, Tier::kMemory);
    EXPECT_EQ(view->replicas[1].tier, Tier::kLocalDisk);
    for (const ReplicaDesc& r : view->replicas) EXPECT_EQ(r.state, ReplicaState::kComplete);
    EXPECT_EQ(view->CompleteTiers(), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    ExpectInvariants();
}

TEST_F(LifecycleTest, GetReplicaListOfMissingKeyIsNotFound) {
    AddNode("n1", 16 * kObject);
    Result<ObjectView> view = store().GetReplicaList("nope");
    EXPECT_EQ(view.status().code(), StatusCode::kNotFound);
    EXPECT_NE(view.status().message().find("'nope'"), std::string::npos);
    EXPECT_EQ(Metric("get_misses_total"), 1);
    ExpectInvariants();
}

TEST_F(LifecycleTest, GetGrantsLeaseThatRefusesRemoveUntilItExpires) {
    config_.Set("default_kv_lease_ttl", "1000").ok();
    AddNode("n1", 16 * kObject);
    Put("k");
    Result<ObjectView> view = store().GetReplicaList("k");
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->lease_expiry, clock_.Now() + milliseconds(1000));
    Status removed = store().Remove("k");
    EXPECT_EQ(removed.code(), StatusCode::kHasLease) << removed.ToString();
    EXPECT_TRUE(*store().Exists("k"));
    // Each Get extends the lease.
    clock_.Advance(milliseconds(800));
    ASSERT_TRUE(store().GetReplicaList("k").ok());
    clock_.Advance(milliseconds(800));
    EXPECT_EQ(store().Remove("k").code(), StatusCode::kHasLease);
    clock_.Advance(milliseconds(201));
    EXPECT_TRUE(store().Remove("k").ok());
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

TEST_F(LifecycleTest, ForcedRemoveIgnoresTheLease) {
    config_.Set("default_kv_lease_ttl", "60000").ok();
    AddNode("n1", 16 * kObject);
    Put("k");
    ASSERT_TRUE(store().GetReplicaList("k").ok());
    EXPECT_EQ(store().Remove("k").code(), StatusCode::kHasLease);
    EXPECT_TRUE(store().Remove("k", /*force=*/true).ok());
    EXPECT_EQ(Get("k"), StatusCode::kNotFound);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

// DESIGN.md's lifecycle table says "PutEnd: read lease granted", master_store.h says PutEnd
// "grants no lease". The code follows the header: a Remove right after a Put works (what a
// `mooncakectl put k; mooncakectl rm k` user expects). Reported to the lead as a discrepancy.
TEST_F(LifecycleTest, PutEndGrantsNoLeaseSoRemoveRightAfterPutWorks) {
    config_.Set("default_kv_lease_ttl", "60000").ok();
    AddNode("n1", 16 * kObject);
    Put("k");
    EXPECT_TRUE(store().Remove("k").ok());
    ExpectInvariants();
}

TEST_F(LifecycleTest, ExistsAndStatAreNotAccesses) {
    config_.Set("default_kv_lease_ttl", "60000").ok();
    AddNode("n1", 16 * kObject);
    Put("k");
    uint64_t recency = store().Stat("k")->recency;
    for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(*store().Exists("k"));
        EXPECT_TRUE(store().Stat("k").ok());
        EXPECT_EQ(store().List({}).size(), 1u);
    }
    Result<ObjectView> stat = store().Stat("k");
    EXPECT_EQ(stat->recency, recency);
    EXPECT_EQ(stat->sketch_estimate, 0u);
    EXPECT_TRUE(store().Remove("k").ok()) << "an inspection leased the key";
    EXPECT_FALSE(*store().Exists("k"));
    ExpectInvariants();
}

// ---------------- Remove ----------------

TEST_F(LifecycleTest, RemoveFreesDramAndTellsTheDiskHolderToDelete) {
    config_.Set("offload_on_evict", "false").ok();
    NodeId node = AddNode("n1", 16 * kObject);
    Generation gen = Put("k");
    RunOffloads(node);
    ASSERT_EQ(TiersOf("k"), (std::vector<Tier>{Tier::kMemory, Tier::kLocalDisk}));
    store().Heartbeat(node).ok();  // clear anything pending
    ASSERT_TRUE(store().Remove("k").ok());
    EXPECT_EQ(DramUsed(), 0u);
    EXPECT_EQ(store().ComputeTotals().objects, 0u);
    Result<HeartbeatReply> beat = store().Heartbeat(node);
    ASSERT_TRUE(beat.ok());
    ASSERT_EQ(beat->disk_deletes.size(), 1u);
    EXPECT_EQ(beat->disk_deletes[0].key, "k");
    EXPECT_EQ(beat->disk_deletes[0].generation, gen);
    ASSERT_EQ(beat->released.size(), 1u);  // the DRAM range no longer holds (k, gen)
    EXPECT_EQ(beat->released[0].generation, gen);
    EXPECT_EQ(store().Nodes()[0].disk_used, 0u);
    EXPECT_EQ(store().Remove("k").code(), StatusCode::kNotFound);
    ExpectInvariants();
}

TEST_F(LifecycleTest, RemoveOfAPutInProgressFreesItAndTheLatePutEndIsRefused) {
    AddNode("n1", 16 * kObject);
    Result<PutStartReply> start = store().PutStart(1, "k", kObject);
    ASSERT_TRUE(start.ok());
    ASSERT_TRUE(store().Remove("k").ok());
    EXPECT_EQ(DramUsed(), 0u);
    EXPECT_EQ(store().PutEnd(1, "k", start->generation).code(), StatusCode::kNotFound);
    EXPECT_EQ(Metric("puts_total"), 0);
    ExpectInvariants();
}

TEST_F(LifecycleTest, BatchFormsAnswerPerKey) {
    config_.Set("default_kv_lease_ttl", "60000").ok();
    AddNode("n1", 16 * kObject);
    Put("a");
    Put("b");
    ASSERT_TRUE(store().PutStart(1, "p", kObject).ok());
    std::vector<std::string> keys{"a", "missing", "p", "b", ""};
    std::vector<Result<ObjectView>> got = store().BatchGetReplicaList(keys);
    ASSERT_EQ(got.size(), keys.size());
    EXPECT_TRUE(got[0].ok());
    EXPECT_EQ(got[0]->key, "a");
    EXPECT_EQ(got[1].status().code(), StatusCode::kNotFound);
    EXPECT_EQ(got[2].status().code(), StatusCode::kNotReady);
    EXPECT_TRUE(got[3].ok());
    EXPECT_EQ(got[3]->key, "b");
    EXPECT_EQ(got[4].status().code(), StatusCode::kInvalidArgument);

    // a and b are now leased.
    std::vector<Status> removed = store().BatchRemove(keys);
    ASSERT_EQ(removed.size(), keys.size());
    EXPECT_EQ(removed[0].code(), StatusCode::kHasLease);
    EXPECT_EQ(removed[1].code(), StatusCode::kNotFound);
    EXPECT_TRUE(removed[2].ok());  // the put in progress was not leased
    EXPECT_EQ(removed[3].code(), StatusCode::kHasLease);
    EXPECT_EQ(removed[4].code(), StatusCode::kInvalidArgument);
    std::vector<Status> forced = store().BatchRemove(std::vector<std::string>{"a", "b"}, true);
    EXPECT_TRUE(forced[0].ok());
    EXPECT_TRUE(forced[1].ok());
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

TEST_F(LifecycleTest, RemoveByPrefixSkipsLeasedKeysUnlessForced) {
    config_.Set("default_kv_lease_ttl", "60000").ok();
    AddNode("n1", 16 * kObject);
    Put("x/1");
    Put("x/2");
    Put("x/3");
    Put("y/1");
    ASSERT_TRUE(store().GetReplicaList("x/2").ok());
    size_t skipped = 99;
    EXPECT_EQ(store().RemoveByPrefix("x/", false, &skipped), 2u);
    EXPECT_EQ(skipped, 1u);
    EXPECT_TRUE(*store().Exists("x/2"));
    EXPECT_TRUE(*store().Exists("y/1"));
    EXPECT_EQ(store().RemoveByPrefix("x/", true, &skipped), 1u);
    EXPECT_EQ(skipped, 0u);
    EXPECT_EQ(DramUsed(), kObject);
    ExpectInvariants();
}

// ---------------- generations ----------------

TEST_F(LifecycleTest, GenerationsAreUniqueAndIncreasingAndCarryTheEpoch) {
    AddNode("n1", 64 * kObject);
    std::set<Generation> seen;
    Generation last = kNoGeneration;
    for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < 8; ++i) {
            std::string key = "k" + std::to_string(i);
            Generation gen = Put(key);
            EXPECT_GT(gen, last);
            EXPECT_EQ(gen >> 32, 7u) << "the epoch is the high half";
            last = gen;
            EXPECT_TRUE(seen.insert(gen).second);
            ASSERT_TRUE(store().Remove(key).ok());
        }
    }
    ExpectInvariants();
}

TEST_F(LifecycleTest, GenerationsOfALaterEpochExceedEveryEarlierOne) {
    AddNode("n1", 64 * kObject);
    Generation old_max = kNoGeneration;
    for (int i = 0; i < 60; ++i) old_max = std::max(old_max, Put("k" + std::to_string(i)));
    // A restarted master with a larger epoch.
    Config config;
    MetricsRegistry metrics;
    MasterStore restarted(config, clock_, metrics, 8);
    ASSERT_TRUE(restarted.RegisterNode({"n1", "d", 64 * kObject, 1 << 30}).ok());
    Result<PutStartReply> start = restarted.PutStart(1, "k0", kObject);
    ASSERT_TRUE(start.ok());
    EXPECT_GT(start->generation, old_max);
    ExpectInvariants();
}

TEST_F(LifecycleTest, ReportsAboutAnOldIncarnationAreRefused) {
    config_.Set("offload_on_evict", "false").ok();
    NodeId node = AddNode("n1", 16 * kObject);
    Generation old_gen = Put("k");  // PutEnd queued the offload of the old incarnation
    std::vector<OffloadTask> tasks = store().OffloadObjectHeartbeat(node, 16);
    ASSERT_EQ(tasks.size(), 1u);
    ASSERT_TRUE(store().Remove("k").ok());
    Result<PutStartReply> start = store().PutStart(1, "k", kObject);
    ASSERT_TRUE(start.ok());
    Generation new_gen = start->generation;
    ASSERT_GT(new_gen, old_gen);

    // Every report naming the old incarnation: refused, nothing changes.
    EXPECT_EQ(store().PutEnd(1, "k", old_gen).code(), StatusCode::kStaleGeneration);
    EXPECT_EQ(store().PutRevoke(1, "k", old_gen).code(), StatusCode::kStaleGeneration);
    EXPECT_EQ(store().NotifyOffloadSuccess(node, "k", old_gen).code(),
              StatusCode::kStaleGeneration);
    EXPECT_EQ(store().NotifyOffloadFailure(node, "k", old_gen).code(),
              StatusCode::kStaleGeneration);
    EXPECT_EQ(store().PromotionAllocStart(node, "k", old_gen, kObject).status().code(),
              StatusCode::kStaleGeneration);
    EXPECT_EQ(store().NotifyPromotionSuccess(node, "k", old_gen).code(),
              StatusCode::kStaleGeneration);
    std::vector<DiskReplicaReport> reports{{"k", old_gen, kObject}};
    Result<std::vector<Status>> adopted = store().RegisterDiskReplicas(node, reports);
    ASSERT_TRUE(adopted.ok());
    EXPECT_EQ((*adopted)[0].code(), StatusCode::kStaleGeneration);
    EXPECT_TRUE(store().ReportDiskReplicaDropped(node, "k", old_gen).ok());  // ignored

    Result<ObjectView> stat = store().Stat("k");
    ASSERT_TRUE(stat.ok());
    EXPECT_EQ(stat->generation, new_gen);
    ASSERT_EQ(stat->replicas.size(), 1u);
    EXPECT_EQ(stat->replicas[0].state, ReplicaState::kProcessing);
    ASSERT_TRUE(store().PutEnd(1, "k", new_gen).ok());
    EXPECT_EQ(Get("k"), StatusCode::kOk);
    ExpectInvariants(1, 1);  // the new incarnation's PutEnd offload is queued
    RunOffloads(node);
    ExpectInvariants();
}

// ---------------- bad input: each its own clear error, nothing changed ----------------

TEST_F(LifecycleTest, BadKeysAreRefusedEverywhere) {
    AddNode("n1", 16 * kObject);
    Put("good");
    Snapshot before = Snap();
    const std::string too_long(kMaxKeyBytes + 1, 'x');
    const std::string with_nul("a\0b", 3);
    struct Case {
        std::string key;
        std::string words;
    };
    for (const Case& c : {Case{"", "empty"}, Case{too_long, "4096"}, Case{with_nul, "NUL"}}) {
        SCOPED_TRACE(c.words);
        Result<PutStartReply> start = store().PutStart(1, c.key, kObject);
        EXPECT_EQ(start.status().code(), StatusCode::kInvalidArgument);
        EXPECT_NE(start.status().message().find(c.words), std::string::npos)
            << start.status().message();
        EXPECT_EQ(store().PutEnd(1, c.key, 1).code(), StatusCode::kInvalidArgument);
        EXPECT_EQ(store().PutRevoke(1, c.key, 1).code(), StatusCode::kInvalidArgument);
        EXPECT_EQ(store().GetReplicaList(c.key).status().code(), StatusCode::kInvalidArgument);
        EXPECT_EQ(store().Remove(c.key, true).code(), StatusCode::kInvalidArgument);
        EXPECT_EQ(store().Exists(c.key).status().code(), StatusCode::kInvalidArgument);
        EXPECT_EQ(store().Stat(c.key).status().code(), StatusCode::kInvalidArgument);
        EXPECT_EQ(store().Promote(c.key, true).status().code(), StatusCode::kInvalidArgument);
    }
    EXPECT_TRUE(Snap() == before);
    EXPECT_EQ(Metric("get_misses_total"), 0) << "a refused key was counted as a read";
    ExpectInvariants();
}

TEST_F(LifecycleTest, KeysOfExactly4096BytesAndAnyOtherByteAreAccepted) {
    AddNode("n1", 16 * kObject);
    const std::string longest(kMaxKeyBytes, 'k');
    Put(longest);
    EXPECT_EQ(Get(longest), StatusCode::kOk);
    const std::string binary("\x01\xff/\n%", 5);
    Put(binary);
    EXPECT_EQ(store().GetReplicaList(binary)->key, binary);
    ExpectInvariants();
}

TEST_F(LifecycleTest, SizeZeroIsRefused) {
    AddNode("n1", 16 * kObject);
    Snapshot before = Snap();
    Result<PutStartReply> start = store().PutStart(1, "k", 0);
    EXPECT_EQ(start.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(start.status().message().find("size is 0"), std::string::npos);
    EXPECT_TRUE(Snap() == before);
    EXPECT_EQ(store().Stat("k").status().code(), StatusCode::kNotFound);
    ExpectInvariants();
}

TEST_F(LifecycleTest, SizeLargerThanAnySegmentIsRefused) {
    AddNode("n1", 16 * kObject);
    AddNode("n2", 8 * kObject);
    Put("a");
    Snapshot before = Snap();
    Result<PutStartReply> start = store().PutStart(1, "k", 16 * kObject + 1);
    EXPECT_EQ(start.status().code(), StatusCode::kNoSpace);
    EXPECT_NE(start.status().message().find("larger than any DRAM segment"), std::string::npos)
        << start.status().message();
    EXPECT_TRUE(Snap() == before);
    EXPECT_TRUE(*store().Exists("a")) << "a refused Put must not evict";
    // Exactly the largest segment fits: it evicts what else is on that node (offload off here,
    // so eviction drops at once).
    config_.Set("enable_offload", "false").ok();
    EXPECT_TRUE(store().PutStart(1, "k", 16 * kObject).ok());
    EXPECT_FALSE(*store().Exists("a"));
    ExpectInvariants();
}

TEST_F(LifecycleTest, SizeOverMaxValueSizeIsRefused) {
    config_.Set("max_value_size", "8KiB").ok();
    AddNode("n1", 16 * kObject);
    Result<PutStartReply> start = store().PutStart(1, "k", 8 * 1024 + 1);
    EXPECT_EQ(start.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(start.status().message().find("max_value_size"), std::string::npos);
    EXPECT_EQ(DramUsed(), 0u);
    ExpectInvariants();
}

TEST_F(LifecycleTest, PutWithNoNodesIsRefusedClearly) {
    Result<PutStartReply> start = store().PutStart(1, "k", kObject);
    EXPECT_FALSE(start.ok());
    EXPECT_EQ(store().ComputeTotals().objects, 0u);
    ExpectInvariants();
}

TEST_F(LifecycleTest, UnknownNodeIdsAreRefused) {
    NodeId node = AddNode("n1", 16 * kObject);
    Generation gen = Put("k");
    Snapshot before = Snap();
    const NodeId unknown = node + 100;
    // A Put that names an unknown node as its preferred segment.
    Result<PutStartReply> start = store().PutStart(1, "p", kObject, unknown);
    EXPECT_EQ(start.status().code(), StatusCode::kUnknownNode) << start.status().ToString();
    EXPECT_EQ(store().Heartbeat(unknown).status().code(), StatusCode::kUnknownNode);
    EXPECT_EQ(store().UnregisterNode(unknown).code(), StatusCode::kUnknownNode);
    std::vector<DiskReplicaReport> reports{{"d", gen + 1, kObject}};
    EXPECT_EQ(store().RegisterDiskReplicas(unknown, reports).status().code(),
              StatusCode::kUnknownNode);
    EXPECT_EQ(store().ReportDiskReplicaDropped(unknown, "k", gen).code(),
              StatusCode::kUnknownNode);
    EXPECT_EQ(store().PromotionAllocStart(unknown, "k", gen, kObject).status().code(),
              StatusCode::kUnknownNode);
    EXPECT_TRUE(store().OffloadObjectHeartbeat(unknown, 10).empty());
    EXPECT_TRUE(store().PromotionObjectHeartbeat(unknown, 10).empty());
    EXPECT_TRUE(Snap() == before);
    EXPECT_EQ(store().Stat("p").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store().Nodes().size(), 1u);
    ExpectInvariants();
}

TEST_F(LifecycleTest, NodeRegistrationRejectsBadSpecs) {
    AddNode("n1", 16 * kObject);
    EXPECT_EQ(store().RegisterNode({"", "d", kObject, 0}).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(store().RegisterNode({"n2", "d", kObject + 1, 0}).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(store().RegisterNode({"n1", "d", kObject, 0}).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(store().Nodes().size(), 1u);
    ExpectInvariants();
}

TEST_F(LifecycleTest, ListIsSortedPagedAndFilteredByTier) {
    NodeId node = AddNode("n1", 16 * kObject);
    for (const char* key : {"b/2", "a/1", "b/1", "c/1"}) Put(key);
    ASSERT_EQ(*store().Evict("b/1"), ManualOutcome::kQueued);
    RunOffloads(node);
    ASSERT_TRUE(store().PutStart(1, "b/0", kObject).ok());  // in progress: not listed
    ListOptions options;
    std::vector<std::string> keys;
    for (const ObjectView& v : store().List(options)) keys.push_back(v.key);
    EXPECT_EQ(keys, (std::vector<std::string>{"a/1", "b/1", "b/2", "c/1"}));
    options.prefix = "b/";
    options.limit = 1;
    std::vector<ObjectView> page = store().List(options);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].key, "b/1");
    options.start_after = "b/1";
    page = store().List(options);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].key, "b/2");
    ListOptions disk;
    disk.tier = Tier::kLocalDisk;
    page = store().List(disk);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].key, "b/1");
    ExpectInvariants();
}

// ---------------- allocation strategy ----------------

TEST_F(LifecycleTest, PutGoesToThePreferredNodeThenToTheOneWithMostRoom) {
    NodeId a = AddNode("a", 8 * kObject);
    NodeId b = AddNode("b", 16 * kObject);
    EXPECT_EQ(store().PutStart(1, "x", kObject)->replica.node, b);  // most room
    EXPECT_EQ(store().PutStart(1, "y", kObject, a)->replica.node, a);  // preferred
    // Preferred but full: it goes elsewhere rather than evicting.
    for (int i = 0; i < 7; ++i) Put("a" + std::to_string(i), kObject, a);
    Result<PutStartReply> spill = store().PutStart(1, "z", kObject, a);
    ASSERT_TRUE(spill.ok());
    EXPECT_EQ(spill->replica.node, b);
    EXPECT_EQ(Metric("evictions_total"), 0);
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
