// Two tenants sharing one store (issue 34): `steady` reads a Zipf hot set about its half of
// DRAM all the time; `burst` is quiet, then in bursts reads-and-puts one-off keys that add up
// to many times DRAM. Replayed through the real MasterStore (as StoreReplay, one node, virtual
// time) with quotas off (no tenant registered) and on (each tenant's MEMORY quota half of
// DRAM), it shows whether a tenant within its quota keeps its hot set while the other bursts.
//
// Deterministic in its seed (ZipfTrace's draws; the burst keys are sequential).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace mooncake::replay {

// A burst reads each of its keys (a miss, then the Put) and, burst_reread_after keys later,
// reads it once more; steady reads one of its keys every burst_keys_per_steady new keys.
struct TenantRef {
    bool steady = true;     // else the burst tenant
    bool in_burst = false;  // made during one of the burst tenant's bursts
    int64_t key = 0;        // the tenant's own key number (scoped per tenant)
};

struct TwoTenantWorkload {
    uint64_t capacity_objects = 0;  // MEMORY, objects: fraction x distinct keys
    uint64_t steady_keys = 0;
    uint64_t burst_keys = 0;
    std::vector<TenantRef> refs;
};

struct TwoTenantShape {
    uint64_t distinct = 20000;      // both tenants' keys together
    double fraction = 0.05;         // MEMORY as a share of `distinct`
    double steady_share = 0.45;     // steady's key space, as a share of MEMORY (its quota: 0.5)
    double skew = 0.9;              // steady's Zipf
    int bursts = 4;                 // the burst tenant's keys are split evenly among them
    double quiet_capacities = 3;    // steady-only reads between bursts, in MEMORY capacities
    int burst_keys_per_steady = 2;  // new burst keys per steady read during a burst
    // A burst key is read once more this many new keys after its Put (a request's KV reused by
    // its next step), so it is no colder than a steady key; 0: never re-read.
    int burst_reread_after = 8;
    uint64_t seed = 1;
};
TwoTenantWorkload MakeTwoTenantWorkload(const TwoTenantShape& shape);

struct TenantFigures {
    uint64_t reads = 0, memory_hits = 0, disk_hits = 0, misses = 0;
    uint64_t reads_in_bursts = 0, memory_hits_in_bursts = 0;
    uint64_t quota_evictions = 0, puts_refused = 0;  // MasterStore::Tenants()
    double memory_hit_ratio() const;
    double memory_hit_ratio_in_bursts() const;
    double memory_hit_ratio_outside_bursts() const;
};

struct TwoTenantRun {
    bool quotas = false;
    TenantFigures steady, burst;
};

// One replay; quotas: SetTenant(each, memory = half of MEMORY). `knobs`: extra settings.
Result<TwoTenantRun> RunTwoTenant(
    const TwoTenantWorkload& workload, bool quotas, uint64_t object_size = 65536,
    const std::vector<std::pair<std::string, std::string>>& knobs = {});

// {"workload":"two-tenant","fraction":F,"runs":[...]} and the short table.
std::string TwoTenantJson(double fraction, const std::vector<TwoTenantRun>& runs);
std::string TwoTenantTable(double fraction, const TwoTenantWorkload& workload,
                           const std::vector<TwoTenantRun>& runs);

}  // namespace mooncake::replay
