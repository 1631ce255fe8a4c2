// mooncakectl check: the master's bookkeeping against a walk over everything (DRAM used =
// live allocations, pins = tasks in flight, funnels balanced, per-node counts). Exit 0 when
// consistent, 1 with one line per violation otherwise. Run it on a quiet store: work in flight
// between the steps of the walk can show as a transient difference.
#include "cli/commands.h"

namespace mooncake::cli {

void AddCheckCommand(CLI::App& root, CommandSet& set) {
    CLI::App* sub = root.add_subcommand(
        "check", "check the master's bookkeeping for leaks and drift (run on a quiet store)");
    set.Add(sub, [](Context& ctx) {
        int exit_code = kExitOk;
        Client* client = ctx.client(&exit_code);
        if (client == nullptr) return exit_code;
        auto report = client->CheckInvariants();
        if (!report.ok()) return ctx.Fail(report.status(), "check");
        ctx.Print(RenderInvariants(*report, ctx.format()));
        return static_cast<int>(report->ok() ? kExitOk : kExitFailed);
    });
}

}  // namespace mooncake::cli
