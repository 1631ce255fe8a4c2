#include "cli/tier_move.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <thread>

#include "cli/batch.h"
#include "cli/text.h"
#include "core/types.h"

namespace mooncake::cli {
namespace {

const char* CommandName(TierMove move) {
    switch (move) {
        case TierMove::kPromote:
            return "promote";
        case TierMove::kOffload:
            return "offload";
        case TierMove::kEvict:
            return "evict";
    }
    return "?";
}

const char* TargetText(TierMove move) {
    switch (move) {
        case TierMove::kPromote:
            return "a COMPLETE MEMORY copy";
        case TierMove::kOffload:
            return "a COMPLETE LOCAL_DISK copy";
        case TierMove::kEvict:
            return "its MEMORY copy dropped";
    }
    return "?";
}

Result<std::vector<KeyResult>> CallMove(Client& client, TierMove move, bool force,
                                        std::span<const std::string> keys) {
    Result<std::vector<KeyOutcome>> got = move == TierMove::kPromote   ? client.Promote(keys, force)
                                          : move == TierMove::kOffload ? client.Offload(keys)
                                                                       : client.Evict(keys);
    if (!got.ok()) return got.status();
    std::vector<KeyResult> out;
    out.reserve(got->size());
    for (KeyOutcome& o : *got) {
        KeyResult r;
        r.key = std::move(o.key);
        r.status = std::move(o.status);
        if (r.status.ok()) {
            OutcomeWords words = DescribeOutcome(move, o.outcome.value_or(ManualOutcome::kDone));
            r.outcome = std::move(words.outcome);
            r.text = std::move(words.text);
        }
        out.push_back(std::move(r));
    }
    return out;
}

bool NeedsWait(const KeyResult& r) {
    return r.status.ok() && (r.outcome == "queued" || r.outcome == "in_flight");
}

// A refusal that --wait retries: the queue (or its byte budget) is full for now.
bool Retryable(const KeyResult& r) { return r.status.Is(StatusCode::kBusy); }

// Polls Stat for every key still moving. Returns a status only when the daemon itself fails
// (unreachable); per-key results are updated in place, with exit overrides for timeouts.
Status WaitForMoves(Context& ctx, Client& client, TierMove move, bool force, double timeout_sec,
                    std::vector<KeyResult>& results, std::vector<int>& overrides) {
    using Clock = std::chrono::steady_clock;
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_sec * 1000.0));
    struct Pending {
        size_t index;
        int stalled = 0;  // consecutive polls with neither done nor a task in flight
        bool reissued = false;
        bool refused = false;  // refused as busy: asked again each round
    };
    std::vector<Pending> pending;
    for (size_t i = 0; i < results.size(); ++i) {
        if (NeedsWait(results[i])) pending.push_back({i});
        if (Retryable(results[i])) pending.push_back({i, 0, false, true});
    }
    if (pending.empty()) return Status::Ok();
    if (ctx.Interactive()) {
        ctx.Print("waiting for " + std::to_string(pending.size()) +
                  (pending.size() == 1 ? " key" : " keys") + " to have " + TargetText(move) +
                  " ...\n");
        std::fflush(stdout);
    }
    auto interval = std::chrono::milliseconds(10);
    while (!pending.empty()) {
        std::vector<Pending> still;
        // Ask again for the keys refused as busy: tasks that ended since have made room.
        std::vector<std::string> retry;
        for (const Pending& p : pending) {
            if (p.refused) retry.push_back(results[p.index].key);
        }
        std::vector<KeyResult> retried;
        for (size_t i = 0; i < retry.size(); i += kMaxChunk) {
            auto got = CallMove(client, move, force,
                                std::span(retry).subspan(i, std::min(kMaxChunk, retry.size() - i)));
            if (!got.ok()) return got.status();
            for (KeyResult& r : *got) retried.push_back(std::move(r));
        }
        size_t next_retried = 0;
        for (Pending p : pending) {
            KeyResult& r = results[p.index];
            if (p.refused) {
                if (next_retried < retried.size()) r = std::move(retried[next_retried++]);
                if (Retryable(r)) {
                    still.push_back(p);
                    continue;
                }
                p.refused = false;
                if (!NeedsWait(r)) continue;  // done at once, already there, or refused for good
            }
            auto stat = client.Stat(r.key);
            WaitState state;
            if (!stat.ok()) {
                if (!stat.status().Is(StatusCode::kNotFound)) return stat.status();
                if (move == TierMove::kEvict) {
                    state = WaitState::kDone;  // the object is gone: no MEMORY copy left
                } else {
                    r.status =
                        Status::NotFound("key " + QuoteKey(r.key) + " was removed while waiting");
                    continue;
                }
            } else {
                state = WaitStateOf(move, stat->object);
            }
            if (state == WaitState::kDone) {
                OutcomeWords words = DescribeCompleted(move);
                r.outcome = std::move(words.outcome);
                r.text = std::move(words.text);
                continue;
            }
            if (state == WaitState::kStalled) {
                // An evict that found an offload in flight: once it ends, evict again.
                if (move == TierMove::kEvict && !p.reissued) {
                    p.reissued = true;
                    std::string key = r.key;
                    auto again = CallMove(client, move, false, std::span(&key, 1));
                    if (!again.ok()) return again.status();
                    if (!again->empty() && !(*again)[0].status.ok()) {
                        r.status = (*again)[0].status;
                        continue;
                    }
                    still.push_back(p);
                    continue;
                }
                // Seen twice in a row: the task ended (failed, cancelled, expired) without
                // the asked state.
                if (++p.stalled >= 2) {
                    r.status = Status::IoError(
                        std::string(CommandName(move)) + " of " + QuoteKey(r.key) +
                        " ended without " + TargetText(move) +
                        " (the task failed, expired or was cancelled; see mooncakectl metrics)");
                    continue;
                }
            } else {
                p.stalled = 0;
            }
            still.push_back(p);
        }
        pending = std::move(still);
        if (pending.empty()) break;
        if (Clock::now() >= deadline) {
            char secs[32];
            std::snprintf(secs, sizeof secs, "%g", timeout_sec);
            for (const Pending& p : pending) {
                KeyResult& r = results[p.index];
                if (p.refused) {
                    r.status = Status(r.status.code(), r.status.message() + " (still after " +
                                                           secs + "s of --wait)");
                    continue;
                }
                r.status = Status::Timeout(QuoteKey(r.key) + " still lacks " + TargetText(move) +
                                           " after " + secs + "s (--timeout)");
                overrides[p.index] = kExitFailed;  // the store is there; the move is late
            }
            break;
        }
        std::this_thread::sleep_for(interval);
        interval = std::min(interval * 2, std::chrono::milliseconds(200));
    }
    return Status::Ok();
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
    switch (move) {
        case TierMove::kPromote:
            return {"promoted", "promoted to MEMORY"};
        case TierMove::kOffload:
            return {"offloaded", "written to LOCAL_DISK"};
        case TierMove::kEvict:
            return {"evicted", "MEMORY copy dropped"};
    }
    return {"unknown", "unknown"};
}

