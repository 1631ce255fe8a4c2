#include "etcd/cluster_keys.h"

#include <chrono>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace mooncake::ha {

std::string EncodeMasterRecord(const MasterRecord& record) {
    nlohmann::json j = {
        {"address", record.address}, {"epoch", record.epoch}, {"since", record.since_ms}};
    return j.dump();
}

std::optional<MasterRecord> DecodeMasterRecord(std::string_view text) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("address") ||
        !j["address"].is_string()) {
        return std::nullopt;
    }
    MasterRecord r;
    r.address = j["address"].get<std::string>();
    if (j.contains("epoch") && j["epoch"].is_number_unsigned()) r.epoch = j["epoch"].get<uint64_t>();
    if (j.contains("since") && j["since"].is_number()) r.since_ms = j["since"].get<int64_t>();
    return r;
}

std::string ClusterIdFor(std::string_view flag) {
    if (!flag.empty()) return std::string(flag);
    const char* env = std::getenv("MOONCAKE_CLUSTER_ID");
    if (env != nullptr && *env != '\0') return env;
    return std::string(kDefaultClusterId);
}

int64_t WallClockMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace mooncake::ha
