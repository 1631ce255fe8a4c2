// mooncakectl tasks: promotion and offload tasks in flight, oldest first, with their age.
#include <map>

#include "cli/commands.h"

namespace mooncake::cli {

void AddTasksCommand(CLI::App& root, CommandSet& set) {
    CLI::App* sub =
        root.add_subcommand("tasks", "list promotion and offload tasks in flight with age");
    set.Add(sub, [](Context& ctx) {
        int exit_code = kExitOk;
        Client* client = ctx.client(&exit_code);
        if (client == nullptr) return exit_code;
        auto tasks = client->Tasks();
        if (!tasks.ok()) return ctx.Fail(tasks.status(), "tasks");
        // Node names make the table readable; without them the ids still say it all.
        std::map<NodeId, std::string> names;
        if (auto nodes = client->Nodes(); nodes.ok()) {
            for (const NodeInfo& n : *nodes) names[n.id] = n.spec.name;
        }
        ctx.Print(RenderTasks(*tasks, names, ctx.format()));
        return static_cast<int>(kExitOk);
    });
}

}  // namespace mooncake::cli
