// The command line of mooncaked, generated from the knob table: every knob is a flag
// (--name=value or --name value; a boolean given bare means true, --name=false turns it off),
// plus --config FILE ("name = value" lines). The file is applied first and the flags on top,
// so a flag always wins; everything is validated by Config (ranges, cross-knob rules) before
// the daemon starts.
#pragma once

#include <optional>
#include <string>

#include "core/base/knobs.h"

namespace mooncake {

// Fills `config`. Returns an exit code when the program should end now: 0 after --help or
// --version, 2 on a usage or configuration error (one clear line on stderr); nullopt to run.
// The configuration as a config file: every knob with its doc and range; knobs at their
// default are commented out. (`mooncaked --print_config`; etc/mooncake.conf.example is this
// at the defaults.)
std::string ConfigFileText(const Config& config);

// `config_file` receives the --config path ("" if none).
std::optional<int> ParseCommandLine(int argc, char** argv, Config& config,
                                    std::string* config_file);

}  // namespace mooncake
