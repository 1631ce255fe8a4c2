// Where a mooncake cluster keeps its state in etcd, and the records stored there. One place,
// so the masters, the discovery of clients and nodes, and `mooncakectl masters` agree.
//
//   /mooncake/<cluster>/leader           {"address","epoch","since"}  under the leader's lease
//   /mooncake/<cluster>/epoch            "N": the last epoch taken (durable, +1 per new leader)
//   /mooncake/<cluster>/masters/<addr>   {"address","since"}  each live master, under its lease
//   /mooncake/<cluster>/knobs/<name>     value text of a knob set with `tune set` (durable)
//   /mooncake/<cluster>/nodes            names of the nodes live on the leader, one a line
//   /mooncake/<cluster>/tombstones/<hex> generation of a key removed while its node was away
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mooncake::ha {

inline constexpr std::string_view kDefaultClusterId = "mooncake_cluster";
// The scheme of a --master value that means "whoever leads the cluster".
inline constexpr std::string_view kEtcdScheme = "etcd://";

struct ClusterKeys {
    explicit ClusterKeys(std::string_view cluster) : root("/mooncake/" + std::string(cluster) + "/") {}
    std::string root;
    std::string leader() const { return root + "leader"; }
    std::string epoch() const { return root + "epoch"; }
    std::string masters() const { return root + "masters/"; }
    std::string knobs() const { return root + "knobs/"; }
    std::string nodes() const { return root + "nodes"; }
    std::string tombstones() const { return root + "tombstones/"; }
    std::string removals() const { return root + "removals/"; }  // <hex key>/<generation>
    std::string tenants() const { return root + "tenants"; }  // the tenant policy's text
};

struct MasterRecord {
    std::string address;  // the master's RPC HOST:PORT
    uint64_t epoch = 0;   // the leader's epoch (0 in a standby's registration)
    int64_t since_ms = 0;  // wall clock, ms since 1970: elected (leader) or started (standby)
};

std::string EncodeMasterRecord(const MasterRecord& record);
std::optional<MasterRecord> DecodeMasterRecord(std::string_view json);

// The cluster id clients use: `flag` if set, else $MOONCAKE_CLUSTER_ID, else the default.
std::string ClusterIdFor(std::string_view flag);

int64_t WallClockMs();

}  // namespace mooncake::ha
