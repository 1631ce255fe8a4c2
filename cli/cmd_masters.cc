// mooncakectl masters: the masters of an HA cluster (docs/HA.md), read from etcd: the leader
// (its epoch and since when it leads) and the standbys (since when they run). Needs
// --master etcd://HOST:PORT[;...] (and --cluster_id or $MOONCAKE_CLUSTER_ID).
#include "cli/commands.h"
#include "cli/printers.h"
#include "etcd/leader_discovery.h"

namespace mooncake::cli {

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
