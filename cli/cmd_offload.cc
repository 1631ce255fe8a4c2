// mooncakectl offload KEY... | --prefix P [--wait [--timeout S]]: write a LOCAL_DISK copy of
// MEMORY keys; the MEMORY copy is kept.
#include <memory>

#include "cli/commands.h"
#include "cli/tier_move.h"

namespace mooncake::cli {

void AddOffloadCommand(CLI::App& root, CommandSet& set) {
    auto opts = std::make_shared<TierMoveOptions>();
    CLI::App* sub = root.add_subcommand("offload", "write a LOCAL_DISK copy of keys (MEMORY kept)");
    AddTierMoveOptions(sub, TierMove::kOffload, *opts);
    set.Add(sub, [opts](Context& ctx) { return RunTierMove(ctx, TierMove::kOffload, *opts); });
}

}  // namespace mooncake::cli
