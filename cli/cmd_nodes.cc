// mooncakectl nodes: live nodes with capacity and use per tier and their last heartbeat.
#include "cli/commands.h"

namespace mooncake::cli {

void AddNodesCommand(CLI::App& root, CommandSet& set) {
    CLI::App* sub =
        root.add_subcommand("nodes", "list live nodes: capacity and use per tier, last heartbeat");
    set.Add(sub, [](Context& ctx) {
        int exit_code = kExitOk;
        Client* client = ctx.client(&exit_code);
        if (client == nullptr) return exit_code;
        auto nodes = client->Nodes();
        if (!nodes.ok()) return ctx.Fail(nodes.status(), "nodes");
        ctx.Print(RenderNodes(*nodes, ctx.format()));
        return static_cast<int>(kExitOk);
    });
}

}  // namespace mooncake::cli
