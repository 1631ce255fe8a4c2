// mooncakectl hot [--limit N]: LOCAL_DISK-only keys with the highest admission-sketch
// estimates: what promotion would bring back first. Inspection: the sketch is only read.
#include <memory>

#include "cli/commands.h"

namespace mooncake::cli {

void AddHotCommand(CLI::App& root, CommandSet& set) {
    auto limit = std::make_shared<size_t>(20);
    CLI::App* sub = root.add_subcommand(
        "hot", "list LOCAL_DISK-only keys by admission-sketch estimate, hottest first");
    sub->add_option("--limit", *limit, "at most N keys")
        ->check(CLI::Range(size_t{1}, size_t{1000000}))
        ->type_name("N")
        ->capture_default_str();
    set.Add(sub, [limit](Context& ctx) {
        int exit_code = kExitOk;
        Client* client = ctx.client(&exit_code);
        if (client == nullptr) return exit_code;
        auto hot = client->Hot(*limit);
        if (!hot.ok()) return ctx.Fail(hot.status(), "hot");
        ctx.Print(RenderHot(*hot, ctx.format()));
        return static_cast<int>(kExitOk);
    });
}

}  // namespace mooncake::cli
