#include "daemon/ha/cluster_state.h"

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

}  // namespace mooncake::ha
