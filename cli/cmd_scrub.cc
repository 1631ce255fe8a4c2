// mooncakectl scrub [--node ID] [--max_time S]: read every LOCAL_DISK record of one node (or
// of every live node) and verify its checksum. Corrupt records are dropped on their node and
// their keys removed (they could never be read correctly again); each is named here.
// Exit 0 when nothing failed, 1 when a record was corrupt or a node could not be scrubbed.
#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/printers.h"

namespace mooncake::cli {
namespace {

struct ScrubOptions {
    uint64_t node = 0;  // 0: every live node
    double max_time_sec = 3600;
};

int RunScrub(Context& ctx, const ScrubOptions& opts) {
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    auto results = client->Scrub(
        static_cast<NodeId>(opts.node),
        std::chrono::milliseconds(static_cast<int64_t>(opts.max_time_sec * 1000.0)));
    if (!results.ok()) return ctx.Fail(results.status(), "scrub");
    ctx.Print(RenderScrub(*results, ctx.format()));
    size_t corrupt = 0, failed = 0;
    for (const ScrubResult& r : *results) {
        corrupt += r.corrupt.size();
        failed += r.error.empty() ? 0 : 1;
    }
    if (corrupt > 0 || failed > 0) {
        return ctx.Error(kExitFailed, "scrub: " + std::to_string(corrupt) +
                                          " corrupt records, " + std::to_string(failed) +
                                          " nodes not scrubbed");
    }
    return kExitOk;
}

}  // namespace

void AddScrubCommand(CLI::App& root, CommandSet& set) {
    auto opts = std::make_shared<ScrubOptions>();
    CLI::App* sub = root.add_subcommand(
        "scrub", "read every LOCAL_DISK record and verify its checksum; report what fails");
    sub->add_option("--node", opts->node, "only the node with this ID (see nodes)")
        ->type_name("ID");
    sub->add_option("--max_time", opts->max_time_sec,
                    "seconds to wait for the scrub beyond --timeout")
        ->check(CLI::Range(1.0, 86400.0))
        ->type_name("S")
        ->capture_default_str();
    set.Add(sub, [opts](Context& ctx) { return RunScrub(ctx, *opts); });
}

}  // namespace mooncake::cli
