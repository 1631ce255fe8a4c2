// The replica read rule (core/base/master_types.h, ReplicaReads): first success wins, else a
// corrupt copy's error, else the last error; where a reader asks for each tier's bytes; and
// which MEMORY copy a reader tries first (PreferNearMemoryCopy).
#include "core/base/master_types.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace mooncake {
namespace {

TEST(ReplicaReadsTest, NothingTriedAnswersWhatTheReaderSaysOfNone) {
    ReplicaReads reads(Status::NotFound("none"));
    EXPECT_TRUE(reads.Answer().Is(StatusCode::kNotFound));
}

TEST(ReplicaReadsTest, TheFirstReadingReplicaIsTheAnswer) {
    ReplicaReads reads(Status::NotFound("none"));
    EXPECT_FALSE(reads.Add(Status::Unavailable("node down")));
    EXPECT_TRUE(reads.Add(Status::Ok()));
    EXPECT_TRUE(reads.Answer().ok());
}

TEST(ReplicaReadsTest, ACorruptCopySaysMoreThanALaterError) {
    ReplicaReads reads(Status::NotFound("none"));
    EXPECT_FALSE(reads.Add(Status::Corruption("checksum")));
    EXPECT_FALSE(reads.Add(Status::Unavailable("node down")));
    reads.Skip(Status::Unavailable("node gone"));
    EXPECT_TRUE(reads.Answer().Is(StatusCode::kCorruption));
}

TEST(ReplicaReadsTest, WithoutCorruptionTheLastErrorOrSkipIsTheAnswer) {
    ReplicaReads reads(Status::NotFound("none"));
    EXPECT_FALSE(reads.Add(Status::Unavailable("node down")));
    reads.Skip(Status::Unavailable("node gone"));
    EXPECT_EQ(reads.Answer().message(), "node gone");
}

TEST(ReplicaReadsTest, OnlyAMemoryCopyIsReadAtAnOffset) {
    ReplicaDesc memory{Tier::kMemory, ReplicaState::kComplete, 1, 8192, 100, 0};
    ReplicaDesc disk{Tier::kLocalDisk, ReplicaState::kComplete, 1, 8192, 100, 0};
    EXPECT_EQ(memory.ReadOffset(), 8192u);
    EXPECT_EQ(disk.ReadOffset(), 0u);
}

// A replica list as the master hands it, with each replica's node as its "location".
struct Listed {
    std::vector<ReplicaDesc> replicas;
    std::vector<NodeId> nodes;
    void Add(Tier tier, NodeId node, ReplicaState state = ReplicaState::kComplete) {
        replicas.push_back({tier, state, node, node * 4096, 100, 0});
        nodes.push_back(node);
    }
    // The nodes in the order a reader near `near_nodes` tries them, and how often it asked.
    std::vector<NodeId> ReadOrder(std::vector<NodeId> near_nodes, int* asked = nullptr) {
        int count = 0;
        PreferNearMemoryCopy(replicas, nodes, [&](NodeId n) {
            ++count;
            return std::find(near_nodes.begin(), near_nodes.end(), n) != near_nodes.end();
        });
        for (size_t i = 0; i < nodes.size(); ++i) EXPECT_EQ(replicas[i].node, nodes[i]);
        if (asked != nullptr) *asked = count;
        return nodes;
    }
};

TEST(NearMemoryCopyTest, ANearCopyIsTriedBeforeTheOtherMemoryCopies) {
    Listed l;
    l.Add(Tier::kMemory, 1);
    l.Add(Tier::kMemory, 2);
    l.Add(Tier::kMemory, 3);
    l.Add(Tier::kLocalDisk, 1);
    // The copies between keep their order; the disk replica stays last.
    EXPECT_EQ(l.ReadOrder({3}), (std::vector<NodeId>{3, 1, 2, 1}));
    EXPECT_EQ(l.replicas[0].offset, 3u * 4096);  // each replica moved with its location
}

TEST(NearMemoryCopyTest, TheMastersOrderStandsWhenTheFirstCopyIsNearOrNoneIs) {
    Listed l;
    l.Add(Tier::kMemory, 1);
    l.Add(Tier::kMemory, 2);
    EXPECT_EQ(l.ReadOrder({1, 2}), (std::vector<NodeId>{1, 2}));
    EXPECT_EQ(l.ReadOrder({7}), (std::vector<NodeId>{1, 2}));
}

TEST(NearMemoryCopyTest, ANearDiskReplicaNeverGoesBeforeAMemoryCopy) {
    Listed l;
    l.Add(Tier::kMemory, 1);
    l.Add(Tier::kMemory, 2);
    l.Add(Tier::kLocalDisk, 3);
    EXPECT_EQ(l.ReadOrder({3}), (std::vector<NodeId>{1, 2, 3}));
}

TEST(NearMemoryCopyTest, OnlyCompleteCopiesCountAndOneCopyIsNotAsked) {
    Listed one;
    one.Add(Tier::kMemory, 1);
    one.Add(Tier::kLocalDisk, 2);
    int asked = -1;
    EXPECT_EQ(one.ReadOrder({2}, &asked), (std::vector<NodeId>{1, 2}));
    EXPECT_EQ(asked, 0);  // the common case (one copy) costs no lookup

    Listed processing;
    processing.Add(Tier::kMemory, 1, ReplicaState::kProcessing);
    processing.Add(Tier::kMemory, 2);
    processing.Add(Tier::kMemory, 3);
    // The first COMPLETE copy (node 2) gives way to the near one; the PROCESSING one stays.
    EXPECT_EQ(processing.ReadOrder({3}), (std::vector<NodeId>{1, 3, 2}));
}

}  // namespace
}  // namespace mooncake
