// mooncakectl's exit codes: the one place they are defined (DESIGN.md, "Contracts").
//
//   0  ok; a key already in the asked state counts as done
//   1  the store refused or failed (several keys: any one failed; each key's outcome printed)
//   2  usage error: unknown command or option, bad value (CLI11's parse errors map here)
//   3  key not found
//   4  the daemon cannot be reached (nothing listening, connect timeout, connection lost)
//
// Scripts depend on these numbers; never renumber them.
#pragma once

#include <span>

#include "core/base/status.h"

namespace mooncake::cli {

enum ExitCode : int {
    kExitOk = 0,
    kExitFailed = 1,
    kExitUsage = 2,
    kExitNotFound = 3,
    kExitUnreachable = 4,
};

// The exit code a failed store call leads to. Errors found by mooncakectl itself before any
// call (a malformed argument) are usage errors instead; they never come through here.
constexpr int ExitCodeFor(StatusCode code) {
    switch (code) {
        case StatusCode::kOk:
            return kExitOk;
        case StatusCode::kNotFound:
            return kExitNotFound;
        case StatusCode::kUnavailable:
        case StatusCode::kTimeout:
            return kExitUnreachable;
        default:
            return kExitFailed;
    }
}
inline int ExitCodeFor(const Status& status) { return ExitCodeFor(status.code()); }

// CLI11 ends a parse with its own codes: 0 for --help/--version, 100+ for parse errors.
constexpr int ExitCodeFromCli11(int cli11_code) { return cli11_code == 0 ? kExitOk : kExitUsage; }

// One exit code for a command over several keys: 0 when every key is done; 3 when the only
// failures are missing keys; otherwise the worst of the rest (4 beats 1: an unreachable daemon
// says more than a refusal).
int CombineExitCodes(std::span<const int> per_key);

}  // namespace mooncake::cli
