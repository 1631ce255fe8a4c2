// ClusterState: the small durable state of an HA cluster that no node can give back, kept in
// etcd so a new leader starts from it: knob values set with `tune set` (knobs/<name>). The
// epoch lives there too (LeaderElection). Object metadata does not: the live nodes report it
// when they register with the new leader (core/master/store_rejoin.cc); nor do promotion and offload
// tasks: reads and evictions trigger them again.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/knobs.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "etcd/cluster_keys.h"
#include "etcd/etcd_client.h"

namespace mooncake::ha {

class ClusterState {
public:
    ClusterState(EtcdClient& etcd, std::string_view cluster_id) : etcd_(etcd), keys_(cluster_id) {}

    // Applies every knob stored for the cluster to `config` (a value this build no longer
    // accepts is skipped with a warning). Returns how many were applied.
    Result<size_t> LoadKnobs(Config& config);
    // Stores knobs a TuneSet just applied.
    Status SaveKnobs(const std::vector<std::pair<std::string, std::string>>& assignments);

    // The names of the nodes live on the leader (kept up to date by it), so the next leader
    // knows whom to wait for before it answers clients: until they registered again, a key
    // they hold would read as NotFound.
    Status SaveNodes(const std::set<std::string>& names);
    Result<std::set<std::string>> LoadNodes();

    // Tombstones of keys removed while their node was away (core/master/departed_objects.h), by
    // key and generation: a new leader refuses those copies when the node comes back. Each
    // is kept for `ttl_sec` (--ha_tombstone_ttl_sec) to a tenth more (at most an hour more),
    // then etcd deletes it: tombstones are written with a lease, one per stretch of time.
    Status SaveTombstones(const std::vector<std::pair<std::string, uint64_t>>& tombstones,
                          int64_t ttl_sec);
    // Both kinds below, as tombstones for the next leader.
    Result<std::vector<std::pair<std::string, uint64_t>>> LoadTombstones();

    // Removals made durable before they are acknowledged (core/master/removal_journal.h), by key and
    // generation (removals/<hex key>/<generation>), in transactions of up to 100: the next
    // leader refuses the copies whose delete the nodes had not received yet. A node gets
    // that delete, or registers again with the next leader, within seconds, so these are
    // kept for kRemovalTtlSec only (to a tenth more), keeping etcd small under many removals.
    static constexpr int64_t kRemovalTtlSec = 600;
    Status SaveRemovals(const std::vector<std::pair<std::string, uint64_t>>& removals);

    // The tenant policy (`mooncakectl tenant set|rm`) as FormatTenantPolicy's text, in one key
    // (tenants), so a change is one atomic put. Load: nullopt when the cluster has none yet
    // (a --tenant_policy_file may seed it); an empty text is a policy without tenants.
    Status SaveTenants(std::string_view policy_text);
    Result<std::optional<std::string>> LoadTenants();

private:
    struct LeaseSlot {
        int64_t id = 0;   // 0: none yet, or it failed
        int64_t ttl = 0;  // the ttl_sec it was granted for
        std::chrono::steady_clock::time_point until;  // used for records saved before
    };
    // Named, not passed by reference: a slot is only reachable with lease_mu_ held.
    enum class LeaseUse { kTombstones, kRemovals };
    LeaseSlot& SlotOf(LeaseUse use) MC_REQUIRES(lease_mu_) {
        return use == LeaseUse::kTombstones ? tombstone_lease_ : removal_lease_;
    }
    // The lease records saved now are written with: granted for ttl + a stretch, and used
    // for that stretch, so a steady trickle of removals takes one lease per stretch, not one
    // per second.
    Result<int64_t> LeaseFor(LeaseUse use, int64_t ttl_sec) MC_EXCLUDES(lease_mu_);
    void Forget(LeaseUse use, int64_t lease) MC_EXCLUDES(lease_mu_);
    Result<int64_t> TombstoneLease(int64_t ttl_sec) {
        return LeaseFor(LeaseUse::kTombstones, ttl_sec);
    }

    EtcdClient& etcd_;
    const ClusterKeys keys_;
    Mutex lease_mu_;
    LeaseSlot tombstone_lease_ MC_GUARDED_BY(lease_mu_);
    LeaseSlot removal_lease_ MC_GUARDED_BY(lease_mu_);
};

}  // namespace mooncake::ha
