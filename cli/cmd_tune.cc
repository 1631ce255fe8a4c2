// mooncakectl tune get [NAME] | tune set NAME=VALUE... [--persist]: read and change knobs at
// runtime. Unknown knobs, start-only knobs and out-of-range values are usage errors (2),
// found against the knob table (core/base/knobs.def) before anything is sent, with a message that
// names the allowed range; the daemon checks again, all or nothing, and refuses combinations
// its cross-knob rules forbid (1).
#include <memory>
#include <set>

#include "cli/commands.h"
#include "core/base/knobs.h"

namespace mooncake::cli {

using Assignments = std::vector<std::pair<std::string, std::string>>;

namespace {

struct TuneGetOptions {
    std::string name;
};

struct TuneSetOptions {
    std::vector<std::string> assignments;
    bool persist = false;
};

int RunTuneGet(Context& ctx, const TuneGetOptions& opts) {
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    auto knobs = client->TuneGet();
    if (!knobs.ok()) return ctx.Fail(knobs.status(), "tune get");
    std::vector<KnobInfo> shown;
    for (KnobInfo& k : *knobs) {
        if (opts.name.empty() || k.name == opts.name) shown.push_back(std::move(k));
    }
    if (!opts.name.empty() && shown.empty()) {
        return ctx.Usage("tune get: unknown knob '" + opts.name + "'");
    }
    ctx.Print(RenderKnobs(shown, ctx.format()));
    return kExitOk;
}

int RunTuneSet(Context& ctx, const TuneSetOptions& opts) {
    Assignments assignments;
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const std::string& arg : opts.assignments) {
        size_t eq = arg.find('=');
        if (eq == std::string::npos || eq == 0) {
            return ctx.Usage("tune set: '" + arg + "' is not NAME=VALUE");
        }
        std::string name = arg.substr(0, eq);
        assignments.emplace_back(name, arg.substr(eq + 1));
        if (seen.insert(name).second) names.push_back(name);
    }
    int exit_code = kExitOk;
    Client* client = ctx.client(&exit_code);
    if (client == nullptr) return exit_code;
    auto before = client->TuneGet();
    if (!before.ok()) return ctx.Fail(before.status(), "tune set");
    // A bad name or value is the caller's mistake, a usage error (2, DESIGN.md), found before
    // anything is sent. Checked against this build's knob table; a knob only the daemon knows
    // (another version) is left to the daemon.
    for (const auto& [name, value] : assignments) {
        bool daemon_knows = false;
        for (const KnobInfo& k : *before) daemon_knows = daemon_knows || k.name == name;
        if (FindKnob(name) == nullptr && daemon_knows) continue;
        Status bad = Config::CheckAssignment(name, value, SetMode::kRuntime);
        if (!bad.ok()) return ctx.Usage("tune set: " + bad.message());
    }
    // --persist: the daemon also rewrites its --config file; refused, changing nothing, when
    // it has none or cannot write it.
    auto after = client->TuneSet(assignments, opts.persist);
    if (!after.ok()) return ctx.Fail(after.status(), "tune set");
    ctx.Print(RenderKnobChanges(*before, *after, names, ctx.format()));
    return kExitOk;
}

}  // namespace

void AddTuneCommand(CLI::App& root, CommandSet& set) {
    CLI::App* tune = root.add_subcommand("tune", "read or change the daemon's knobs at runtime");
    tune->require_subcommand(1);

    auto get_opts = std::make_shared<TuneGetOptions>();
    CLI::App* get = tune->add_subcommand(
        "get", "show knobs: value, default, range, whether tunable at runtime");
    get->add_option("NAME", get_opts->name, "only this knob");
    set.Add(get, [get_opts](Context& ctx) { return RunTuneGet(ctx, *get_opts); });

    auto set_opts = std::make_shared<TuneSetOptions>();
    CLI::App* setter =
        tune->add_subcommand("set", "change runtime-tunable knobs at once (all or nothing)");
    setter->add_option("NAME=VALUE", set_opts->assignments, "knob assignments")->required();
    setter->add_flag("--persist", set_opts->persist,
                     "also write the change to the daemon's --config file");
    set.Add(setter, [set_opts](Context& ctx) { return RunTuneSet(ctx, *set_opts); });
}

}  // namespace mooncake::cli
