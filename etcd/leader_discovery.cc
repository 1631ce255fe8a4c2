#include "etcd/leader_discovery.h"

#include <algorithm>
#include <thread>

namespace mooncake::ha {

bool IsEtcdMaster(std::string_view master) { return master.starts_with(kEtcdScheme); }

Result<std::unique_ptr<LeaderDiscovery>> LeaderDiscovery::Create(std::string_view master,
                                                                 std::string_view cluster_id) {
    if (!IsEtcdMaster(master)) {
        return Status::InvalidArgument("'" + std::string(master) + "' is not etcd://HOST:PORT");
    }
    master.remove_prefix(kEtcdScheme.size());
    while (!master.empty() && master.back() == '/') master.remove_suffix(1);
    auto etcd = EtcdClient::Create(master, std::chrono::milliseconds(1000));
    if (!etcd.ok()) return etcd.status();
    return std::unique_ptr<LeaderDiscovery>(
        new LeaderDiscovery(std::move(*etcd), ClusterIdFor(cluster_id)));
}

Result<std::string> LeaderDiscovery::Leader(std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    Status last;
    while (true) {
        auto kv = etcd_->Get(keys_.leader());
        if (kv.ok() && kv->has_value()) {
            auto rec = DecodeMasterRecord((*kv)->value);
            if (rec) return rec->address;
            last = Status::Internal("the leader key of cluster '" + cluster_ + "' is unreadable");
        } else if (kv.ok()) {
            last = Status::Unavailable("no master leads cluster '" + cluster_ + "' (etcd " +
                                       etcd_->endpoints_text() + ")");
        } else {
            last = kv.status();
        }
        if (std::chrono::steady_clock::now() >= deadline) return last;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

Result<std::vector<MasterListing>> LeaderDiscovery::Masters() {
    auto leader_kv = etcd_->Get(keys_.leader());
    if (!leader_kv.ok()) return leader_kv.status();
    auto registered = etcd_->List(keys_.masters());
    if (!registered.ok()) return registered.status();
    auto epoch_kv = etcd_->Get(keys_.epoch());
    if (!epoch_kv.ok()) return epoch_kv.status();
    uint64_t epoch = epoch_kv->has_value()
                         ? std::strtoull((*epoch_kv)->value.c_str(), nullptr, 10)
                         : 0;
    std::vector<MasterListing> out;
    std::optional<MasterRecord> leader;
    if (leader_kv->has_value()) leader = DecodeMasterRecord((*leader_kv)->value);
    if (leader) out.push_back({leader->address, true, leader->epoch, leader->since_ms});
    for (const EtcdKv& kv : *registered) {
        auto rec = DecodeMasterRecord(kv.value);
        if (!rec || (leader && rec->address == leader->address)) continue;
        out.push_back({rec->address, false, epoch, rec->since_ms});
    }
    std::sort(out.begin() + (leader ? 1 : 0), out.end(),
              [](const MasterListing& a, const MasterListing& b) { return a.address < b.address; });
    return out;
}

}  // namespace mooncake::ha
