// The access token on the client side: where mooncakectl, mooncake-tierfs and mooncaked
// (its --auth_token_file, used by a node to reach the master and its peers) read it from.
// Never from argv: a command line is visible to every user of the machine (ps, /proc).
//
// Client precedence (ResolveClientToken): --auth_token_file FILE, else $MOONCAKE_AUTH_TOKEN_FILE
// (a path), else $MOONCAKE_AUTH_TOKEN (the token itself), else none (a read-only session on a
// daemon that has a token; everything on one that has none).
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace mooncake {

inline constexpr std::string_view kAuthTokenFileEnv = "MOONCAKE_AUTH_TOKEN_FILE";
inline constexpr std::string_view kAuthTokenEnv = "MOONCAKE_AUTH_TOKEN";

// The file's contents without trailing whitespace (a newline an editor added). kInvalidArgument
// naming the file when it cannot be read or holds no token; `what` names its source in that
// message ("--auth_token_file", "$MOONCAKE_AUTH_TOKEN_FILE").
Result<std::string> ReadTokenFile(const std::string& path,
                                  std::string_view what = "--auth_token_file");

// The token a client should present: from `flag_file` if non-empty, else the environment
// (above). "" when none is configured. Errors as ReadTokenFile's.
Result<std::string> ResolveClientToken(const std::string& flag_file);

}  // namespace mooncake
