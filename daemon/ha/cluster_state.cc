#include "daemon/ha/cluster_state.h"

#include <algorithm>
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

Status ClusterState::SaveTenants(std::string_view policy_text) {
    return etcd_.Put(keys_.tenants(), policy_text);
}

Result<std::optional<std::string>> ClusterState::LoadTenants() {
    auto kv = etcd_.Get(keys_.tenants());
    if (!kv.ok()) return kv.status();
    if (!kv->has_value()) return std::optional<std::string>();
    return std::optional<std::string>((*kv)->value);
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

Result<int64_t> ClusterState::LeaseFor(LeaseUse use, int64_t ttl_sec) {
    MutexLock lock(lease_mu_);
    LeaseSlot& slot = SlotOf(use);
    const auto now = std::chrono::steady_clock::now();
    if (slot.id != 0 && slot.ttl == ttl_sec && now < slot.until) return slot.id;
    const int64_t stretch = std::clamp<int64_t>(ttl_sec / 10, 1, 3600);
    auto granted = etcd_.GrantLease(ttl_sec + stretch);
    if (!granted.ok()) return granted.status();
    slot.id = *granted;
    slot.ttl = ttl_sec;
    slot.until = now + std::chrono::seconds(stretch);
    return slot.id;
}

void ClusterState::Forget(LeaseUse use, int64_t lease) {
    MutexLock lock(lease_mu_);
    LeaseSlot& slot = SlotOf(use);
    if (slot.id == lease) slot.id = 0;
}

Status ClusterState::SaveRemovals(
    const std::vector<std::pair<std::string, uint64_t>>& removals) {
    if (removals.empty()) return Status::Ok();
    constexpr size_t kOpsPerTxn = 100;  // etcd's --max-txn-ops is 128 by default
    Status st;
    // A second try on a fresh lease, as SaveTombstones.
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto lease = LeaseFor(LeaseUse::kRemovals, kRemovalTtlSec);
        if (!lease.ok()) return lease.status();
        st = Status::Ok();
        for (size_t begin = 0; begin < removals.size() && st.ok(); begin += kOpsPerTxn) {
            std::vector<EtcdPut> puts;
            for (size_t i = begin; i < std::min(removals.size(), begin + kOpsPerTxn); ++i) {
                const auto& [key, generation] = removals[i];
                puts.push_back({keys_.removals() + Hex(key) + "/" + std::to_string(generation),
                                std::to_string(generation), *lease});
            }
            auto applied = etcd_.Txn({}, puts);
            st = applied.ok() ? Status::Ok() : applied.status();
        }
        if (st.ok()) return st;
        Forget(LeaseUse::kRemovals, *lease);
    }
    return st;
}

Status ClusterState::SaveTombstones(
    const std::vector<std::pair<std::string, uint64_t>>& tombstones, int64_t ttl_sec) {
    if (tombstones.empty()) return Status::Ok();
    Status st;
    // A second try on a fresh lease: the one in use may be gone (etcd restored from a
    // snapshot without it), and a tombstone lost here is a removed key that may come back.
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto lease = TombstoneLease(ttl_sec);
        if (!lease.ok()) return lease.status();
        st = Status::Ok();
        for (const auto& [key, generation] : tombstones) {
            st = etcd_.Put(keys_.tombstones() + Hex(key), std::to_string(generation), *lease);
            if (!st.ok()) break;
        }
        if (st.ok()) return st;
        Forget(LeaseUse::kTombstones, *lease);
    }
    return st;
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
    auto removals = etcd_.List(keys_.removals());
    if (!removals.ok()) return removals.status();
    for (const EtcdKv& kv : *removals) {
        std::string_view rest = std::string_view(kv.key).substr(keys_.removals().size());
        auto key = Unhex(rest.substr(0, rest.find('/')));
        if (!key) continue;
        out.emplace_back(std::move(*key), std::strtoull(kv.value.c_str(), nullptr, 10));
    }
    return out;
}

}  // namespace mooncake::ha
