#include "node/access.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/base/tenant.h"
#include "thrift/auth_token.h"

namespace mooncake {
namespace {

using P = Permission;

// The MasterService methods of thrift/mooncake.thrift. Reads of metadata (GetReplicaList
// grants a lease and counts toward promotion, as any reader's Get does) and inspection need
// a greeted session; everything that creates, removes or moves data, changes knobs, or acts
// as a node needs the token.
constexpr MethodPermission kMasterMethods[] = {
    {"Hello", P::kNone, "session"},
    // clients: object lifecycle
    {"PutStart", P::kToken, "write"},
    {"PutEnd", P::kToken, "write"},
    {"PutRevoke", P::kToken, "write"},
    {"GetReplicaList", P::kRead, "read"},
    {"Remove", P::kToken, "write"},
    {"Exists", P::kRead, "read"},
    {"BatchPutStart", P::kToken, "write"},
    {"BatchPutEnd", P::kToken, "write"},
    {"BatchPutRevoke", P::kToken, "write"},
    {"BatchGetReplicaList", P::kRead, "read"},
    {"BatchRemove", P::kToken, "write"},
    {"BatchExists", P::kRead, "read"},
    {"RemoveByPrefix", P::kToken, "write"},
    // nodes
    {"RegisterNode", P::kCluster, "node"},
    {"Heartbeat", P::kCluster, "node"},
    {"UnregisterNode", P::kCluster, "node"},
    {"RegisterDiskReplicas", P::kCluster, "node"},
    {"RegisterMemoryReplicas", P::kCluster, "node"},
    {"ReportDiskReplicaDropped", P::kCluster, "node"},
    {"ReportNodeHealth", P::kCluster, "node"},
    {"OffloadObjectHeartbeat", P::kCluster, "node"},
    {"NotifyOffloadSuccess", P::kCluster, "node"},
    {"NotifyOffloadFailure", P::kCluster, "node"},
    {"PromotionObjectHeartbeat", P::kCluster, "node"},
    {"PromotionAllocStart", P::kCluster, "node"},
    {"NotifyPromotionSuccess", P::kCluster, "node"},
    {"NotifyPromotionFailure", P::kCluster, "node"},
    // admin
    {"Stat", P::kRead, "read"},
    {"List", P::kRead, "read"},
    {"Nodes", P::kRead, "read"},
    {"Tasks", P::kRead, "read"},
    {"Hot", P::kRead, "read"},
    {"TuneGet", P::kRead, "read"},
    {"TuneSet", P::kCluster, "admin"},
    {"MetricsText", P::kRead, "read"},
    {"Promote", P::kToken, "admin"},
    {"Offload", P::kToken, "admin"},
    {"Evict", P::kToken, "admin"},
    {"CheckInvariants", P::kRead, "read"},
    {"Scrub", P::kCluster, "admin"},  // drops the corrupt records it finds
    {"TenantList", P::kRead, "read"},  // a tenant's session sees its own row only
    {"TenantSet", P::kCluster, "admin"},
    {"TenantRemove", P::kCluster, "admin"},
};

constexpr MethodPermission kNodeMethods[] = {
    {"Hello", P::kNone, "session"},
    {"GetStatus", P::kRead, "read"},
    {"MetricsText", P::kRead, "read"},
    // Drops the corrupt records it finds: a change, so the token's.
    {"Scrub", P::kCluster, "write"},
};

// Object bytes are data: reading them needs the token as much as writing them does.
constexpr MethodPermission kDataOps[] = {
    {"hello", P::kNone, "session"},
    {"ping", P::kRead, "read"},
    {"read", P::kToken, "data"},
    {"write", P::kToken, "data"},
};

}  // namespace

std::span<const MethodPermission> MasterMethodPermissions() { return kMasterMethods; }
std::span<const MethodPermission> NodeMethodPermissions() { return kNodeMethods; }
std::span<const MethodPermission> DataOpPermissions() { return kDataOps; }

bool TokenMatches(std::string_view expected, std::string_view given) {
    // Every byte of `expected` is compared, whatever `given` is; the differences are OR-ed,
    // never branched on.
    unsigned char diff = expected.size() == given.size() ? 0 : 1;
    for (size_t i = 0; i < expected.size(); ++i) {
        unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
        diff |= static_cast<unsigned char>(static_cast<unsigned char>(expected[i]) ^ g);
    }
    return diff == 0;
}

Result<Credentials> Authenticate(std::string_view expected, std::string_view given,
                                 std::span<const TenantToken> tenants) {
    if (expected.empty()) return Credentials{true, true, {}};
    if (given.empty()) return Credentials{true, false, {}};  // read-only session
    if (TokenMatches(expected, given)) return Credentials{true, true, {}};
    // Every tenant's token is compared (no early exit): the time says nothing of which.
    const TenantToken* match = nullptr;
    for (const TenantToken& t : tenants) {
        if (TokenMatches(t.token, given) && match == nullptr) match = &t;
    }
    if (match == nullptr) return Status::IllegalClient("auth token refused");
    return Credentials{true, true, match->tenant};
}

Result<std::vector<TenantToken>> ReadTenantTokensFile(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        return Status::InvalidArgument("--tenant_tokens_file " + path + ": cannot be read: " +
                                       std::strerror(errno));
    }
    std::vector<TenantToken> out;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        auto bad = [&](const std::string& why) {
            return Status::InvalidArgument("--tenant_tokens_file " + path + " line " +
                                           std::to_string(number) + ": " + why);
        };
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
            line.pop_back();
        }
        size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#') continue;
        size_t end = line.find_first_of(" \t", start);
        if (end == std::string::npos) return bad("a tenant without a token");
        TenantToken t{line.substr(start, end - start), {}};
        size_t token = line.find_first_not_of(" \t", end);
        t.token = line.substr(token);
        if (Status st = ValidateTenant(t.tenant); !st.ok()) return bad(st.message());
        if (t.tenant == kDefaultTenant) return bad("the default tenant's token is the cluster's");
        for (const TenantToken& seen : out) {
            if (seen.tenant == t.tenant) return bad("tenant '" + t.tenant + "' named twice");
            if (seen.token == t.token) {
                return bad("tenant '" + t.tenant + "' has the token of '" + seen.tenant + "'");
            }
        }
        out.push_back(std::move(t));
    }
    return out;
}

