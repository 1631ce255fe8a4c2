// mooncakectl promote KEY... | --prefix P [--force] [--wait [--timeout S]]: queue promotions
// of LOCAL_DISK keys to MEMORY. Bypasses the admission gate; respects DRAM pressure unless
// --force. Each key's outcome: promoted, already in MEMORY, queued, or refused and why.
#include <memory>

#include "cli/commands.h"
#include "cli/tier_move.h"

namespace mooncake::cli {

void AddPromoteCommand(CLI::App& root, CommandSet& set) {
    auto opts = std::make_shared<TierMoveOptions>();
    CLI::App* sub = root.add_subcommand(
        "promote", "copy keys from LOCAL_DISK back to MEMORY (bypasses the admission gate)");
    AddTierMoveOptions(sub, TierMove::kPromote, *opts);
    set.Add(sub, [opts](Context& ctx) { return RunTierMove(ctx, TierMove::kPromote, *opts); });
}

}  // namespace mooncake::cli
