// TenantLedger: each tenant's quota, what it holds in each tier, and its figures.
//
// Quotas come from a policy (a file the master loads, `mooncakectl tenant set|rm`, HA: etcd):
// per tenant a MEMORY and a LOCAL_DISK byte quota, 0 meaning none. Once any tenant is
// registered the store is in multi-tenant mode, and it is strict: a Put of a tenant the policy
// does not name is refused (the default tenant, the administrator's, is always allowed).
//
// Usage is counted where ObjectMeta's replicas change (core/master/object.cc through
// ObjectTallies): MEMORY bytes are DRAM ranges (SegmentAllocator::RoundUp of the size), a Put
// in progress included, so a tenant cannot race past its quota with puts it has not ended;
// LOCAL_DISK bytes are DiskFootprint, the same figure the node reports.
//
// Rules that use the ledger live in the store (core/master/store_eviction.cc, master_store.cc):
// a tenant over its MEMORY quota evicts its own coldest objects first; a tenant within its
// quota is protected from other tenants' evictions.
//
// Thread-safety: all methods may be called from any thread. Entries are created once and never
// freed (a removed tenant's entry keeps its figures, unregistered), so the hot path takes the
// map lock shared for a lookup and then touches only atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/metrics.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace mooncake {

struct TenantQuota {
    uint64_t memory_bytes = 0;  // 0: no MEMORY quota
    uint64_t disk_bytes = 0;    // 0: no LOCAL_DISK quota
    bool operator==(const TenantQuota&) const = default;
};

struct TenantPolicyEntry {
    std::string tenant;
    TenantQuota quota;
    bool operator==(const TenantPolicyEntry&) const = default;
};
using TenantPolicy = std::vector<TenantPolicyEntry>;

// The policy file: one tenant a line, `NAME [memory=SIZE] [disk=SIZE]` (SIZE as ParseSize
// reads it: 8GiB, 512M, 4096); blank lines and `#` comments are skipped. Errors name the line.
Result<TenantPolicy> ParseTenantPolicy(std::string_view text);
std::string FormatTenantPolicy(const TenantPolicy& policy);

// One tenant's line in `tenant ls`.
struct TenantRow {
    std::string tenant;
    bool registered = false;  // named by the policy (the default tenant always is)
    TenantQuota quota;
    uint64_t memory_bytes = 0;
    uint64_t memory_objects = 0;
    uint64_t disk_bytes = 0;
    uint64_t disk_objects = 0;
    uint64_t puts_refused = 0;     // Puts refused for its quota (or for not being registered)
    uint64_t quota_evictions = 0;  // its MEMORY replicas evicted because it was over quota
    uint64_t promotions = 0;       // promotions of its objects committed (charged to its quota)
};

class TenantLedger {
public:
    explicit TenantLedger(MetricsRegistry& metrics);
    TenantLedger(const TenantLedger&) = delete;
    TenantLedger& operator=(const TenantLedger&) = delete;

    // ---- policy ----
    // Replaces the whole policy (a file loaded, HA state read). Every name must pass
    // ValidateTenant; a name twice is refused.
    Status Load(const TenantPolicy& policy);
    // Registers `tenant` or changes its quota.
    Status Set(std::string_view tenant, TenantQuota quota);
    // Unregisters `tenant` (its objects are the caller's to remove). NotFound if unregistered;
    // InvalidArgument for the default tenant, which cannot be unregistered (it may have a
    // quota set to 0 instead).
    Status Unregister(std::string_view tenant);
    TenantPolicy Policy() const;  // registered tenants, by name
    // True once any tenant other than the default one is registered.
    bool multi_tenant() const { return multi_tenant_.load(std::memory_order_relaxed); }
    // Whether a Put of `tenant` is allowed: always in single-tenant mode; in multi-tenant mode
    // only for registered tenants and the default one.
    bool Admits(std::string_view tenant) const;
    TenantQuota QuotaOf(std::string_view tenant) const;

    // ---- usage (ObjectTallies) ----
    void CountMemory(std::string_view tenant, int objects, int64_t bytes);
    void CountDisk(std::string_view tenant, int objects, int64_t bytes);
    // MEMORY bytes already chosen for eviction whose offload has not ended (OffloadPipeline):
    // still held, but on their way out, so MemoryExcess does not have them evicted again.
    void CountLeaving(std::string_view tenant, int64_t bytes);
    uint64_t MemoryBytes(std::string_view tenant) const;
    // Bytes over its MEMORY quota (0 when within it, or it has none), less those leaving.
    uint64_t MemoryExcess(std::string_view tenant, uint64_t adding = 0) const;
    uint64_t DiskExcess(std::string_view tenant, uint64_t adding = 0) const;
    // Within a MEMORY quota it has: another tenant's eviction must not take its objects.
    bool ProtectedFromOthers(std::string_view tenant) const;

    // ---- figures ----
    void CountPutRefused(std::string_view tenant);
    void CountQuotaEviction(std::string_view tenant);
    void CountPromotion(std::string_view tenant);

    // Every tenant seen or registered, by name.
    std::vector<TenantRow> Rows() const;
    // Sum of the registered tenants' quotas (what `tenant ls` sets against capacity).
    TenantQuota QuotaSum() const;

private:
    struct Entry {
        Entry(MetricsRegistry& metrics, const std::string& name);
        std::atomic<bool> registered{false};
        std::atomic<uint64_t> memory_quota{0};
        std::atomic<uint64_t> disk_quota{0};
        std::atomic<int64_t> memory_bytes{0};
        std::atomic<int64_t> memory_objects{0};
        std::atomic<int64_t> disk_bytes{0};
        std::atomic<int64_t> memory_leaving{0};  // CountLeaving
        std::atomic<int64_t> disk_objects{0};
        // The same figures, as `tenant`-labelled series of /metrics.
        Gauge& memory_bytes_gauge;
        Gauge& memory_objects_gauge;
        Gauge& disk_bytes_gauge;
        Gauge& disk_objects_gauge;
        Gauge& memory_quota_gauge;
        Gauge& disk_quota_gauge;
        Counter& puts_refused;
        Counter& quota_evictions;
        Counter& promotions;
    };
    // The entry of `tenant`, created on first sight.
    Entry& EntryOf(std::string_view tenant);
    const Entry* Find(std::string_view tenant) const;
    void UpdateMode() MC_REQUIRES(mu_);

    MetricsRegistry& metrics_;
    mutable SharedMutex mu_;
    std::map<std::string, std::unique_ptr<Entry>, std::less<>> entries_ MC_GUARDED_BY(mu_);
    std::atomic<bool> multi_tenant_{false};
};

}  // namespace mooncake
