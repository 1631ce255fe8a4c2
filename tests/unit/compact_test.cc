// Issue 21: the compact per-object containers (core/base/compact.h), the intrusive eviction list
// (core/master/eviction_list.h) and the size of ObjectMeta they add up to.
#include <gtest/gtest.h>

#include <vector>

#include "core/base/compact.h"
#include "core/master/eviction_list.h"
#include "core/master/object.h"

namespace mooncake {
namespace {

// The budget bench/core/memory_bench.cc measures depends on these: a growth here shows up
// as bytes per object at 1 M objects.
TEST(CompactTest, ObjectMetaStaysSmall) {
    EXPECT_EQ(sizeof(Replica), 24u);
    EXPECT_EQ(sizeof(Boxed<PromotionState>), sizeof(void*));
    EXPECT_EQ(sizeof(SmallVector<Replica, 2>), 2 * sizeof(Replica) + 8);
    EXPECT_LE(sizeof(ObjectMeta), 168u);  // the admission count sits in the hook's padding
}

TEST(CompactTest, BoxedActsLikeOptional) {
    Boxed<OffloadState> b;
    EXPECT_FALSE(b);
    EXPECT_FALSE(b.has_value());
    b = OffloadState{7, Nanos(1), Nanos(2), false, true, false};
    ASSERT_TRUE(b);
    EXPECT_EQ(b->node, 7u);
    EXPECT_TRUE((*b).evict_after);
    Boxed<OffloadState> copy = b;  // deep copy
    copy->node = 8;
    EXPECT_EQ(b->node, 7u);
    b = OffloadState{9, Nanos(0), Nanos(0), false, false, false};  // reassign in place
    EXPECT_EQ(b->node, 9u);
    Boxed<OffloadState> moved = std::move(b);
    EXPECT_EQ(moved->node, 9u);
    moved.reset();
    EXPECT_FALSE(moved.has_value());
    moved.emplace().node = 3;
    EXPECT_EQ(moved->node, 3u);
}

Replica R(NodeId node, uint64_t offset) {
    return Replica(Tier::kMemory, ReplicaState::kComplete, node, offset);
}

TEST(CompactTest, SmallVectorKeepsOrderInlineAndSpilled) {
    SmallVector<Replica, 2> v;
    EXPECT_TRUE(v.empty());
    v.push_back(R(1, 10));
    v.push_back(R(2, 20));
    EXPECT_FALSE(v.spilled());
    v.insert_front(R(0, 0));  // a third: spills, order kept
    EXPECT_TRUE(v.spilled());
    ASSERT_EQ(v.size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(v[i].node, i);
    SmallVector<Replica, 2> copy = v;
    v.erase(1);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].node, 0u);
    EXPECT_EQ(v[1].node, 2u);
    EXPECT_EQ(copy.size(), 3u);  // the copy is its own
    EXPECT_EQ(copy[1].node, 1u);
    v.insert_front(v[1]);  // an element of its own
    EXPECT_EQ(v[0].node, 2u);
    EXPECT_EQ(v[1].node, 0u);
    SmallVector<Replica, 2> moved = std::move(copy);
    EXPECT_EQ(moved.size(), 3u);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
    std::vector<NodeId> seen;
    for (const Replica& r : moved) seen.push_back(r.node);
    EXPECT_EQ(seen, (std::vector<NodeId>{0, 1, 2}));
    while (!moved.empty()) moved.erase(moved.size() - 1);
    SmallVector<Replica, 2> small;
    small.push_back(R(5, 50));
    SmallVector<Replica, 2> small_moved = std::move(small);
    EXPECT_FALSE(small_moved.spilled());
    EXPECT_EQ(small_moved[0].offset, 50u);
}

std::vector<ObjectMeta*> LeastRecentFirst(const EvictionList& list) {
    std::vector<ObjectMeta*> out;
    for (auto it = list.rbegin(); it != list.rend(); ++it) out.push_back(*it);
    return out;
}

TEST(CompactTest, EvictionListLinksThroughTheHooks) {
    std::vector<ObjectMeta> metas(4);
    EvictionList list;
    EXPECT_TRUE(list.empty());
    for (ObjectMeta& m : metas) list.push_front(&m);
    EXPECT_EQ(list.size(), 4u);
    EXPECT_EQ(list.front(), &metas[3]);
    EXPECT_EQ(list.back(), &metas[0]);
    EXPECT_EQ(LeastRecentFirst(list),
              (std::vector<ObjectMeta*>{&metas[0], &metas[1], &metas[2], &metas[3]}));
    list.erase(&metas[1]);  // middle
    list.erase(&metas[0]);  // tail
    list.push_front(&metas[0]);
    list.erase(&metas[3]);  // was the head
    EXPECT_EQ(LeastRecentFirst(list), (std::vector<ObjectMeta*>{&metas[2], &metas[0]}));
    list.erase(&metas[2]);
    list.erase(&metas[0]);
    EXPECT_TRUE(list.empty());
    EXPECT_EQ(list.back(), nullptr);
    EXPECT_EQ(metas[0].eviction.prev, nullptr);
    EXPECT_EQ(metas[0].eviction.next, nullptr);
}

}  // namespace
}  // namespace mooncake
