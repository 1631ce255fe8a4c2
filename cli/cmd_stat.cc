// mooncakectl stat KEY: an object's size, tiers and replicas. Inspection: never an access.
#include <memory>

#include "cli/batch.h"
#include "cli/commands.h"

namespace mooncake::cli {
namespace {

int RunStat(Context& ctx, const std::string& key) {
    if (std::string bad = CheckKeyArguments({key}); !bad.empty()) return ctx.Usage("stat: " + bad);
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    auto info = client->Stat(key);
    if (!info.ok()) return ctx.Fail(info.status(), "stat " + QuoteKey(key));
    ctx.Print(RenderStat(*info, ctx.format()));
    return kExitOk;
}

}  // namespace

void AddStatCommand(CLI::App& root, CommandSet& set) {
    auto key = std::make_shared<std::string>();
    CLI::App* sub = root.add_subcommand(
        "stat", "show KEY's size, tiers and replicas (not an access: no lease, no promotion)");
    sub->add_option("KEY", *key, "the key")->required();
    set.Add(sub, [key](Context& ctx) { return RunStat(ctx, *key); });
}

}  // namespace mooncake::cli
