// Tenants' quotas (core/master/tenant_ledger.h): the policy's administration, and the rules
// that keep each tenant within its quotas without touching the others.
//
//   MEMORY      A Put (or a promotion) that would take its tenant past its MEMORY quota first
//               evicts that tenant's own coldest objects (offloaded to LOCAL_DISK, as any
//               eviction); if they cannot make the room, the Put is refused with NoSpace.
//               An allocation's eviction for room then passes over the objects of every other
//               tenant within a MEMORY quota; only a tenant within its own quota may, when
//               nothing else is left (quotas adding up past DRAM), take them.
//   LOCAL_DISK  A tenant past its disk quota loses its coldest disk-only objects at the next
//               tick (EnforceTenantQuotas): offloads are never refused, as that would keep
//               the bytes in DRAM.
#include <algorithm>
#include <optional>
#include <tuple>

#include <spdlog/spdlog.h>

#include "core/master/master_store.h"

namespace mooncake {

// ---------------- the eviction scope ----------------

CandidateFilter EvictionScope::Filter(const TenantLedger& ledger) const {
    switch (kind) {
        case kAnyone:
            return {};
        case kOnlyTenant:
            return [tenant = tenant](const ObjectMeta& meta) {
                return TenantOfKey(*meta.key) == tenant;
            };
        case kUnprotected:
            return [tenant = tenant, &ledger](const ObjectMeta& meta) {
                std::string_view owner = TenantOfKey(*meta.key);
                return owner == tenant || !ledger.ProtectedFromOthers(owner);
            };
    }
    return {};
}

EvictionScope MasterStore::RoomScope(std::string_view tenant) const {
    // No tenant has a MEMORY quota (the common case, one tenant): no filter, no cost.
    if (!tenants_.any_memory_quota()) return {};
    return {EvictionScope::kUnprotected, std::string(tenant), 0, {}};
}

Result<DramPool::Allocation> MasterStore::AllocateWithEviction(std::string_view key,
                                                                  uint64_t size,
                                                                  NodeId preferred, Nanos wait) {
    const std::string_view tenant = TenantOfKey(key);
    MC_RETURN_IF_ERROR(MakeTenantRoom(tenant, SegmentAllocator::RoundUp(size)));
    const EvictionScope scope = RoomScope(tenant);
    Result<DramPool::Allocation> alloc =
        dram_.Allocate(size, preferred, wait,
                       [this, &scope](uint64_t bytes) { return EvictColdest(bytes, scope).freed; });
    if (alloc.ok() || !alloc.status().Is(StatusCode::kNoSpace) ||
        scope.kind == EvictionScope::kAnyone || tenants_.QuotaOf(tenant).memory_bytes == 0) {
        return alloc;
    }
    // Quotas add up past DRAM (Tenants() warns of it): a tenant within its own quota is owed
    // the room, and takes it from the coldest objects of anyone.
    return dram_.Allocate(size, preferred, wait,
                          [this](uint64_t bytes) { return EvictColdest(bytes).freed; });
}

Status MasterStore::MakeTenantRoom(std::string_view tenant, uint64_t adding) {
    const uint64_t quota = tenants_.QuotaOf(tenant).memory_bytes;
    if (quota == 0) return Status::Ok();
    if (adding > quota) {
        return Status::NoSpace("an object of " + FormatSize(adding) + " is larger than tenant '" +
                               std::string(tenant) + "''s MEMORY quota (" + FormatSize(quota) +
                               ")");
    }
    const uint64_t excess = tenants_.MemoryExcess(tenant, adding);
    if (excess == 0) return Status::Ok();
    EvictResult evicted = EvictColdest(excess, {EvictionScope::kOnlyTenant, std::string(tenant), 0, {}});
    for (size_t i = 0; i < evicted.victims; ++i) tenants_.CountQuotaEviction(tenant);
    if (evicted.freed + evicted.pending >= excess) return Status::Ok();
    return Status::NoSpace("tenant '" + std::string(tenant) + "' is at its MEMORY quota (" +
                           FormatSize(tenants_.MemoryBytes(tenant)) + " of " +
                           FormatSize(quota) + ") and none of its objects can be evicted now");
}

// ---------------- enforcement at ticks ----------------

size_t MasterStore::TrimTenantDisk(std::string_view tenant, uint64_t excess) {
    struct Cold {
        uint64_t recency;
        std::string key;
        Generation generation;
        uint64_t bytes;
    };
    std::vector<Cold> cold;
    const Nanos now = clock_.Now();
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        for (auto& [key, meta] : shard.objects) {
            if (TenantOfKey(key) != tenant || !meta.DiskOnly()) continue;
            if (meta.promotion || meta.offload || meta.Leased(now)) continue;
            cold.push_back({meta.recency, key, meta.generation, DiskFootprint(meta.size)});
        }
    }
    std::sort(cold.begin(), cold.end(),
              [](const Cold& a, const Cold& b) { return a.recency < b.recency; });
    uint64_t dropped_bytes = 0;
    size_t dropped = 0;
    for (const Cold& c : cold) {
        if (dropped_bytes >= excess) break;
        Shard& shard = table_.ShardFor(c.key);
        MutexLock lock(shard.mu);
        auto it = shard.objects.find(c.key);
        if (it == shard.objects.end() || it->second.generation != c.generation) continue;
        ObjectMeta& meta = it->second;
        if (!meta.DiskOnly() || meta.promotion || meta.offload || meta.Leased(now)) continue;
        DestroyObject(shard, meta);
        dropped_bytes += c.bytes;
        ++dropped;
        tenants_.CountQuotaEviction(tenant);
    }
    if (dropped > 0) {
        spdlog::info("tenant '{}' was {} over its LOCAL_DISK quota: dropped its {} coldest "
                     "disk-only objects ({})",
                     tenant, FormatSize(excess), dropped, FormatSize(dropped_bytes));
    }
    return dropped;
}

