// mooncakectl masters: the masters of an HA cluster (docs/HA.md), read from etcd: the leader
// (its epoch and since when it leads) and the standbys (since when they run). Needs
// --master etcd://HOST:PORT[;...] (and --cluster_id or $MOONCAKE_CLUSTER_ID).
#include <ctime>

#include "cli/commands.h"
#include "cli/json.h"
#include "daemon/ha/leader_discovery.h"

namespace mooncake::cli {
namespace {

// 2026-12-01T19:30:00.123Z
std::string Iso8601(int64_t ms) {
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[48];
    std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
    return out;
}

std::string RenderMasters(const std::vector<ha::MasterListing>& masters, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginArray();
        for (const auto& m : masters) {
            json.BeginObject();
            json.Key("address");
            json.String(m.address);
            json.Key("role");
            json.String(m.leader ? "leader" : "standby");
            json.Key("epoch");
            json.Uint(m.epoch);
            json.Key("since");
            json.String(Iso8601(m.since_ms));
            json.Key("since_ms");
            json.Int(m.since_ms);
            json.EndObject();
        }
        json.EndArray();
        return json.Finish();
    }
    Table table({"ADDRESS", "ROLE", "EPOCH", "SINCE"});
    table.AlignRight(2);
    for (const auto& m : masters) {
        table.AddRow({m.address, m.leader ? "leader" : "standby", std::to_string(m.epoch),
                      Iso8601(m.since_ms)});
    }
    return table.Render();
}

}  // namespace

void AddMastersCommand(CLI::App& root, CommandSet& set) {
    CLI::App* sub = root.add_subcommand(
        "masters", "list the masters of an HA cluster (--master etcd://...): leader, standbys");
    set.Add(sub, [](Context& ctx) {
        if (!ha::IsEtcdMaster(ctx.options().master)) {
            return ctx.Usage("masters needs --master etcd://HOST:PORT[;HOST:PORT...]");
        }
        auto discovery = ha::LeaderDiscovery::Create(ctx.options().master, ctx.options().cluster_id);
        if (!discovery.ok()) return ctx.Fail(discovery.status(), "masters");
        auto masters = (*discovery)->Masters();
        if (!masters.ok()) return ctx.Fail(masters.status(), "masters");
        ctx.Print(RenderMasters(*masters, ctx.format()));
        if (masters->empty() || !masters->front().leader) {
            return ctx.Error(kExitFailed, "no master leads cluster '" +
                                              (*discovery)->cluster_id() + "'");
        }
        return static_cast<int>(kExitOk);
    });
}

}  // namespace mooncake::cli
