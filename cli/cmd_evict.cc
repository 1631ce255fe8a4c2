// mooncakectl evict KEY... | --prefix P [--wait [--timeout S]]: drop the MEMORY copy of keys,
// offloading first when offload is on and no LOCAL_DISK copy exists.
#include <memory>

#include "cli/commands.h"
#include "cli/tier_move.h"

namespace mooncake::cli {

void AddEvictCommand(CLI::App& root, CommandSet& set) {
    auto opts = std::make_shared<TierMoveOptions>();
    CLI::App* sub = root.add_subcommand(
        "evict", "drop the MEMORY copy of keys (offloading first if there is no disk copy)");
    AddTierMoveOptions(sub, TierMove::kEvict, *opts);
    set.Add(sub, [opts](Context& ctx) { return RunTierMove(ctx, TierMove::kEvict, *opts); });
}

}  // namespace mooncake::cli
