#include "daemon/tenant_policy_file.h"

#include "daemon/config_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mooncake {
namespace {

std::string Errno() { return std::strerror(errno); }

}  // namespace

Result<TenantPolicy> ReadTenantPolicyFile(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        if (errno == ENOENT) return TenantPolicy{};
        return Status::IoError("cannot read tenant policy file '" + path + "': " + Errno());
    }
    std::stringstream buf;
    buf << in.rdbuf();
    auto policy = ParseTenantPolicy(buf.str());
    if (!policy.ok()) {
        return Status(policy.status().code(),
                      "tenant policy file '" + path + "': " + policy.status().message());
    }
    return policy;
}

Status WriteTenantPolicyFile(const std::string& path, const TenantPolicy& policy) {
    const std::string text =
        "# mooncake tenant policy: NAME [memory=SIZE] [disk=SIZE]; rewritten by "
        "`mooncakectl tenant set|rm`\n" +
        FormatTenantPolicy(policy);
    Result<ConfigFileUpdate> update = ConfigFileUpdate::Stage(path, text);
    if (!update.ok()) return update.status();
    return update->Commit();
}

}  // namespace mooncake
