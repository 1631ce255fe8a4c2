#include "core/base/manual_move.h"

namespace mooncake {

std::string_view TierMoveName(TierMove move) {
    switch (move) {
        case TierMove::kPromote: return "promote";
        case TierMove::kOffload: return "offload";
        case TierMove::kEvict: return "evict";
    }
    return "?";
}

std::string_view TierMoveTarget(TierMove move) {
    switch (move) {
        case TierMove::kPromote: return "a COMPLETE MEMORY copy";
        case TierMove::kOffload: return "a COMPLETE LOCAL_DISK copy";
        case TierMove::kEvict: return "its MEMORY copy dropped";
    }
    return "?";
}

WaitState WaitStateOf(TierMove move, const ObjectView& o) {
    switch (move) {
        case TierMove::kPromote:
            if (o.HasComplete(Tier::kMemory)) return WaitState::kDone;
            return o.promotion_in_flight ? WaitState::kPending : WaitState::kStalled;
        case TierMove::kOffload:
            if (o.HasComplete(Tier::kLocalDisk)) return WaitState::kDone;
            return o.offload_in_flight ? WaitState::kPending : WaitState::kStalled;
        case TierMove::kEvict:
            // Evict drops MEMORY at once, or after the offload it queued (or found) ends.
            if (!o.HasComplete(Tier::kMemory)) return WaitState::kDone;
            return o.offload_in_flight ? WaitState::kPending : WaitState::kStalled;
    }
    return WaitState::kStalled;
}

bool AwaitsMove(const Status& status, std::optional<ManualOutcome> outcome) {
    if (status.Is(StatusCode::kBusy)) return true;
    if (!status.ok()) return false;
    ManualOutcome o = outcome.value_or(ManualOutcome::kDone);
    return o == ManualOutcome::kQueued || o == ManualOutcome::kInFlight;
}

std::string_view MoveEndName(MoveEnd end) {
    switch (end) {
        case MoveEnd::kReached: return "reached";
        case MoveEnd::kRefused: return "refused";
        case MoveEnd::kBusy: return "busy";
        case MoveEnd::kRemoved: return "removed";
        case MoveEnd::kEndedShort: return "ended_short";
        case MoveEnd::kLate: return "late";
    }
    return "unknown";
}

MoveWatch::Next MoveWatch::Finish(MoveEnd end) {
    end_ = end;
    next_ = Next::kFinished;
    return next_;
}

MoveWatch::Next MoveWatch::OnIssued(const Status& status, std::optional<ManualOutcome> outcome) {
    if (finished()) return next_;
    if (!status.ok()) {
        refusal_ = status;
        // A full queue (or byte budget) makes room as tasks end: ask again.
        if (status.Is(StatusCode::kBusy)) return next_ = Next::kIssue;
        return Finish(MoveEnd::kRefused);
    }
    refusal_ = Status::Ok();
    switch (outcome.value_or(ManualOutcome::kDone)) {
        case ManualOutcome::kQueued:
        case ManualOutcome::kInFlight:
            waited_ = true;
            return next_ = Next::kPoll;
        case ManualOutcome::kDone:
            outcome_ = ManualOutcome::kDone;
            return Finish(MoveEnd::kReached);
        case ManualOutcome::kAlreadyThere:
            // Asked again while waiting (an evict after its offload): the move did happen.
            outcome_ = waited_ ? ManualOutcome::kDone : ManualOutcome::kAlreadyThere;
            return Finish(MoveEnd::kReached);
    }
    return Finish(MoveEnd::kRefused);
}

MoveWatch::Next MoveWatch::OnStat(const ObjectView* object) {
    if (finished()) return next_;
    if (object == nullptr) {
        if (move_ == TierMove::kEvict) {
            outcome_ = ManualOutcome::kDone;  // gone: no MEMORY copy left
            return Finish(MoveEnd::kReached);
        }
        return Finish(MoveEnd::kRemoved);
    }
    switch (WaitStateOf(move_, *object)) {
        case WaitState::kDone:
            outcome_ = ManualOutcome::kDone;
            return Finish(MoveEnd::kReached);
        case WaitState::kPending:
            stalled_ = 0;
            return next_ = Next::kPoll;
        case WaitState::kStalled:
            // An evict that found an offload in flight answered kInFlight and did nothing;
            // that offload has ended now, so the evict can drop MEMORY.
            if (move_ == TierMove::kEvict && !reissued_) {
                reissued_ = true;
                return next_ = Next::kIssue;
            }
            // Seen twice in a row: the task ended without the asked state. Once may be a
            // task between its Stat fields (committing, or not yet created).
            if (++stalled_ >= 2) return Finish(MoveEnd::kEndedShort);
            return next_ = Next::kPoll;
    }
    return next_;
}

void MoveWatch::OnDeadline() {
    if (finished()) return;
    Finish(next_ == Next::kIssue && refusal_.Is(StatusCode::kBusy) ? MoveEnd::kBusy
                                                                    : MoveEnd::kLate);
}

}  // namespace mooncake