std::string NeedsTokenMessage(std::string_view method) {
    return std::string(method) + " needs the access token (--auth_token_file, " +
           std::string(kAuthTokenFileEnv) + " or " + std::string(kAuthTokenEnv) +
           "); without it a connection may only inspect";
}

Status CheckAccess(std::span<const MethodPermission> table, std::string_view method,
                   const Credentials& creds) {
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const MethodPermission& m) { return m.method == method; });
    if (it == table.end()) {
        return Status::IllegalClient("'" + std::string(method) + "' is not a known call");
    }
    switch (it->needs) {
        case P::kNone: return Status::Ok();
        case P::kRead:
            if (!creds.greeted) return Status::IllegalClient("call Hello first");
            return Status::Ok();
        case P::kToken:
        case P::kCluster:
            if (!creds.greeted) return Status::IllegalClient("call Hello first");
            if (!creds.authorized) {
                std::string what = it->why == "data" ? "a data channel " + std::string(method)
                                                     : std::string(method);
                return Status::IllegalClient(NeedsTokenMessage(what));
            }
            if (it->needs == P::kCluster && !creds.tenant.empty()) {
                return Status::IllegalClient(std::string(method) +
                                             " needs the cluster's token; the token of tenant '" +
                                             creds.tenant + "' acts in that tenant only");
            }
            return Status::Ok();
    }
    return Status::IllegalClient("refused");
}

}  // namespace mooncake
