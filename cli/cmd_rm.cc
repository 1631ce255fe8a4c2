// mooncakectl rm [--force] KEY... | rm [--force] --prefix P: remove keys. A key leased by a
// reader is refused unless --force.
#include <memory>

#include "cli/batch.h"
#include "cli/commands.h"

namespace mooncake::cli {
namespace {

struct RmOptions {
    std::vector<std::string> keys;
    std::string prefix;
    const CLI::Option* prefix_option = nullptr;
    bool force = false;
};

std::vector<KeyResult> ToResults(std::span<const std::string> keys,
                                 const std::vector<Status>& statuses) {
    std::vector<KeyResult> out;
    out.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
        KeyResult r;
        r.key = keys[i];
        r.status = i < statuses.size() ? statuses[i] : Status::Internal("no answer for the key");
        if (r.status.ok()) {
            r.outcome = "removed";
            r.text = "removed";
        }
        out.push_back(std::move(r));
    }
    return out;
}

int RunRm(Context& ctx, const RmOptions& opts) {
    const bool prefix_form = opts.prefix_option->count() > 0;
    if (prefix_form == !opts.keys.empty())
        return ctx.Usage("rm: give KEY... or --prefix P (not both)");
    if (std::string bad = CheckKeyArguments(opts.keys); !bad.empty()) {
        return ctx.Usage("rm: " + bad);
    }
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;

    std::vector<KeyResult> results;
    if (opts.keys.size() == 1) {
        // One key: Remove, whose retry after a lost reply is not mistaken for "not found".
        results = ToResults(opts.keys, {client->Remove(opts.keys[0], opts.force)});
        return PrintKeyResults(ctx, "rm", false, results);
    }
    std::vector<std::string> keys = opts.keys;
    if (prefix_form) {
        auto listed = KeysWithPrefix(*client, opts.prefix);
        if (!listed.ok()) return ctx.Fail(listed.status(), "rm --prefix");
        keys = std::move(*listed);
    }
    Status st = RunInChunks(
        keys, prefix_form ? kPrefixChunk : kMaxChunk, "rm", prefix_form && ctx.Interactive(),
        [&](std::span<const std::string> part) -> Result<std::vector<KeyResult>> {
            std::vector<Status> statuses = client->BatchRemove(part, opts.force);
            // A whole-batch transport failure repeats one status on every key: report it once.
            if (!statuses.empty() && (statuses[0].Is(StatusCode::kUnavailable) ||
                                      statuses[0].Is(StatusCode::kTimeout))) {
                return statuses[0];
            }
            std::vector<KeyResult> part_results = ToResults(part, statuses);
            if (prefix_form) {
                // Removed by someone else since the listing: gone all the same.
                for (KeyResult& r : part_results) {
                    if (r.status.Is(StatusCode::kNotFound)) {
                        r.status = Status::Ok();
                        r.outcome = "removed";
                        r.text = "removed";
                    }
                }
            }
            return part_results;
        },
        results);
    if (!st.ok()) return ctx.Fail(st, "rm");
    return PrintKeyResults(ctx, prefix_form ? "rm --prefix " + QuoteKey(opts.prefix) : "rm",
                           prefix_form, results);
}

}  // namespace

void AddRmCommand(CLI::App& root, CommandSet& set) {
    auto opts = std::make_shared<RmOptions>();
    CLI::App* sub = root.add_subcommand("rm", "remove keys (KEY... or --prefix P)");
    sub->add_option("KEY", opts->keys, "keys to remove");
    opts->prefix_option =
        sub->add_option("--prefix", opts->prefix,
                        "remove every key starting with P (a progress bar on a terminal, else "
                        "a summary line)")
            ->type_name("P");
    sub->add_flag("--force", opts->force, "remove even keys that readers hold a lease on");
    set.Add(sub, [opts](Context& ctx) { return RunRm(ctx, *opts); });
}

}  // namespace mooncake::cli
