// The commands of mooncakectl. Each lives in its own cmd_<name>.cc: it declares its options
// on a CLI11 subcommand, and its runner parses nothing more, calls the client library and
// hands the answer to one printer (cli/printers.h). main.cc wires them together.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <utility>
#include <vector>

#include "cli/context.h"

namespace mooncake::cli {

using Runner = std::function<int(Context&)>;

// The runnable (leaf) commands and their subcommand objects; the one the user named runs.
class CommandSet {
  public:
    void Add(CLI::App* app, Runner run) { commands_.emplace_back(app, std::move(run)); }
    // The runner of the command CLI11 parsed; nullptr if none (the caller reports usage).
    const Runner* Parsed() const {
        for (const auto& [app, run] : commands_) {
            if (app->parsed()) return &run;
        }
        return nullptr;
    }

  private:
    std::vector<std::pair<CLI::App*, Runner>> commands_;
};

void AddPutCommand(CLI::App& root, CommandSet& set);
void AddGetCommand(CLI::App& root, CommandSet& set);
void AddRmCommand(CLI::App& root, CommandSet& set);
void AddStatCommand(CLI::App& root, CommandSet& set);
void AddLsCommand(CLI::App& root, CommandSet& set);
void AddPromoteCommand(CLI::App& root, CommandSet& set);
void AddOffloadCommand(CLI::App& root, CommandSet& set);
void AddEvictCommand(CLI::App& root, CommandSet& set);
void AddTuneCommand(CLI::App& root, CommandSet& set);  // tune get, tune set
void AddMetricsCommand(CLI::App& root, CommandSet& set);
void AddNodesCommand(CLI::App& root, CommandSet& set);
void AddTasksCommand(CLI::App& root, CommandSet& set);
void AddHotCommand(CLI::App& root, CommandSet& set);
void AddCheckCommand(CLI::App& root, CommandSet& set);
void AddScrubCommand(CLI::App& root, CommandSet& set);
void AddMastersCommand(CLI::App& root, CommandSet& set);  // needs --master etcd://
void AddTenantCommand(CLI::App& root, CommandSet& set);  // tenant ls, set, rm

// Builds the whole command line: global options and every command. Used by main and by the
// unit tests of argument parsing.
void BuildApp(CLI::App& app, GlobalOptions& options, CommandSet& set);

// Parses argv and runs the named command; returns the process exit code. Every error,
// CLI11's included, ends as one stderr line and a code from cli/exit_codes.h.
int RunMooncakectl(int argc, const char* const* argv);

}  // namespace mooncake::cli
