#include "daemon/ha/cluster_state.h"

#include <optional>

#include "spdlog/spdlog.h"

namespace mooncake::ha {

Result<size_t> ClusterState::LoadKnobs(Config& config) {
    auto stored = etcd_.List(keys_.knobs());
    if (!stored.ok()) return stored.status();
    size_t applied = 0;
    for (const EtcdKv& kv : *stored) {
        std::string name = kv.key.substr(keys_.knobs().size());
        Status st = config.Set(name, kv.value, SetMode::kRuntime);
        if (!st.ok()) {
            spdlog::warn("ha: knob {} = '{}' kept in etcd is not applied: {}", name, kv.value,
                         st.message());
            continue;
        }
        ++applied;
    }
    return applied;
}

Status ClusterState::SaveKnobs(
    const std::vector<std::pair<std::string, std::string>>& assignments) {
    for (const auto& [name, value] : assignments) {
        MC_RETURN_IF_ERROR(etcd_.Put(keys_.knobs() + name, value));
    }
    return Status::Ok();
}

Status ClusterState::SaveNodes(const std::set<std::string>& names) {
    std::string text;
    for (const std::string& n : names) text += n + "\n";
    return etcd_.Put(keys_.nodes(), text);
}

Result<std::set<std::string>> ClusterState::LoadNodes() {
    auto kv = etcd_.Get(keys_.nodes());
    if (!kv.ok()) return kv.status();
    std::set<std::string> out;
    if (!kv->has_value()) return out;
    const std::string& text = (*kv)->value;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        if (end > start) out.insert(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

namespace {

std::string Hex(std::string_view bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::optional<std::string> Unhex(std::string_view hex) {
    if (hex.size() % 2 != 0) return std::nullopt;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    std::string out;
    for (size_t i = 0; i < hex.size(); i += 2) {
        int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
    }
    return out;
}

}  // namespace

Status ClusterState::SaveTombstones(
    const std::vector<std::pair<std::string, uint64_t>>& tombstones) {
    for (const auto& [key, generation] : tombstones) {
        MC_RETURN_IF_ERROR(etcd_.Put(keys_.tombstones() + Hex(key), std::to_string(generation)));
    }
    return Status::Ok();
}

Result<std::vector<std::pair<std::string, uint64_t>>> ClusterState::LoadTombstones() {
    auto stored = etcd_.List(keys_.tombstones());
    if (!stored.ok()) return stored.status();
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const EtcdKv& kv : *stored) {
        auto key = Unhex(std::string_view(kv.key).substr(keys_.tombstones().size()));
        if (!key) continue;
        out.emplace_back(std::move(*key), std::strtoull(kv.value.c_str(), nullptr, 10));
    }
    return out;
}

}  // namespace mooncake::ha
