// The manual tier moves shared by `promote`, `offload` and `evict`: the same argument forms
// (KEY... or --prefix P), per-key outcomes, and --wait, which polls Stat (inspection, never an
// access) until each queued key reaches the asked state or --timeout runs out.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/context.h"
#include "core/master_types.h"

namespace mooncake::cli {

enum class TierMove { kPromote, kOffload, kEvict };

struct TierMoveOptions {
    std::vector<std::string> keys;
    std::string prefix;
    const CLI::Option* prefix_option = nullptr;  // set by AddTierMoveOptions
    bool has_prefix() const { return prefix_option != nullptr && prefix_option->count() > 0; }
    bool force = false;  // promote only: ignore DRAM pressure
    bool wait = false;
    double timeout_sec = 30.0;
};

// Registers the shared options of a tier-move command on `sub`.
void AddTierMoveOptions(CLI::App* sub, TierMove move, TierMoveOptions& options);

int RunTierMove(Context& ctx, TierMove move, const TierMoveOptions& options);

// The machine word and the text for people for one key's outcome.
struct OutcomeWords {
    std::string outcome;
    std::string text;
};
OutcomeWords DescribeOutcome(TierMove move, ManualOutcome outcome);
// After --wait saw the move complete.
OutcomeWords DescribeCompleted(TierMove move);

// Where a key stands for --wait, from its Stat.
enum class WaitState { kDone, kPending, kStalled };
WaitState WaitStateOf(TierMove move, const ObjectView& object);

}  // namespace mooncake::cli
