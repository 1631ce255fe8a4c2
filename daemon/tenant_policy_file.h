// daemon/tenant_policy_file.h — the --tenant_policy_file on disk: read at start, rewritten
// atomically (temporary file in the same directory, fsync, rename) before a `tenant set|rm`
// takes effect (MasterStore::SetTenantPolicyWriter). The format is core's
// (ParseTenantPolicy / FormatTenantPolicy).
#pragma once

#include <string>

#include "core/base/status.h"
#include "core/master/tenant_ledger.h"

namespace mooncake {

// A missing file is an empty policy (the first `tenant set` creates it); a bad line is
// kInvalidArgument naming the file and the line.
Result<TenantPolicy> ReadTenantPolicyFile(const std::string& path);
// Replaces the file with `policy`, all or nothing.
Status WriteTenantPolicyFile(const std::string& path, const TenantPolicy& policy);

}  // namespace mooncake