WaitState WaitStateOf(TierMove move, const ObjectView& o) {
    switch (move) {
        case TierMove::kPromote:
            if (o.HasComplete(Tier::kMemory)) return WaitState::kDone;
            return o.promotion_in_flight ? WaitState::kPending : WaitState::kStalled;
        case TierMove::kOffload:
            if (o.HasComplete(Tier::kLocalDisk)) return WaitState::kDone;
            return o.offload_in_flight ? WaitState::kPending : WaitState::kStalled;
        case TierMove::kEvict:
            if (!o.HasComplete(Tier::kMemory)) return WaitState::kDone;
            return o.offload_in_flight ? WaitState::kPending : WaitState::kStalled;
    }
    return WaitState::kStalled;
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
                      "promote even under DRAM pressure (still never displaces leased or pinned "
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
    std::vector<KeyResult> results;
    Status st = RunInChunks(
        keys, prefix_form ? kPrefixChunk : kMaxChunk, command, prefix_form && ctx.Interactive(),
        [&](std::span<const std::string> part) {
            return CallMove(*client, move, options.force, part);
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
        st = WaitForMoves(ctx, *client, move, options.force, options.timeout_sec, results,
                          overrides);
        if (!st.ok()) return ctx.Fail(st, command + " --wait");
    }
    std::string label = prefix_form ? command + " --prefix " + QuoteKey(options.prefix) : command;
    return PrintKeyResults(ctx, label, prefix_form, results, overrides);
}

}  // namespace mooncake::cli