size_t MasterStore::EnforceTenantQuotas() {
    if (!tenants_.multi_tenant() && tenants_.Policy().empty()) return 0;
    size_t taken = 0;
    for (const TenantRow& row : tenants_.Rows()) {
        if (const uint64_t excess = tenants_.MemoryExcess(row.tenant); excess > 0) {
            // A quota lowered, or puts raced past it: the tenant's own objects go.
            EvictResult evicted =
                EvictColdest(excess, {EvictionScope::kOnlyTenant, row.tenant, 0, {}});
            for (size_t i = 0; i < evicted.victims; ++i) tenants_.CountQuotaEviction(row.tenant);
            taken += evicted.victims;
        }
        if (row.quota.disk_bytes != 0 && row.disk_bytes > row.quota.disk_bytes) {
            taken += TrimTenantDisk(row.tenant, row.disk_bytes - row.quota.disk_bytes);
        }
    }
    return taken;
}

// ---------------- administration ----------------

MasterStore::TenantReport MasterStore::Tenants() const {
    TenantReport report;
    report.tenants = tenants_.Rows();
    report.quota_sum = tenants_.QuotaSum();
    report.memory_capacity = dram_.Capacity();
    report.disk_capacity = nodes_.DiskCapacity();
    report.multi_tenant = tenants_.multi_tenant();
    auto over = [&](const char* tier, uint64_t quota, uint64_t capacity) {
        return quota != 0 && quota > capacity ? " is larger than the live nodes' " +
                                                    std::string(tier) + " (" +
                                                    FormatSize(capacity) + ")"
                                              : std::string();
    };
    for (const TenantRow& row : report.tenants) {
        if (!row.registered) continue;
        for (auto [tier, quota, capacity] :
             {std::tuple("MEMORY", row.quota.memory_bytes, report.memory_capacity),
              std::tuple("LOCAL_DISK", row.quota.disk_bytes, report.disk_capacity)}) {
            if (std::string why = over(tier, quota, capacity); !why.empty()) {
                report.warnings.push_back("tenant '" + row.tenant + "''s " + tier + " quota (" +
                                          FormatSize(quota) + ")" + why);
            }
        }
    }
    for (auto [tier, quota, capacity] :
         {std::tuple("MEMORY", report.quota_sum.memory_bytes, report.memory_capacity),
          std::tuple("LOCAL_DISK", report.quota_sum.disk_bytes, report.disk_capacity)}) {
        if (std::string why = over(tier, quota, capacity); !why.empty()) {
            report.warnings.push_back("the tenants' " + std::string(tier) + " quotas add up to " +
                                      FormatSize(quota) + ", which" + why +
                                      ": a tenant within its quota may still lose objects to "
                                      "another's");
        }
    }
    return report;
}

