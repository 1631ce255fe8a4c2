// mooncakectl metrics: the Prometheus text exposition, exactly as /metrics serves it.
#include "cli/commands.h"

namespace mooncake::cli {

void AddMetricsCommand(CLI::App& root, CommandSet& set) {
    CLI::App* sub = root.add_subcommand(
        "metrics", "print the daemon's metrics (Prometheus text, as /metrics serves it)");
    set.Add(sub, [](Context& ctx) {
        int exit_code = kExitOk;
        Client* client = ctx.client(&exit_code);
        if (client == nullptr) return exit_code;
        auto text = client->MetricsText();
        if (!text.ok()) return ctx.Fail(text.status(), "metrics");
        ctx.Print(RenderMetrics(*text, ctx.format()));
        return static_cast<int>(kExitOk);
    });
}

}  // namespace mooncake::cli
