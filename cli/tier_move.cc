#include "cli/tier_move.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/batch.h"
#include "cli/text.h"
#include "core/base/types.h"

namespace mooncake::cli {
namespace {

std::string CommandName(TierMove move) { return std::string(TierMoveName(move)); }
std::string TargetText(TierMove move) { return std::string(TierMoveTarget(move)); }

KeyResult FromOutcome(TierMove move, KeyOutcome o) {
    KeyResult r;
    r.key = std::move(o.key);
    r.status = std::move(o.status);
    if (r.status.ok()) {
        OutcomeWords words = DescribeOutcome(move, o.outcome.value_or(ManualOutcome::kDone));
        r.outcome = std::move(words.outcome);
        r.text = std::move(words.text);
    }
    return r;
}

std::string Seconds(double sec) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", sec);
    return text;
}

}  // namespace

OutcomeWords DescribeOutcome(TierMove move, ManualOutcome outcome) {
    switch (move) {
        case TierMove::kPromote:
            switch (outcome) {
                case ManualOutcome::kQueued:
                    return {"queued", "queued for promotion"};
                case ManualOutcome::kDone:
                    return {"promoted", "promoted to MEMORY"};
                case ManualOutcome::kAlreadyThere:
                    return {"already", "already in MEMORY"};
                case ManualOutcome::kInFlight:
                    return {"in_flight", "promotion already in flight"};
            }
            break;
        case TierMove::kOffload:
            switch (outcome) {
                case ManualOutcome::kQueued:
                    return {"queued", "queued for offload"};
                case ManualOutcome::kDone:
                    return {"offloaded", "written to LOCAL_DISK"};
                case ManualOutcome::kAlreadyThere:
                    return {"already", "already on LOCAL_DISK"};
                case ManualOutcome::kInFlight:
                    return {"in_flight", "offload already in flight"};
            }
            break;
        case TierMove::kEvict:
            switch (outcome) {
                case ManualOutcome::kQueued:
                    return {"queued", "queued (offload first, then drop MEMORY)"};
                case ManualOutcome::kDone:
                    return {"evicted", "MEMORY copy dropped"};
                case ManualOutcome::kAlreadyThere:
                    return {"already", "not in MEMORY"};
                case ManualOutcome::kInFlight:
                    return {"in_flight", "offload in flight (evict again after it)"};
            }
            break;
    }
    return {"unknown", "unknown outcome"};
}

OutcomeWords DescribeCompleted(TierMove move) {
    return DescribeOutcome(move, ManualOutcome::kDone);
}

KeyResult DescribeWaited(TierMove move, const MoveKeyResult& m, double timeout_sec) {
    KeyResult r;
    r.key = m.key;
    switch (m.end) {
        case MoveEnd::kReached: {
            OutcomeWords words = DescribeOutcome(move, m.outcome);
            r.outcome = std::move(words.outcome);
            r.text = std::move(words.text);
            break;
        }
        case MoveEnd::kRefused:
        case MoveEnd::kRemoved:
            r.status = m.status;
            break;
        case MoveEnd::kBusy:
            r.status = Status(m.status.code(), m.status.message() + " (still after " +
                                                   Seconds(timeout_sec) + "s of --wait)");
            break;
        case MoveEnd::kEndedShort:
            r.status = Status::IoError(
                CommandName(move) + " of " + QuoteKey(m.key) + " ended without " +
                TargetText(move) +
                " (the task failed, expired or was cancelled; see mooncakectl metrics)");
            break;
        case MoveEnd::kLate:
            r.status = Status::Timeout(QuoteKey(m.key) + " still lacks " + TargetText(move) +
                                       " after " + Seconds(timeout_sec) + "s (--timeout)");
            break;
    }
    return r;
}