void MasterStore::SetTenantPolicyWriter(TenantPolicyWriter writer) {
    MutexLock lock(tenant_admin_mu_);
    tenant_writer_ = std::move(writer);
}

Status MasterStore::LoadTenantPolicy(const TenantPolicy& policy) {
    MutexLock lock(tenant_admin_mu_);
    return tenants_.Load(policy);
}

namespace {

// `policy` with `tenant`'s entry replaced (quota set) or removed (nullopt).
TenantPolicy WithEntry(TenantPolicy policy, std::string_view tenant,
                       std::optional<TenantQuota> quota) {
    std::erase_if(policy, [&](const TenantPolicyEntry& e) { return e.tenant == tenant; });
    if (quota) {
        policy.push_back({std::string(tenant), *quota});
        std::sort(policy.begin(), policy.end(),
                  [](const TenantPolicyEntry& a, const TenantPolicyEntry& b) {
                      return a.tenant < b.tenant;
                  });
    }
    return policy;
}

}  // namespace

Result<MasterStore::TenantReport> MasterStore::SetTenant(std::string_view tenant,
                                                         TenantQuota quota) {
    if (tenant.empty()) tenant = kDefaultTenant;
    MC_RETURN_IF_ERROR(ValidateTenant(tenant));
    {
        MutexLock lock(tenant_admin_mu_);
        if (tenant_writer_) {
            MC_RETURN_IF_ERROR(tenant_writer_(WithEntry(tenants_.Policy(), tenant, quota)));
        }
        MC_RETURN_IF_ERROR(tenants_.Set(tenant, quota));
    }
    spdlog::info("tenant '{}' registered: MEMORY quota {}, LOCAL_DISK quota {}", tenant,
                 quota.memory_bytes ? FormatSize(quota.memory_bytes) : "none",
                 quota.disk_bytes ? FormatSize(quota.disk_bytes) : "none");
    return Tenants();
}

Result<MasterStore::TenantReport> MasterStore::RemoveTenant(std::string_view tenant, bool purge,
                                                            size_t* removed) {
    if (removed != nullptr) *removed = 0;
    MC_RETURN_IF_ERROR(ValidateTenant(tenant));
    if (tenant == kDefaultTenant) {
        return Status::InvalidArgument(
            "the default tenant cannot be removed (set its quotas to 0 to lift them)");
    }
    Result<KeyScope> scope = KeyScope::Make(tenant);
    if (!scope.ok()) return scope.status();
    MutexLock lock(tenant_admin_mu_);
    const TenantPolicy policy = tenants_.Policy();
    if (std::none_of(policy.begin(), policy.end(),
                     [&](const TenantPolicyEntry& e) { return e.tenant == tenant; })) {
        return Status::NotFound("tenant '" + std::string(tenant) + "' is not registered");
    }
    if (!purge) {
        for (const TenantRow& row : tenants_.Rows()) {
            if (row.tenant != tenant || row.memory_objects + row.disk_objects == 0) continue;
            return Status::InvalidArgument(
                "tenant '" + std::string(tenant) + "' still holds " +
                std::to_string(row.memory_objects) + " MEMORY and " +
                std::to_string(row.disk_objects) +
                " LOCAL_DISK replicas: remove them first, or pass --purge to remove them with it");
        }
    }
    if (tenant_writer_) {
        MC_RETURN_IF_ERROR(tenant_writer_(WithEntry(policy, tenant, std::nullopt)));
    }
    // Unregistered first: no new Put of the tenant starts once its objects are going.
    MC_RETURN_IF_ERROR(tenants_.Unregister(tenant));
    if (purge) {
        Status error;
        const size_t n = RemoveByPrefix(scope->ScopePrefix(""), /*force=*/true, nullptr, &error,
                                        *scope);
        if (removed != nullptr) *removed = n;
        if (!error.ok()) return error;
        spdlog::info("tenant '{}' removed with its {} objects", tenant, n);
    } else {
        spdlog::info("tenant '{}' removed", tenant);
    }
    return Tenants();
}

}  // namespace mooncake
