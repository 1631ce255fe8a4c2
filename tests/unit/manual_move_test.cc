// The manual-move rule (core/base/manual_move.h): where a key stands for promote, offload and evict,
// and what a waiter does with each answer: poll, ask again, or stop, and how it ended.
#include "core/base/manual_move.h"

#include <gtest/gtest.h>

namespace mooncake {
namespace {

using Next = MoveWatch::Next;

ObjectView Object(std::initializer_list<Tier> complete_tiers) {
    ObjectView o;
    o.key = "k";
    o.size = 1;
    for (Tier tier : complete_tiers) {
        o.replicas.push_back({tier, ReplicaState::kComplete, 1, 0, 1, 0});
    }
    return o;
}

TEST(ManualMoveRule, WaitStateFollowsTheAskedTierAndTheTaskInFlight) {
    ObjectView disk_only = Object({Tier::kLocalDisk});
    EXPECT_EQ(WaitStateOf(TierMove::kPromote, disk_only), WaitState::kStalled);
    EXPECT_EQ(WaitStateOf(TierMove::kOffload, disk_only), WaitState::kDone);
    EXPECT_EQ(WaitStateOf(TierMove::kEvict, disk_only), WaitState::kDone);
    disk_only.promotion_in_flight = true;
    EXPECT_EQ(WaitStateOf(TierMove::kPromote, disk_only), WaitState::kPending);

    ObjectView memory_only = Object({Tier::kMemory});
    EXPECT_EQ(WaitStateOf(TierMove::kPromote, memory_only), WaitState::kDone);
    EXPECT_EQ(WaitStateOf(TierMove::kOffload, memory_only), WaitState::kStalled);
    EXPECT_EQ(WaitStateOf(TierMove::kEvict, memory_only), WaitState::kStalled);
    memory_only.offload_in_flight = true;
    EXPECT_EQ(WaitStateOf(TierMove::kOffload, memory_only), WaitState::kPending);
    EXPECT_EQ(WaitStateOf(TierMove::kEvict, memory_only), WaitState::kPending);

    // A MEMORY replica still being written is not a copy: promote is not done.
    ObjectView staging = Object({Tier::kLocalDisk});
    staging.replicas.push_back({Tier::kMemory, ReplicaState::kProcessing, 1, 0, 1, 0});
    staging.promotion_in_flight = true;
    EXPECT_EQ(WaitStateOf(TierMove::kPromote, staging), WaitState::kPending);
    EXPECT_EQ(WaitStateOf(TierMove::kEvict, staging), WaitState::kDone);
}

TEST(ManualMoveRule, AwaitsMoveOnlyForQueuedInFlightAndBusy) {
    EXPECT_TRUE(AwaitsMove(Status::Ok(), ManualOutcome::kQueued));
    EXPECT_TRUE(AwaitsMove(Status::Ok(), ManualOutcome::kInFlight));
    EXPECT_TRUE(AwaitsMove(Status::Busy("queue full"), std::nullopt));
    EXPECT_FALSE(AwaitsMove(Status::Ok(), ManualOutcome::kDone));
    EXPECT_FALSE(AwaitsMove(Status::Ok(), ManualOutcome::kAlreadyThere));
    EXPECT_FALSE(AwaitsMove(Status::Ok(), std::nullopt));  // unset outcome: done
    EXPECT_FALSE(AwaitsMove(Status::NoSpace("DRAM full"), std::nullopt));
    EXPECT_FALSE(AwaitsMove(Status::NotFound("no key"), std::nullopt));
}

TEST(ManualMoveRule, AnswersThatNeedNoWaitFinishAtOnce) {
    MoveWatch done(TierMove::kEvict);
    EXPECT_EQ(done.OnIssued(Status::Ok(), ManualOutcome::kDone), Next::kFinished);
    EXPECT_EQ(done.end(), MoveEnd::kReached);
    EXPECT_EQ(done.outcome(), ManualOutcome::kDone);

    MoveWatch already(TierMove::kPromote);
    EXPECT_EQ(already.OnIssued(Status::Ok(), ManualOutcome::kAlreadyThere), Next::kFinished);
    EXPECT_EQ(already.end(), MoveEnd::kReached);
    EXPECT_EQ(already.outcome(), ManualOutcome::kAlreadyThere);

    MoveWatch refused(TierMove::kPromote);
    EXPECT_EQ(refused.OnIssued(Status::NoSpace("DRAM is full"), std::nullopt), Next::kFinished);
    EXPECT_EQ(refused.end(), MoveEnd::kRefused);
    EXPECT_TRUE(refused.refusal().Is(StatusCode::kNoSpace));
    EXPECT_EQ(refused.refusal().message(), "DRAM is full");
}

TEST(ManualMoveRule, AQueuedPromotionIsPolledUntilMemoryHoldsIt) {
    MoveWatch w(TierMove::kPromote);
    EXPECT_EQ(w.OnIssued(Status::Ok(), ManualOutcome::kQueued), Next::kPoll);
    ObjectView o = Object({Tier::kLocalDisk});
    o.promotion_in_flight = true;
    EXPECT_EQ(w.OnStat(&o), Next::kPoll);
    EXPECT_EQ(w.OnStat(&o), Next::kPoll);
    ObjectView landed = Object({Tier::kMemory, Tier::kLocalDisk});
    EXPECT_EQ(w.OnStat(&landed), Next::kFinished);
    EXPECT_EQ(w.end(), MoveEnd::kReached);
    EXPECT_EQ(w.outcome(), ManualOutcome::kDone);
    // A finished watch ignores later answers.
    EXPECT_EQ(w.OnStat(nullptr), Next::kFinished);
    EXPECT_EQ(w.end(), MoveEnd::kReached);
}

TEST(ManualMoveRule, StalledTwiceInARowEndsShortOnceDoesNot) {
    MoveWatch w(TierMove::kOffload);
    EXPECT_EQ(w.OnIssued(Status::Ok(), ManualOutcome::kInFlight), Next::kPoll);
    ObjectView stalled = Object({Tier::kMemory});
    ObjectView pending = stalled;
    pending.offload_in_flight = true;
    EXPECT_EQ(w.OnStat(&stalled), Next::kPoll);  // once: maybe between Stat fields
    EXPECT_EQ(w.OnStat(&pending), Next::kPoll);  // the count starts over
    EXPECT_EQ(w.OnStat(&stalled), Next::kPoll);
    EXPECT_EQ(w.OnStat(&stalled), Next::kFinished);
    EXPECT_EQ(w.end(), MoveEnd::kEndedShort);
}

TEST(ManualMoveRule, AnEvictThatFoundAnOffloadInFlightIsAskedAgainOnce) {
    MoveWatch w(TierMove::kEvict);
    EXPECT_EQ(w.OnIssued(Status::Ok(), ManualOutcome::kInFlight), Next::kPoll);
    ObjectView offloading = Object({Tier::kMemory});
    offloading.offload_in_flight = true;
    EXPECT_EQ(w.OnStat(&offloading), Next::kPoll);
    // The offload landed but MEMORY is still there: evict again.
    ObjectView both = Object({Tier::kMemory, Tier::kLocalDisk});
    EXPECT_EQ(w.OnStat(&both), Next::kIssue);
    // The second evict drops MEMORY at once: the move happened ("evicted", not "already").
    EXPECT_EQ(w.OnIssued(Status::Ok(), ManualOutcome::kDone), Next::kFinished);
    EXPECT_EQ(w.end(), MoveEnd::kReached);
    EXPECT_EQ(w.outcome(), ManualOutcome::kDone);

    // Only once: stalled again after the second ask ends short.
    MoveWatch twice(TierMove::kEvict);
    twice.OnIssued(Status::Ok(), ManualOutcome::kInFlight);
    EXPECT_EQ(twice.OnStat(&both), Next::kIssue);
    EXPECT_EQ(twice.OnIssued(Status::Ok(), ManualOutcome::kInFlight), Next::kPoll);
    EXPECT_EQ(twice.OnStat(&both), Next::kPoll);
    EXPECT_EQ(twice.OnStat(&both), Next::kFinished);
    EXPECT_EQ(twice.end(), MoveEnd::kEndedShort);
}

TEST(ManualMoveRule, AnAnswerOfAlreadyThereAfterWaitingMeansTheMoveHappened) {
    MoveWatch w(TierMove::kEvict);
    w.OnIssued(Status::Ok(), ManualOutcome::kInFlight);
    ObjectView both = Object({Tier::kMemory, Tier::kLocalDisk});
    ASSERT_EQ(w.OnStat(&both), Next::kIssue);
    EXPECT_EQ(w.OnIssued(Status::Ok(), ManualOutcome::kAlreadyThere), Next::kFinished);
    EXPECT_EQ(w.outcome(), ManualOutcome::kDone);
}

TEST(ManualMoveRule, AGoneKeyIsAnEvictDoneAndAPromoteOrOffloadRemoved) {
    MoveWatch evict(TierMove::kEvict);
    evict.OnIssued(Status::Ok(), ManualOutcome::kQueued);
    EXPECT_EQ(evict.OnStat(nullptr), Next::kFinished);
    EXPECT_EQ(evict.end(), MoveEnd::kReached);
    EXPECT_EQ(evict.outcome(), ManualOutcome::kDone);

    for (TierMove move : {TierMove::kPromote, TierMove::kOffload}) {
        MoveWatch w(move);
        w.OnIssued(Status::Ok(), ManualOutcome::kQueued);
        EXPECT_EQ(w.OnStat(nullptr), Next::kFinished) << TierMoveName(move);
        EXPECT_EQ(w.end(), MoveEnd::kRemoved) << TierMoveName(move);
    }
}

TEST(ManualMoveRule, BusyIsAskedAgainAndAtTheDeadlineEndsBusy) {
    MoveWatch w(TierMove::kPromote);
    EXPECT_EQ(w.OnIssued(Status::Busy("promotion queue is full"), std::nullopt), Next::kIssue);
    EXPECT_EQ(w.OnIssued(Status::Busy("promotion queue is full"), std::nullopt), Next::kIssue);
    w.OnDeadline();
    EXPECT_EQ(w.end(), MoveEnd::kBusy);
    EXPECT_EQ(w.refusal().message(), "promotion queue is full");

    // Room made: the next ask queues it, and it is polled like any other.
    MoveWatch later(TierMove::kPromote);
    later.OnIssued(Status::Busy("full"), std::nullopt);
    EXPECT_EQ(later.OnIssued(Status::Ok(), ManualOutcome::kQueued), Next::kPoll);
    EXPECT_TRUE(later.refusal().ok());
    // A refusal that is not busy ends it, with the master's reason.
    MoveWatch refused(TierMove::kOffload);
    refused.OnIssued(Status::Busy("full"), std::nullopt);
    EXPECT_EQ(refused.OnIssued(Status::HasLease("leased"), std::nullopt), Next::kFinished);
    EXPECT_EQ(refused.end(), MoveEnd::kRefused);
    EXPECT_TRUE(refused.refusal().Is(StatusCode::kHasLease));
}

TEST(ManualMoveRule, StillMovingAtTheDeadlineIsLate) {
    MoveWatch w(TierMove::kPromote);
    w.OnIssued(Status::Ok(), ManualOutcome::kQueued);
    ObjectView o = Object({Tier::kLocalDisk});
    o.promotion_in_flight = true;
    w.OnStat(&o);
    w.OnDeadline();
    EXPECT_TRUE(w.finished());
    EXPECT_EQ(w.end(), MoveEnd::kLate);
    // The deadline does not undo a finished watch.
    MoveWatch done(TierMove::kPromote);
    done.OnIssued(Status::Ok(), ManualOutcome::kAlreadyThere);
    done.OnDeadline();
    EXPECT_EQ(done.end(), MoveEnd::kReached);
}

TEST(ManualMoveRule, NamesForMessages) {
    EXPECT_EQ(TierMoveName(TierMove::kPromote), "promote");
    EXPECT_EQ(TierMoveName(TierMove::kOffload), "offload");
    EXPECT_EQ(TierMoveName(TierMove::kEvict), "evict");
    EXPECT_EQ(TierMoveTarget(TierMove::kPromote), "a COMPLETE MEMORY copy");
    EXPECT_EQ(TierMoveTarget(TierMove::kOffload), "a COMPLETE LOCAL_DISK copy");
    EXPECT_EQ(TierMoveTarget(TierMove::kEvict), "its MEMORY copy dropped");
    EXPECT_EQ(MoveEndName(MoveEnd::kEndedShort), "ended_short");
}

}  // namespace
}  // namespace mooncake
