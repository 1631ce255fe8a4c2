#include "core/base/master_types.h"

#include <algorithm>

namespace mooncake {

std::string_view SegmentStateName(SegmentState state) {
    switch (state) {
        case SegmentState::kOk: return "OK";
        case SegmentState::kDraining: return "DRAINING";
        case SegmentState::kDrained: return "DRAINED";
    }
    return "UNDEFINED";
}

bool ObjectView::HasComplete(Tier tier) const {
    return std::any_of(replicas.begin(), replicas.end(), [&](const ReplicaDesc& r) {
        return r.tier == tier && r.state == ReplicaState::kComplete;
    });
}

std::vector<Tier> ObjectView::CompleteTiers() const {
    std::vector<Tier> tiers;
    for (Tier tier : {Tier::kMemory, Tier::kLocalDisk}) {
        if (HasComplete(tier)) tiers.push_back(tier);
    }
    return tiers;
}

std::string_view ManualOutcomeName(ManualOutcome outcome) {
    switch (outcome) {
        case ManualOutcome::kQueued: return "queued";
        case ManualOutcome::kDone: return "done";
        case ManualOutcome::kAlreadyThere: return "already";
        case ManualOutcome::kInFlight: return "in_flight";
    }
    return "unknown";
}

}  // namespace mooncake
