// The config/knob parser (core/base/knobs.h: ParseConfigText, SetMany, the value parsers) and the
// `tune set --persist` file rewrite (daemon/config_file.h: RewriteConfigText).
//
// Input: a config file's text, optionally followed by a NUL byte and `name=value` lines that
// play the part of a `tune set --persist` request.
//
// Properties:
//  - a file that fails to parse changes nothing (all or nothing);
//  - a file that parses leaves a valid config whose every value, printed by GetText, parses
//    back to itself; the whole snapshot written out as a file parses to the same config;
//  - a runtime assignment list that the config accepts, persisted into the file with
//    RewriteConfigText, gives a file that parses to exactly the tuned config (what a restart
//    sees is what the operator tuned).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/knobs.h"
#include "daemon/config_file.h"
#include "fuzz/fuzz_check.h"

using mooncake::Config;
using mooncake::KnobAssignments;
using mooncake::SetMode;

namespace {

KnobAssignments ParseAssignments(std::string_view text) {
    KnobAssignments out;
    while (!text.empty() && out.size() < 16) {
        size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        size_t eq = line.find('=');
        if (eq == std::string_view::npos) continue;
        out.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    }
    return out;
}

std::string Render(const Config& config) {
    std::string out;
    for (const auto& [name, value] : config.Snapshot()) out += name + " = " + value + "\n";
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    size_t nul = input.find('\0');
    std::string_view file = input.substr(0, nul);
    std::string_view tune = nul == std::string_view::npos ? std::string_view()
                                                          : input.substr(nul + 1);
    static const auto kDefaults = Config().Snapshot();

    Config config;
    if (!config.ParseConfigText(file, "fuzz").ok()) {
        FUZZ_CHECK(config.Snapshot() == kDefaults);
        return 0;
    }
    FUZZ_CHECK(config.Validate().ok());
    const auto snapshot = config.Snapshot();

    // Every value's text form parses back to the same value.
    Config copy;
    Config one(config);
    for (const auto& [name, value] : snapshot) FUZZ_CHECK(one.Set(name, value).ok());
    FUZZ_CHECK(one.Snapshot() == snapshot);
    FUZZ_CHECK(copy.ParseConfigText(Render(config)).ok());
    FUZZ_CHECK(copy.Snapshot() == snapshot);

    // tune set --persist: the rewritten file restarts into the tuned config.
    KnobAssignments assignments = ParseAssignments(tune);
    if (assignments.empty()) return 0;
    Config tuned(config);
    if (!tuned.SetMany(assignments, SetMode::kRuntime).ok()) {
        FUZZ_CHECK(tuned.Snapshot() == snapshot);
        return 0;
    }
    std::string rewritten = mooncake::RewriteConfigText(file, assignments);
    Config restarted;
    mooncake::Status st = restarted.ParseConfigText(rewritten, "rewritten");
    if (!st.ok()) {
        std::fprintf(stderr, "rewritten file does not parse: %s\n---\n%s---\n",
                     st.message().c_str(), rewritten.c_str());
    }
    FUZZ_CHECK(st.ok());
    FUZZ_CHECK(restarted.Snapshot() == tuned.Snapshot());
    return 0;
}
