// Manual tier moves (promote, offload, evict) as a caller waits for them: the one rule for
// "where does this key stand for move M", when a move is done, when to issue it again and
// when to give up. Pure: it reads ObjectView (a Stat, inspection only) and the ManualOutcome
// the master answered, and does no I/O. Client::WaitForMove (thrift/client.h) runs it against
// a master; mooncakectl's `promote|offload|evict --wait` prints what it decided.
//
// One key's watch (MoveWatch), fed each answer in turn:
//
//   issued:  ok, kDone or kAlreadyThere ........ finished, kReached
//            ok, kQueued or kInFlight .......... poll (Stat)
//            kBusy (a queue is full for now) ... issue again next round
//            any other refusal ................. finished, kRefused (the master's reason)
//   Stat:    has the asked state ............... finished, kReached (outcome kDone)
//            a task for it still in flight ..... poll again
//            neither ("stalled") ............... evict, first time: issue again (it found an
//                                                offload in flight, which has ended now);
//                                                otherwise twice in a row: finished,
//                                                kEndedShort (the task failed, expired or was
//                                                cancelled); once: poll again (a task may be
//                                                between its Stat fields)
//            key gone (NotFound) ............... evict: finished, kReached (no MEMORY copy
//                                                left); otherwise finished, kRemoved
//   deadline, not finished: issuing (busy) ..... kBusy; polling ..... kLate
#pragma once

#include <optional>
#include <string_view>

#include "core/base/master_types.h"
#include "core/base/status.h"

namespace mooncake {

enum class TierMove { kPromote, kOffload, kEvict };

// "promote", "offload", "evict" (the CLI command of the move).
std::string_view TierMoveName(TierMove move);
// The state the move asks for, for messages: "a COMPLETE MEMORY copy", ...
std::string_view TierMoveTarget(TierMove move);

// Where a key stands for a move, from its Stat.
enum class WaitState {
    kDone,     // it has the asked state
    kPending,  // not yet; the task that gets it there is in flight
    kStalled,  // not, and no task for it is in flight
};
WaitState WaitStateOf(TierMove move, const ObjectView& object);

// True when a key's answer to the move leaves something to wait for: queued, in flight, or
// refused as busy (asked again).
bool AwaitsMove(const Status& status, std::optional<ManualOutcome> outcome);

// How a key's watch ended.
enum class MoveEnd {
    kReached,     // it has the asked state (outcome(): kDone, or kAlreadyThere if it had it)
    kRefused,     // the master refused the move (refusal() says why)
    kBusy,        // still refused as busy at the deadline (refusal(): the last answer)
    kRemoved,     // the key was removed while waiting (promote, offload)
    kEndedShort,  // the task ended (failed, expired, cancelled) without the asked state
    kLate,        // still moving at the deadline (the move may still complete)
};
std::string_view MoveEndName(MoveEnd end);  // "reached", "refused", ...

// One key's progress through a manual move. Starts wanting an issue of the move.
class MoveWatch {
public:
    enum class Next { kIssue, kPoll, kFinished };

    explicit MoveWatch(TierMove move) : move_(move) {}

    // The master's per-key answer to an issue of the move (outcome unset means kDone).
    Next OnIssued(const Status& status, std::optional<ManualOutcome> outcome);
    // A Stat of the key: its object, or nullptr when the key does not exist.
    Next OnStat(const ObjectView* object);
    // The deadline passed before the watch finished.
    void OnDeadline();

    Next next() const { return next_; }
    bool finished() const { return next_ == Next::kFinished; }
    MoveEnd end() const { return end_; }
    // What to report when kReached: kDone if the move happened (at once or while waiting),
    // kAlreadyThere if the key had the asked state before it was asked.
    ManualOutcome outcome() const { return outcome_; }
    const Status& refusal() const { return refusal_; }

private:
    Next Finish(MoveEnd end);

    TierMove move_;
    Next next_ = Next::kIssue;
    MoveEnd end_ = MoveEnd::kLate;
    ManualOutcome outcome_ = ManualOutcome::kDone;
    Status refusal_;
    bool waited_ = false;    // seen queued or in flight: reaching the state now is kDone
    bool reissued_ = false;  // evict issued again after a stall (at most once)
    int stalled_ = 0;        // consecutive stalled Stats
};

}  // namespace mooncake
