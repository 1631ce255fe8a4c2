#include "daemon/flags.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>

namespace mooncake {
namespace {

std::string Describe(const KnobDef& def) {
    std::string text(def.doc);
    text += " [" + def.RangeText() + "; default " + std::string(def.default_text);
    if (def.runtime_tunable) text += "; tunable at runtime";
    text += "]";
    return text;
}

// Word-wraps `text` into '# ' comment lines of at most `width` columns.
void Comment(std::string& out, std::string_view text, size_t width = 96) {
    std::string line = "#";
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(' ', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view word = text.substr(start, end - start);
        if (line.size() + 1 + word.size() > width && line != "#") {
            out += line + "\n";
            line = "#";
        }
        line += " ";
        line += word;
        start = end + 1;
    }
    out += line + "\n";
}

}  // namespace

std::string ConfigFileText(const Config& config) {
    std::string out =
        "# mooncake-tier configuration: every knob of mooncaked (`mooncaked --print_config`).\n"
        "#\n"
        "#   mooncaked --config /etc/mooncake/mooncake.conf [--flag=value ...]\n"
        "#\n"
        "# Format: one `name = value` per line; `#` starts a comment. Names are the flag names\n"
        "# (mooncaked --help); sizes take B/KiB/MiB/GiB/TiB; booleans true/false. Flags on the\n"
        "# command line override this file. Knobs marked [runtime] can also be changed while\n"
        "# the daemon runs (`mooncakectl tune set name=value`; with --persist the change is\n"
        "# written back here). A value out of range stops the daemon at start with a message\n"
        "# naming the knob and its allowed range. Lines left commented keep their default.\n";
    for (const KnobDef& def : KnobTable()) {
        out += "\n";
        Comment(out, std::string(def.doc) + (def.runtime_tunable ? " [runtime]" : ""));
        if (def.type != KnobType::kBool && def.type != KnobType::kString) {
            out += "#   " + std::string(def.type == KnobType::kEnum ? "one of " : "range ") +
                   def.RangeText() + "\n";
        }
        std::string value = config.GetText(def.id);
        Config defaults;
        bool is_default = value == defaults.GetText(def.id);
        std::string line = std::string(is_default ? "# " : "") + std::string(def.name) + " = " +
                           value;
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    return out;
}

std::optional<int> ParseCommandLine(int argc, char** argv, Config& config,
                                    std::string* config_file_out) {
    CLI::App app("mooncaked: the mooncake-tier store daemon (roles: standalone, master, node)",
                 "mooncaked");
    app.set_version_flag("--version", "mooncaked (mooncake-tier) 0.1.0");
    app.get_formatter()->column_width(44);

    bool print_config = false;
    app.add_flag("--print_config", print_config,
                 "print the effective configuration (after --config and flags) as a config "
                 "file with every knob documented, and exit");
    std::string config_file;
    app.add_option("--config", config_file,
                   "file of 'name = value' lines (any knob below); flags override it")
        ->check(CLI::ExistingFile);

    // One flag per knob; values stay text here, Config parses and range-checks them.
    std::map<std::string, std::string> values;
    std::map<const CLI::Option*, std::string> names;
    for (const KnobDef& def : KnobTable()) {
        std::string name(def.name);
        std::string& target = values[name];
        CLI::Option* opt = nullptr;
        if (def.type == KnobType::kBool) {
            opt = app.add_flag("--" + name + "{true}", target, Describe(def));
        } else {
            opt = app.add_option("--" + name, target, Describe(def));
        }
        opt->group(def.runtime_tunable ? "Runtime-tunable knobs" : "Start-up knobs");
        // A flag given twice (a wrapper script's default, then the operator's) takes the last.
        opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        names[opt] = name;
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ExtrasError& e) {
        // CLI11 2.1 lists the unexpected arguments last-first; name them as given, and the
        // snake_case flag a kebab-case one was probably meant to be (--dram-size).
        std::vector<std::string> extra = app.remaining();
        std::string message = extra.size() > 1 ? "unexpected arguments: " : "unexpected argument: ";
        std::string hint;
        for (size_t i = 0; i < extra.size(); ++i) {
            message += (i > 0 ? " " : "") + extra[i];
            const std::string& arg = extra[i];
            if (hint.empty() && arg.rfind("--", 0) == 0) {
                std::string name = arg.substr(2, arg.find('=') == std::string::npos
                                                     ? std::string::npos
                                                     : arg.find('=') - 2);
                std::replace(name.begin(), name.end(), '-', '_');
                if (FindKnob(name) != nullptr) hint = "; did you mean --" + name + "?";
            }
        }
        std::cerr << "mooncaked: " << message << hint << " (see --help)\n";
        return 2;
    } catch (const CLI::ParseError& e) {
        std::cerr << "mooncaked: " << e.what() << " (see --help)\n";
        return 2;
    }

    if (!config_file.empty()) {
        Status st = config.LoadFile(config_file);
        if (!st.ok()) {
            std::cerr << "mooncaked: " << st.message() << "\n";
            return 2;
        }
    }
    // Flags in the order given; a repeated flag's last value wins (CLI11 keeps the last).
    std::vector<std::pair<std::string, std::string>> assignments;
    for (const CLI::Option* opt : app.parse_order()) {
        auto it = names.find(opt);
        if (it == names.end()) continue;
        assignments.emplace_back(it->second, values[it->second]);
    }
    *config_file_out = config_file;
    Status st = config.SetMany(assignments, SetMode::kStartup);
    if (st.ok()) st = config.Validate();
    if (!st.ok()) {
        std::cerr << "mooncaked: " << st.message() << "\n";
        return 2;
    }
    if (print_config) {
        std::cout << ConfigFileText(config);
        return 0;
    }
    return std::nullopt;
}

}  // namespace mooncake
