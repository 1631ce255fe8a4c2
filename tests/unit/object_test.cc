// ObjectMeta (core/master/object.h): a task's source pin lives exactly as long as the task.
#include <gtest/gtest.h>

#include "core/master/object.h"

namespace mooncake {
namespace {

// Counts nothing: these tests look at the object alone.
class NoTallies : public ObjectTallies {
public:
    void PutsInProgress(int) override {}
    void NodeMemoryObjects(NodeId, int) override {}
    void NodeDiskObjects(NodeId, int, uint64_t) override {}
    void TenantObjects(std::string_view, Tier, int, uint64_t) override {}
    void TenantLeaving(std::string_view, int64_t) override {}
};

ObjectMeta BothTiers(NoTallies& t) {
    ObjectMeta meta;
    meta.size = 4096;
    meta.StartPut(t, /*node=*/1, /*offset=*/0);
    meta.EndPut(t);
    meta.AddDisk(t, /*node=*/1);
    return meta;
}

int PinnedCount(const ObjectMeta& meta) {
    int pinned = 0;
    for (const Replica& r : meta.replicas()) pinned += meta.Pins(r);
    return pinned;
}

TEST(ObjectTest, NoTaskPinsNothing) {
    NoTallies t;
    ObjectMeta meta = BothTiers(t);
    EXPECT_EQ(PinnedCount(meta), 0);
}

TEST(ObjectTest, AnOffloadPinsItsMemorySourceUntilItEnds) {
    NoTallies t;
    ObjectMeta meta = BothTiers(t);
    meta.offload = OffloadState{1, Nanos(0), Nanos(0), false, false, 0, false};
    EXPECT_TRUE(meta.SourcePinned(*meta.CompleteMemory()));
    EXPECT_FALSE(meta.SourcePinned(*meta.CompleteDisk()));
    EXPECT_EQ(PinnedCount(meta), 1);
    // A task with its source pinned is not evictable (a copy asked for its own sake).
    EXPECT_FALSE(meta.Evictable(Nanos(0), LeaseRule::kReadsOnly));
    meta.offload.reset();  // however the task ends, its pin goes with it
    EXPECT_EQ(PinnedCount(meta), 0);
    EXPECT_TRUE(meta.Evictable(Nanos(0), LeaseRule::kReadsOnly));
}

TEST(ObjectTest, AWrittenAheadCopyLeavesItsSourceEvictable) {
    NoTallies t;
    ObjectMeta meta = BothTiers(t);
    meta.offload = OffloadState{1, Nanos(0), Nanos(0), false, false, 0, /*cleaning=*/true};
    EXPECT_EQ(PinnedCount(meta), 1);
    EXPECT_TRUE(meta.Evictable(Nanos(0), LeaseRule::kReadsOnly));
}

TEST(ObjectTest, APromotionPinsItsDiskSourceUntilItEnds) {
    NoTallies t;
    ObjectMeta meta = BothTiers(t);
    meta.TakeReplica(t, 0);  // evicted: LOCAL_DISK only
    ASSERT_TRUE(meta.Promotable());
    meta.promotion = PromotionState{1, Nanos(0), Nanos(0), false, std::nullopt};
    EXPECT_TRUE(meta.SourcePinned(*meta.CompleteDisk()));
    EXPECT_EQ(PinnedCount(meta), 1);
    // Its staging range is no replica yet and pins nothing.
    meta.promotion->staging = Replica{Tier::kMemory, ReplicaState::kProcessing, 1, 8192};
    EXPECT_EQ(PinnedCount(meta), 1);
    meta.promotion.reset();
    EXPECT_EQ(PinnedCount(meta), 0);
}

TEST(ObjectTest, ADroppedSourceLeavesNoPinBehindOnAnotherReplica) {
    NoTallies t;
    ObjectMeta meta = BothTiers(t);
    meta.AddDisk(t, /*node=*/2);  // a second LOCAL_DISK copy (a rejoining node's report)
    meta.TakeReplica(t, 0);       // MEMORY evicted
    meta.promotion = PromotionState{1, Nanos(0), Nanos(0), false, std::nullopt};
    ASSERT_EQ(PinnedCount(meta), 1);
    meta.TakeReplica(t, 0);  // the source's node went away: the task is cancelled next
    meta.promotion.reset();
    EXPECT_EQ(PinnedCount(meta), 0);
}

}  // namespace
}  // namespace mooncake
