// The manual tier moves shared by `promote`, `offload` and `evict`: the same argument forms
// (KEY... or --prefix P), per-key outcomes, and --wait, which is Client::WaitForMove (the rule
// is core/base/manual_move.h) with --timeout as its deadline. This file parses, calls the library and
// chooses the words; it decides nothing about tiers.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/context.h"
#include "cli/printers.h"
#include "core/base/manual_move.h"
#include "core/base/master_types.h"
#include "thrift/client.h"

namespace mooncake::cli {

// TierMove, WaitState and WaitStateOf come from core/base/manual_move.h.

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
// After --wait saw the move complete (the words of ManualOutcome::kDone).
OutcomeWords DescribeCompleted(TierMove move);

// One key's line after --wait: the words, or the failure in --wait's terms (`timeout_sec` is
// --timeout, quoted in the messages of keys still moving or still refused).
KeyResult DescribeWaited(TierMove move, const MoveKeyResult& result, double timeout_sec);

}  // namespace mooncake::cli
