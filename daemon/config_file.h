// Writing runtime tuning back into the daemon's --config file (`mooncakectl tune set
// --persist`), so a restart keeps what an operator tuned.
//
// The rewrite keeps the file as the operator wrote it: each assigned knob's active
// `name = value` line is replaced in place (comments, order and other lines untouched); a knob
// with no active line is appended. The new text goes to a temporary file in the same
// directory (fsynced) first, so nothing changes unless the whole file can be written, and
// Commit() renames it over the original atomically.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"

namespace mooncake {

using KnobAssignments = std::vector<std::pair<std::string, std::string>>;

// Pure: `text` with the assignments applied as described above.
std::string RewriteConfigText(std::string_view text, const KnobAssignments& assignments);

class ConfigFileUpdate {
public:
    // Reads `path`, rewrites it into `path`.tmp.<pid>. kInvalidArgument if there is no path;
    // kIoError naming the file if it cannot be read or the temporary cannot be written.
    static Result<ConfigFileUpdate> Prepare(const std::string& path,
                                            const KnobAssignments& assignments);
    // Writes `text` into `path`.tmp.<pid> (fsynced) to replace `path` at Commit: any file the
    // daemon rewrites whole (the tenant policy file, daemon/tenant_policy_file.h).
    static Result<ConfigFileUpdate> Stage(const std::string& path, std::string_view text);
    ConfigFileUpdate(ConfigFileUpdate&& other) noexcept;
    ConfigFileUpdate& operator=(ConfigFileUpdate&&) = delete;
    ~ConfigFileUpdate();  // removes the temporary unless committed

    Status Commit();  // rename over the original, then fsync its directory

private:
    ConfigFileUpdate(std::string path, std::string temp) : path_(path), temp_(temp) {}
    std::string path_;
    std::string temp_;  // empty once committed or moved from
};

}  // namespace mooncake
