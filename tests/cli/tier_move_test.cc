// What `promote|offload|evict --wait` prints for each way a key's wait can end
// (Client::WaitForMove's MoveEnd): the words and messages scripts and people read.
#include "cli/tier_move.h"

#include <gtest/gtest.h>

namespace mooncake::cli {
namespace {

MoveKeyResult Ended(MoveEnd end, ManualOutcome outcome = ManualOutcome::kDone,
                    Status status = Status::Ok()) {
    return {"k", end, outcome, std::move(status)};
}

TEST(TierMoveWait, ReachedKeysSayWhatHappened) {
    KeyResult moved = DescribeWaited(TierMove::kPromote, Ended(MoveEnd::kReached), 30);
    EXPECT_TRUE(moved.status.ok());
    EXPECT_EQ(moved.outcome, "promoted");
    EXPECT_EQ(moved.text, "promoted to MEMORY");
    KeyResult already = DescribeWaited(
        TierMove::kOffload, Ended(MoveEnd::kReached, ManualOutcome::kAlreadyThere), 30);
    EXPECT_EQ(already.outcome, "already");
    EXPECT_EQ(already.text, "already on LOCAL_DISK");
    EXPECT_EQ(DescribeWaited(TierMove::kEvict, Ended(MoveEnd::kReached), 30).text,
              "MEMORY copy dropped");
    // Reaching the state after waiting reads the same as a move done at once.
    EXPECT_EQ(DescribeCompleted(TierMove::kOffload).outcome,
              DescribeOutcome(TierMove::kOffload, ManualOutcome::kDone).outcome);
}

TEST(TierMoveWait, FailuresNameTheKeyTheTargetAndTheFlag) {
    KeyResult late = DescribeWaited(TierMove::kPromote, Ended(MoveEnd::kLate), 0.5);
    EXPECT_TRUE(late.status.Is(StatusCode::kTimeout));
    EXPECT_EQ(late.status.message(), "'k' still lacks a COMPLETE MEMORY copy after 0.5s (--timeout)");
    EXPECT_TRUE(late.outcome.empty());

    KeyResult shortened = DescribeWaited(TierMove::kOffload, Ended(MoveEnd::kEndedShort), 30);
    EXPECT_TRUE(shortened.status.Is(StatusCode::kIoError));
    EXPECT_EQ(shortened.status.message(),
              "offload of 'k' ended without a COMPLETE LOCAL_DISK copy (the task failed, "
              "expired or was cancelled; see mooncakectl metrics)");

    KeyResult busy = DescribeWaited(
        TierMove::kPromote,
        Ended(MoveEnd::kBusy, ManualOutcome::kDone, Status::Busy("promotion queue is full")), 2);
    EXPECT_TRUE(busy.status.Is(StatusCode::kBusy));
    EXPECT_EQ(busy.status.message(), "promotion queue is full (still after 2s of --wait)");

    KeyResult refused = DescribeWaited(
        TierMove::kPromote,
        Ended(MoveEnd::kRefused, ManualOutcome::kDone, Status::NoSpace("DRAM is full")), 30);
    EXPECT_TRUE(refused.status.Is(StatusCode::kNoSpace));
    EXPECT_EQ(refused.status.message(), "DRAM is full");

    KeyResult removed = DescribeWaited(
        TierMove::kPromote,
        Ended(MoveEnd::kRemoved, ManualOutcome::kDone,
              Status::NotFound("key 'k' was removed while waiting")),
        30);
    EXPECT_TRUE(removed.status.Is(StatusCode::kNotFound));
    EXPECT_EQ(removed.status.message(), "key 'k' was removed while waiting");
}

}  // namespace
}  // namespace mooncake::cli