void AddTierMoveOptions(CLI::App* sub, TierMove move, TierMoveOptions& options) {
    sub->add_option("KEY", options.keys, "keys to move (or use --prefix)");
    CLI::Option* prefix =
        sub->add_option("--prefix", options.prefix,
                        "every key starting with P (a progress bar on a terminal, "
                        "else a summary line)");
    prefix->type_name("P");
    options.prefix_option = prefix;
    if (move == TierMove::kPromote) {
        sub->add_flag("--force", options.force,
                      "promote even under DRAM pressure (still never displaces pinned "
                      "objects)");
    }
    auto* wait = sub->add_flag("--wait", options.wait,
                               std::string("wait until each key has ") + TargetText(move));
    sub->add_option("--timeout", options.timeout_sec,
                    "with --wait: give up after S seconds (exit 1)")
        ->type_name("S")
        ->check(CLI::PositiveNumber)
        ->needs(wait)
        ->capture_default_str();
}

int RunTierMove(Context& ctx, TierMove move, const TierMoveOptions& options) {
    const std::string command = CommandName(move);
    if (options.has_prefix() == !options.keys.empty()) {
        return ctx.Usage(command + ": give KEY... or --prefix P (not both)");
    }
    if (std::string bad = CheckKeyArguments(options.keys); !bad.empty()) {
        return ctx.Usage(command + ": " + bad);
    }
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;

    std::vector<std::string> keys = options.keys;
    const bool prefix_form = options.has_prefix();
    if (prefix_form) {
        auto listed = KeysWithPrefix(*client, options.prefix);
        if (!listed.ok()) return ctx.Fail(listed.status(), command + " --prefix");
        keys = std::move(*listed);
    }
    std::vector<KeyOutcome> issued;  // for --wait, in key order
    std::vector<KeyResult> results;
    Status st = RunInChunks(
        keys, prefix_form ? kPrefixChunk : kMaxChunk, command, prefix_form && ctx.Interactive(),
        [&](std::span<const std::string> part) -> Result<std::vector<KeyResult>> {
            auto got = client->Move(move, part, options.force);
            if (!got.ok()) return got.status();
            std::vector<KeyResult> out;
            out.reserve(got->size());
            for (KeyOutcome& o : *got) {
                if (options.wait) issued.push_back(o);
                out.push_back(FromOutcome(move, std::move(o)));
            }
            return out;
        },
        results);
    if (!st.ok()) return ctx.Fail(st, command);
    if (prefix_form) {
        // A key removed between the listing and the move is no longer under the prefix:
        // it is gone, not a failure.
        std::erase_if(results, [](const KeyResult& r) { return r.status.Is(StatusCode::kNotFound); });
    }

    std::vector<int> overrides(results.size(), -1);
    if (options.wait) {
        size_t waiting = std::count_if(issued.begin(), issued.end(), [](const KeyOutcome& o) {
            return AwaitsMove(o.status, o.outcome);
        });
        if (waiting > 0 && ctx.Interactive()) {
            ctx.Print("waiting for " + std::to_string(waiting) +
                      (waiting == 1 ? " key" : " keys") + " to have " + TargetText(move) +
                      " ...\n");
            std::fflush(stdout);
        }
        // --timeout counts from the end of the issue, as the wait begins.
        MoveWaitOptions wait_options;
        wait_options.deadline =
            std::chrono::steady_clock::now() +
            std::chrono::milliseconds(static_cast<int64_t>(options.timeout_sec * 1000.0));
        wait_options.force = options.force;
        auto waited = client->WaitForMove(move, issued, wait_options);
        if (!waited.ok()) return ctx.Fail(waited.status(), command + " --wait");
        for (size_t i = 0; i < waited->size() && i < results.size(); ++i) {
            const MoveKeyResult& m = (*waited)[i];
            results[i] = DescribeWaited(move, m, options.timeout_sec);
            // The store is there; the move is late: exit 1, not the timeout code.
            if (m.end == MoveEnd::kLate) overrides[i] = kExitFailed;
        }
    }
    std::string label = prefix_form ? command + " --prefix " + QuoteKey(options.prefix) : command;
    return PrintKeyResults(ctx, label, prefix_form, results, overrides);
}

}  // namespace mooncake::cli
