#include "fuse/render.h"

#include <algorithm>
#include <cerrno>

#include "fuse/name_codec.h"

namespace mooncake::tierfs {
namespace {

// Replica indexes in display order: MEMORY first, then the master's order.
std::vector<size_t> DisplayOrder(const ObjectView& object) {
    std::vector<size_t> order(object.replicas.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return object.replicas[a].tier < object.replicas[b].tier;
    });
    return order;
}

std::string NodeText(const ObjectInfo& info, size_t i) {
    if (i < info.locations.size() && !info.locations[i].node_name.empty()) {
        return info.locations[i].node_name;
    }
    return "node#" + std::to_string(info.object.replicas[i].node);
}

const char* BoolText(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string TiersText(const ObjectView& object) {
    std::string out;
    for (Tier tier : object.CompleteTiers()) {
        if (!out.empty()) out.push_back(',');
        out.append(TierName(tier));
    }
    return out;
}

std::string PromotionText(const ObjectView& o, bool with_age) {
    if (!o.last_promotion) return "none";
    const PromotionDecision& d = *o.last_promotion;
    std::string out = std::string(PromotionOutcomeName(d.outcome)) +
                      " reads=" + std::to_string(d.reads) +
                      " threshold=" + std::to_string(d.threshold);
    if (with_age) {
        // The client library reads `at` as minus the decision's age.
        auto age = std::chrono::duration_cast<std::chrono::seconds>(std::max(-d.at, Nanos(0)));
        out += " age_s=" + std::to_string(age.count());
    }
    return out;
}

std::string Describe(const ObjectInfo& info) {
    const ObjectView& o = info.object;
    std::string out;
    out.append("key: ").append(name_codec::EscapeKey(o.key)).append("\n");
    out.append("size: ").append(std::to_string(o.size)).append("\n");
    out.append("tiers: ").append(TiersText(o)).append("\n");
    out.append("generation: ").append(std::to_string(o.generation)).append("\n");
    out.append("sketch_estimate: ").append(std::to_string(o.sketch_estimate)).append("\n");
    out.append("promotion_in_flight: ").append(BoolText(o.promotion_in_flight)).append("\n");
    out.append("offload_in_flight: ").append(BoolText(o.offload_in_flight)).append("\n");
    out.append("last_promotion: ").append(PromotionText(o, /*with_age=*/false)).append("\n");
    out.append("replicas:\n");
    for (size_t i : DisplayOrder(o)) {
        const ReplicaDesc& r = o.replicas[i];
        out.append("  ")
            .append(TierName(r.tier))
            .append(" ")
            .append(ReplicaStateName(r.state))
            .append(" node=")
            .append(NodeText(info, i))
            .append("\n");
    }
    return out;
}

const std::vector<std::string>& KeyXattrNames() {
    static const std::vector<std::string> kNames = {
        "user.mooncake.key",
        "user.mooncake.tiers",
        "user.mooncake.size",
        "user.mooncake.replicas",
        "user.mooncake.generation",
        "user.mooncake.sketch_estimate",
        "user.mooncake.promotion_in_flight",
        "user.mooncake.offload_in_flight",
        "user.mooncake.promotion",
    };
    return kNames;
}

std::vector<std::pair<std::string, std::string>> KeyXattrs(const ObjectInfo& info) {
    const ObjectView& o = info.object;
    std::string replicas;
    for (size_t i : DisplayOrder(o)) {
        const ReplicaDesc& r = o.replicas[i];
        if (!replicas.empty()) replicas.push_back(',');
        replicas.append(TierName(r.tier))
            .append(":")
            .append(ReplicaStateName(r.state))
            .append("@")
            .append(NodeText(info, i));
    }
    const auto& names = KeyXattrNames();
    return {
        {names[0], o.key},
        {names[1], TiersText(o)},
        {names[2], std::to_string(o.size)},
        {names[3], replicas},
        {names[4], std::to_string(o.generation)},
        {names[5], std::to_string(o.sketch_estimate)},
        {names[6], BoolText(o.promotion_in_flight)},
        {names[7], BoolText(o.offload_in_flight)},
        {names[8], PromotionText(o, /*with_age=*/true)},
    };
}

int ErrnoOf(const Status& status) {
    switch (status.code()) {
        case StatusCode::kOk:
            return 0;
        case StatusCode::kNotFound:
            return ENOENT;
        case StatusCode::kInvalidArgument:
            return EINVAL;
        case StatusCode::kUnavailable:
            return ENOTCONN;
        case StatusCode::kIllegalClient:
            return EACCES;
        case StatusCode::kBusy:
            return EAGAIN;
        case StatusCode::kNoSpace:
            return ENOSPC;
        default:
            return EIO;
    }
}

}  // namespace mooncake::tierfs
