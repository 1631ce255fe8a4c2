#include "core/master/tenant_ledger.h"

#include <set>

#include "core/base/tenant.h"

namespace mooncake {
namespace {

std::string_view Trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

std::vector<std::string_view> Words(std::string_view line) {
    std::vector<std::string_view> out;
    while (true) {
        line = Trim(line);
        if (line.empty()) return out;
        size_t end = line.find_first_of(" \t");
        out.push_back(line.substr(0, end));
        if (end == std::string_view::npos) return out;
        line.remove_prefix(end);
    }
}

// "" for the default tenant is its name.
std::string_view Named(std::string_view tenant) {
    return tenant.empty() ? kDefaultTenant : tenant;
}

uint64_t Positive(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

}  // namespace

Result<TenantPolicy> ParseTenantPolicy(std::string_view text) {
    TenantPolicy policy;
    std::set<std::string, std::less<>> seen;
    size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        if (size_t hash = line.find('#'); hash != std::string_view::npos) {
            line = line.substr(0, hash);
        }
        std::vector<std::string_view> words = Words(line);
        if (words.empty()) continue;
        auto where = [&] { return "tenant policy line " + std::to_string(line_no) + ": "; };
        TenantPolicyEntry entry;
        entry.tenant = std::string(words[0]);
        if (Status s = ValidateTenant(entry.tenant); !s.ok()) {
            return Status::InvalidArgument(where() + s.message());
        }
        if (!seen.insert(entry.tenant).second) {
            return Status::InvalidArgument(where() + "tenant '" + entry.tenant +
                                           "' is named twice");
        }
        for (size_t i = 1; i < words.size(); ++i) {
            std::string_view word = words[i];
            size_t eq = word.find('=');
            std::string_view name = word.substr(0, eq);
            if (eq == std::string_view::npos || (name != "memory" && name != "disk")) {
                return Status::InvalidArgument(where() + "expected memory=SIZE or disk=SIZE, got '" +
                                               std::string(word) + "'");
            }
            Result<uint64_t> size = ParseSize(word.substr(eq + 1));
            if (!size.ok()) return Status::InvalidArgument(where() + size.status().message());
            (name == "memory" ? entry.quota.memory_bytes : entry.quota.disk_bytes) = *size;
        }
        policy.push_back(std::move(entry));
    }
    return policy;
}

std::string FormatTenantPolicy(const TenantPolicy& policy) {
    std::string out =
        "# Tenants and their quotas (mooncake-tier): NAME [memory=SIZE] [disk=SIZE]\n";
    for (const TenantPolicyEntry& e : policy) {
        out += e.tenant;
        if (e.quota.memory_bytes) out += " memory=" + FormatSize(e.quota.memory_bytes);
        if (e.quota.disk_bytes) out += " disk=" + FormatSize(e.quota.disk_bytes);
        out += '\n';
    }
    return out;
}

TenantLedger::Entry::Entry(MetricsRegistry& m, const std::string& name)
    : memory_bytes_gauge(m.GetGauge("tenant_memory_bytes",
                                    "DRAM bytes a tenant's MEMORY replicas hold (puts in "
                                    "progress included)",
                                    {{"tenant", name}})),
      memory_objects_gauge(m.GetGauge("tenant_memory_objects",
                                      "a tenant's MEMORY replicas (puts in progress included)",
                                      {{"tenant", name}})),
      disk_bytes_gauge(m.GetGauge("tenant_disk_bytes", "LOCAL_DISK bytes a tenant's copies take",
                                  {{"tenant", name}})),
      disk_objects_gauge(m.GetGauge("tenant_disk_objects", "a tenant's LOCAL_DISK copies",
                                    {{"tenant", name}})),
      memory_quota_gauge(m.GetGauge("tenant_memory_quota_bytes",
                                    "a tenant's MEMORY quota (0: none)", {{"tenant", name}})),
      disk_quota_gauge(m.GetGauge("tenant_disk_quota_bytes",
                                  "a tenant's LOCAL_DISK quota (0: none)", {{"tenant", name}})),
      puts_refused(m.GetCounter("tenant_puts_refused_total",
                                "Puts refused for a tenant's quota, or because multi-tenant "
                                "mode is on and the tenant is not registered",
                                {{"tenant", name}})),
      quota_evictions(m.GetCounter("tenant_quota_evictions_total",
                                   "a tenant's MEMORY replicas evicted because it was over its "
                                   "MEMORY quota",
                                   {{"tenant", name}})),
      promotions(m.GetCounter("tenant_promotions_total",
                              "promotions of a tenant's objects committed (charged to its quota)",
                              {{"tenant", name}})) {}

TenantLedger::TenantLedger(MetricsRegistry& metrics) : metrics_(metrics) {
    default_entry_ = &EntryOf(kDefaultTenant);
    default_entry_->registered = true;
}

TenantLedger::Entry& TenantLedger::EntryOf(std::string_view tenant) {
    tenant = Named(tenant);
    if (tenant == kDefaultTenant && default_entry_ != nullptr) return *default_entry_;
    {
        ReaderLock lock(mu_);
        auto it = entries_.find(tenant);
        if (it != entries_.end()) return *it->second;
    }
    WriterLock lock(mu_);
    auto it = entries_.find(tenant);
    if (it == entries_.end()) {
        std::string name(tenant);
        it = entries_.emplace(name, std::make_unique<Entry>(metrics_, name)).first;
    }
    return *it->second;
}

const TenantLedger::Entry* TenantLedger::Find(std::string_view tenant) const {
    if (Named(tenant) == kDefaultTenant) return default_entry_;
    ReaderLock lock(mu_);
    auto it = entries_.find(Named(tenant));
    return it == entries_.end() ? nullptr : it->second.get();
}

void TenantLedger::UpdateMode() {
    bool multi = false, memory_quota = false;
    for (const auto& [name, entry] : entries_) {
        if (name != kDefaultTenant && entry->registered.load()) multi = true;
        if (entry->memory_quota.load() != 0) memory_quota = true;
    }
    multi_tenant_.store(multi, std::memory_order_relaxed);
    any_memory_quota_.store(memory_quota, std::memory_order_relaxed);
}

namespace {

void Apply(std::atomic<bool>& registered, std::atomic<uint64_t>& memory_quota,
           std::atomic<uint64_t>& disk_quota, Gauge& memory_gauge, Gauge& disk_gauge,
           bool reg, TenantQuota quota) {
    registered = reg;
    memory_quota = quota.memory_bytes;
    disk_quota = quota.disk_bytes;
    memory_gauge.Set(static_cast<double>(quota.memory_bytes));
    disk_gauge.Set(static_cast<double>(quota.disk_bytes));
}

}  // namespace

Status TenantLedger::Load(const TenantPolicy& policy) {
    std::set<std::string_view> named;
    for (const TenantPolicyEntry& e : policy) {
        MC_RETURN_IF_ERROR(ValidateTenant(e.tenant));
        if (!named.insert(e.tenant).second) {
            return Status::InvalidArgument("tenant '" + e.tenant + "' is named twice");
        }
    }
    for (const TenantPolicyEntry& e : policy) EntryOf(e.tenant);
    WriterLock lock(mu_);
    for (auto& [name, entry] : entries_) {
        TenantQuota quota;
        bool reg = name == kDefaultTenant;
        for (const TenantPolicyEntry& e : policy) {
            if (e.tenant == name) {
                quota = e.quota;
                reg = true;
            }
        }
        Apply(entry->registered, entry->memory_quota, entry->disk_quota,
              entry->memory_quota_gauge, entry->disk_quota_gauge, reg, quota);
    }
    UpdateMode();
    return Status::Ok();
}

Status TenantLedger::Set(std::string_view tenant, TenantQuota quota) {
    MC_RETURN_IF_ERROR(ValidateTenant(Named(tenant)));
    Entry& entry = EntryOf(tenant);
    WriterLock lock(mu_);
    Apply(entry.registered, entry.memory_quota, entry.disk_quota, entry.memory_quota_gauge,
          entry.disk_quota_gauge, true, quota);
    UpdateMode();
    return Status::Ok();
}

Status TenantLedger::Unregister(std::string_view tenant) {
    if (Named(tenant) == kDefaultTenant) {
        return Status::InvalidArgument(
            "the default tenant cannot be removed (set its quotas to 0 to lift them)");
    }
    WriterLock lock(mu_);
    auto it = entries_.find(tenant);
    if (it == entries_.end() || !it->second->registered.load()) {
        return Status::NotFound("tenant '" + std::string(tenant) + "' is not registered");
    }
    Entry& entry = *it->second;
    Apply(entry.registered, entry.memory_quota, entry.disk_quota, entry.memory_quota_gauge,
          entry.disk_quota_gauge, false, {});
    UpdateMode();
    return Status::Ok();
}

TenantPolicy TenantLedger::Policy() const {
    TenantPolicy out;
    ReaderLock lock(mu_);
    for (const auto& [name, entry] : entries_) {
        if (!entry->registered.load()) continue;
        TenantQuota quota{entry->memory_quota.load(), entry->disk_quota.load()};
        // The default tenant is listed only when it has a quota: it is always registered.
        if (name == kDefaultTenant && quota == TenantQuota{}) continue;
        out.push_back({name, quota});
    }
    return out;
}

bool TenantLedger::Admits(std::string_view tenant) const {
    if (!multi_tenant() || Named(tenant) == kDefaultTenant) return true;
    const Entry* entry = Find(tenant);
    return entry != nullptr && entry->registered.load(std::memory_order_relaxed);
}

TenantQuota TenantLedger::QuotaOf(std::string_view tenant) const {
    const Entry* entry = Find(tenant);
    if (entry == nullptr) return {};
    return {entry->memory_quota.load(std::memory_order_relaxed),
            entry->disk_quota.load(std::memory_order_relaxed)};
}

namespace {

// One tier's usage of a tenant, and its /metrics gauges.
void Count(std::atomic<int64_t>& bytes, std::atomic<int64_t>& objects, Gauge& bytes_gauge,
           Gauge& objects_gauge, int delta_objects, int64_t delta_bytes) {
    const int64_t b = bytes.fetch_add(delta_bytes, std::memory_order_relaxed) + delta_bytes;
    const int64_t o =
        objects.fetch_add(delta_objects, std::memory_order_relaxed) + delta_objects;
    bytes_gauge.Set(static_cast<double>(b));
    objects_gauge.Set(static_cast<double>(o));
}

}  // namespace

void TenantLedger::CountMemory(std::string_view tenant, int objects, int64_t bytes) {
    Entry& e = EntryOf(tenant);
    Count(e.memory_bytes, e.memory_objects, e.memory_bytes_gauge, e.memory_objects_gauge, objects,
          bytes);
}

void TenantLedger::CountDisk(std::string_view tenant, int objects, int64_t bytes) {
    Entry& e = EntryOf(tenant);
    Count(e.disk_bytes, e.disk_objects, e.disk_bytes_gauge, e.disk_objects_gauge, objects, bytes);
}

void TenantLedger::CountLeaving(std::string_view tenant, int64_t bytes) {
    EntryOf(tenant).memory_leaving.fetch_add(bytes, std::memory_order_relaxed);
}

uint64_t TenantLedger::MemoryBytes(std::string_view tenant) const {
    const Entry* entry = Find(tenant);
    return entry ? Positive(entry->memory_bytes.load(std::memory_order_relaxed)) : 0;
}

uint64_t TenantLedger::MemoryExcess(std::string_view tenant, uint64_t adding) const {
    const Entry* entry = Find(tenant);
    if (entry == nullptr) return 0;
    const uint64_t quota = entry->memory_quota.load(std::memory_order_relaxed);
    if (quota == 0) return 0;
    const uint64_t used = Positive(entry->memory_bytes.load(std::memory_order_relaxed) -
                                   entry->memory_leaving.load(std::memory_order_relaxed)) +
                          adding;
    return used > quota ? used - quota : 0;
}

uint64_t TenantLedger::DiskExcess(std::string_view tenant, uint64_t adding) const {
    const Entry* entry = Find(tenant);
    if (entry == nullptr) return 0;
    const uint64_t quota = entry->disk_quota.load(std::memory_order_relaxed);
    if (quota == 0) return 0;
    const uint64_t used = Positive(entry->disk_bytes.load(std::memory_order_relaxed)) + adding;
    return used > quota ? used - quota : 0;
}

bool TenantLedger::ProtectedFromOthers(std::string_view tenant) const {
    const Entry* entry = Find(tenant);
    if (entry == nullptr) return false;
    const uint64_t quota = entry->memory_quota.load(std::memory_order_relaxed);
    return quota != 0 && Positive(entry->memory_bytes.load(std::memory_order_relaxed) -
                                  entry->memory_leaving.load(std::memory_order_relaxed)) <= quota;
}

void TenantLedger::CountPutRefused(std::string_view tenant) { EntryOf(tenant).puts_refused.Inc(); }
void TenantLedger::CountQuotaEviction(std::string_view tenant) {
    EntryOf(tenant).quota_evictions.Inc();
}
void TenantLedger::CountPromotion(std::string_view tenant) { EntryOf(tenant).promotions.Inc(); }

std::vector<TenantRow> TenantLedger::Rows() const {
    std::vector<TenantRow> rows;
    ReaderLock lock(mu_);
    for (const auto& [name, e] : entries_) {
        TenantRow row;
        row.tenant = name;
        row.registered = e->registered.load();
        row.quota = {e->memory_quota.load(), e->disk_quota.load()};
        row.memory_bytes = Positive(e->memory_bytes.load());
        row.memory_objects = Positive(e->memory_objects.load());
        row.disk_bytes = Positive(e->disk_bytes.load());
        row.disk_objects = Positive(e->disk_objects.load());
        row.puts_refused = static_cast<uint64_t>(e->puts_refused.Value());
        row.quota_evictions = static_cast<uint64_t>(e->quota_evictions.Value());
        row.promotions = static_cast<uint64_t>(e->promotions.Value());
        rows.push_back(std::move(row));
    }
    return rows;
}

TenantQuota TenantLedger::QuotaSum() const {
    TenantQuota sum;
    ReaderLock lock(mu_);
    for (const auto& [name, e] : entries_) {
        if (!e->registered.load()) continue;
        sum.memory_bytes += e->memory_quota.load();
        sum.disk_bytes += e->disk_quota.load();
    }
    return sum;
}

}  // namespace mooncake
