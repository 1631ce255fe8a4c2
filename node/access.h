// Access control of mooncaked: who may call what. The one place that decides it.
//
// A daemon started with --auth_token_file has a token; without one (loopback only) every
// caller may do everything. With a token, each connection (control RPC or data channel) says
// Hello first:
//   - Hello with the right token        -> a full session: every call;
//   - Hello with an empty token         -> a read-only session: inspection and reads of
//                                          metadata work, anything that changes state is
//                                          refused with kIllegalClient (NeedsTokenMessage);
//   - Hello with a wrong, non-empty one -> refused at Hello (kIllegalClient), no session.
// Which call needs what is the tables in access.cc (kMasterMethods, kNodeMethods, and the
// data channel's ops); a method missing from them is refused (fail closed).
//
// Tokens are compared in constant time (TokenMatches).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace mooncake {

enum class Permission {
    kNone,     // before Hello (Hello itself)
    kRead,     // any greeted session: inspection, metadata reads
    kToken,    // a session that presented a token (the cluster's or a tenant's): writes, bytes
    kCluster,  // the cluster's token only: node-role calls, knobs, scrubs
};

// A tenant's own token (--tenant_tokens_file, core/base/tenant.h): a session that presents it
// is authorized in that tenant only: it names no other, and calls nothing that needs the
// cluster's token. The cluster's token (--auth_token_file) stays the administrator's.
struct TenantToken {
    std::string tenant;
    std::string token;
};

// Reads --tenant_tokens_file: one "TENANT TOKEN" per line (blank lines and lines starting with
// '#' skipped). kInvalidArgument naming the file and line for a bad tenant name, a missing or
// duplicate token, or a tenant named twice.
Result<std::vector<TenantToken>> ReadTenantTokensFile(const std::string& path);

struct MethodPermission {
    std::string_view method;
    Permission needs;
    std::string_view why;  // a short class for docs and errors: "read", "write", "admin", "node"
};

// Every MasterService method (the Thrift IDL's names) and what it needs.
std::span<const MethodPermission> MasterMethodPermissions();
// Every NodeService method.
std::span<const MethodPermission> NodeMethodPermissions();
// The data channel's requests: "hello", "ping", "read", "write".
std::span<const MethodPermission> DataOpPermissions();

// What a connection has proved so far.
struct Credentials {
    bool greeted = false;     // said Hello (with an accepted token or none)
    bool authorized = false;  // the token matched, or the daemon has none
    std::string tenant;       // non-empty: authorized by this tenant's token, in it only
};

// The outcome of a Hello carrying `given`, on a daemon whose token is `expected` ("" = none)
// and whose tenants' tokens are `tenants`. kIllegalClient for a wrong non-empty token; else
// the session's credentials.
Result<Credentials> Authenticate(std::string_view expected, std::string_view given,
                                 std::span<const TenantToken> tenants = {});

// Ok when `creds` may call `method` of `table`; kIllegalClient naming what is missing
// otherwise (a method absent from the table is refused).
Status CheckAccess(std::span<const MethodPermission> table, std::string_view method,
                   const Credentials& creds);

// "<method> needs the access token ...": the refusal every read-only session gets.
std::string NeedsTokenMessage(std::string_view method);

// Constant-time in the length of `expected`: no early exit on the first differing byte, and
// a length mismatch costs the same as a content mismatch.
bool TokenMatches(std::string_view expected, std::string_view given);

}  // namespace mooncake
