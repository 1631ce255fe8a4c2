// The replica read rule (core/base/master_types.h, ReplicaReads): first success wins, else a
// corrupt copy's error, else the last error; and where a reader asks for each tier's bytes.
#include "core/base/master_types.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mooncake
