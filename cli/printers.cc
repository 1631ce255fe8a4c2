#include "cli/printers.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "cli/text.h"
#include "core/base/types.h"

namespace mooncake::cli {
namespace {

int64_t Millis(Nanos d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

std::string TierList(const ObjectView& object, std::string_view separator) {
    std::string out;
    for (Tier tier : object.CompleteTiers()) {
        if (!out.empty()) out += separator;
        out += TierName(tier);
    }
    return out;
}

void WriteTiers(JsonWriter& json, const ObjectView& object) {
    json.Key("tiers");
    json.BeginArray();
    for (Tier tier : object.CompleteTiers()) json.String(TierName(tier));
    json.EndArray();
}

std::string NodeLabel(const ObjectInfo& info, size_t i) {
    const std::string& name = i < info.locations.size() ? info.locations[i].node_name : "";
    if (!name.empty()) return name;
    return "node " + std::to_string(info.object.replicas[i].node) + " (gone)";
}

std::string Percent(uint64_t part, uint64_t whole) {
    if (whole == 0) return "-";
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%",
                  100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return buf;
}

std::string UsedOfCapacity(uint64_t used, uint64_t capacity) {
    if (capacity == 0) return "-";
    return HumanSize(used) + " / " + HumanSize(capacity) + " (" + Percent(used, capacity) + ")";
}

std::string TaskState(const TaskView& t) {
    if (t.staged) return "staged";
    if (t.delivered) return "delivered";
    return "queued";
}

// 2026-12-01T19:30:00.123Z
std::string Iso8601(int64_t ms) {
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[48];
    std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
    return out;
}

}  // namespace

// ---------------- Table ----------------

Table::Table(std::vector<std::string> header)
    : header_(std::move(header)), right_(header_.size(), false) {}

void Table::AlignRight(size_t column) {
    if (column < right_.size()) right_[column] = true;
}

void Table::AddRow(std::vector<std::string> cells) {
    cells.resize(header_.size());
    rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
    std::vector<size_t> width(header_.size(), 0);
    auto measure = [&](const std::vector<std::string>& row) {
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], DisplayWidth(row[c]));
    };
    measure(header_);
    for (const auto& row : rows_) measure(row);
    std::string out;
    auto emit = [&](const std::vector<std::string>& row) {
        std::string line;
        for (size_t c = 0; c < row.size(); ++c) {
            size_t pad = width[c] - DisplayWidth(row[c]);
            bool last = c + 1 == row.size();
            if (right_[c]) line.append(pad, ' ');
            line += row[c];
            if (!right_[c] && !last) line.append(pad, ' ');
            if (!last) line += "  ";
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line;
        out += '\n';
    };
    emit(header_);
    for (const auto& row : rows_) emit(row);
    return out;
}

// ---------------- JSON helpers ----------------

void WriteKeyFields(JsonWriter& json, std::string_view key) {
    json.Key("key");
    json.String(key);
    if (!IsValidUtf8(key)) {
        json.Key("key_base64");
        json.String(Base64Encode(key));
    }
}

void WriteKnobValue(JsonWriter& json, const KnobInfo& knob) {
    const std::string& v = knob.value;
    if (knob.type == "bool" && (v == "true" || v == "false")) {
        json.Bool(v == "true");
    } else if (knob.type == "int" || knob.type == "double") {
        json.NumberOrString(v);
    } else if (knob.type == "size") {
        Result<uint64_t> bytes = ParseSize(v);
        if (bytes.ok()) {
            json.Uint(*bytes);
        } else {
            json.String(v);
        }
    } else {
        json.String(v);
    }
}

// ---------------- stat / ls ----------------

namespace {

// A promotion decision's age: the client library reads `at` as minus the age.
Nanos DecisionAge(const PromotionDecision& d) { return std::max(-d.at, Nanos(0)); }

// "last_promotion": {outcome, refused, reason, reads, threshold, age_ms}, or null.
void WriteLastPromotion(JsonWriter& json, const std::optional<PromotionDecision>& d) {
    json.Key("last_promotion");
    if (!d) {
        json.Null();
        return;
    }
    json.BeginObject();
    json.Key("outcome");
    json.String(PromotionOutcomeName(d->outcome));
    json.Key("refused");
    json.Bool(IsRefusal(d->outcome));
    json.Key("reason");
    json.String(PromotionOutcomeMeaning(d->outcome));
    json.Key("reads");
    json.Uint(d->reads);
    json.Key("threshold");
    json.Uint(d->threshold);
    json.Key("age_ms");
    json.Int(Millis(DecisionAge(*d)));
    json.EndObject();
}

// "gate_refused (the adaptive gate has ...); 3 reads, threshold 2; 1.2s ago"
// ReplicateConfig's pins (core/master/pin_table.h).
std::string PinText(const ObjectView& o) {
    std::string out;
    if (o.hard_pinned) out = "hard (never evicted)";
    if (o.soft_pinned) {
        if (!out.empty()) out += ", ";
        out += o.soft_pin_expiry.count() > 0
                   ? "soft, " + HumanDuration(o.soft_pin_expiry) + " remaining"
                   : "soft, lapsed";
    }
    return out.empty() ? "none" : out;
}

std::string LastPromotionText(const std::optional<PromotionDecision>& d) {
    if (!d) return "none recorded";
    return std::string(PromotionOutcomeName(d->outcome)) + " (" +
           std::string(PromotionOutcomeMeaning(d->outcome)) + "); " + std::to_string(d->reads) +
           " reads, threshold " + std::to_string(d->threshold) + "; " +
           HumanDuration(DecisionAge(*d)) + " ago";
}

}  // namespace

std::string RenderStat(const ObjectInfo& info, Format format) {
    const ObjectView& o = info.object;
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginObject();
        WriteKeyFields(json, o.key);
        json.Key("size");
        json.Uint(o.size);
        json.Key("generation");
        json.Uint(o.generation);
        WriteTiers(json, o);
        json.Key("replicas");
        json.BeginArray();
        for (size_t i = 0; i < o.replicas.size(); ++i) {
            const ReplicaDesc& r = o.replicas[i];
            json.BeginObject();
            json.Key("tier");
            json.String(TierName(r.tier));
            json.Key("status");
            json.String(ReplicaStateName(r.state));
            json.Key("node");
            json.String(i < info.locations.size() ? info.locations[i].node_name : "");
            json.Key("node_id");
            json.Uint(r.node);
            json.Key("size");
            json.Uint(r.size);
            json.Key("pins");
            json.Uint(r.pins);
            json.EndObject();
        }
        json.EndArray();
        json.Key("lease_remaining_ms");
        json.Int(std::max<int64_t>(0, Millis(o.lease_expiry)));
        json.Key("soft_pinned");
        json.Bool(o.soft_pinned);
        json.Key("soft_pin_ms_remaining");
        json.Int(o.soft_pinned ? std::max<int64_t>(0, Millis(o.soft_pin_expiry)) : 0);
        json.Key("hard_pinned");
        json.Bool(o.hard_pinned);
        json.Key("group");
        if (o.group.empty()) {
            json.Null();
        } else {
            json.String(o.group);
        }
        json.Key("recency");
        json.Uint(o.recency);
        json.Key("sketch_estimate");
        json.Uint(o.sketch_estimate);
        json.Key("promotion_in_flight");
        json.Bool(o.promotion_in_flight);
        json.Key("offload_in_flight");
        json.Bool(o.offload_in_flight);
        WriteLastPromotion(json, o.last_promotion);
        json.EndObject();
        return json.Finish();
    }
    std::string tiers = TierList(o, ", ");
    std::string tasks;
    if (o.promotion_in_flight) tasks = "promotion in flight";
    if (o.offload_in_flight) tasks += std::string(tasks.empty() ? "" : ", ") + "offload in flight";
    Table head({"", ""});
    head.AddRow({"key:", DisplayKey(o.key)});
    head.AddRow({"size:", HumanSize(o.size) + " (" + std::to_string(o.size) + " bytes)"});
    head.AddRow({"tiers:", tiers.empty() ? "(none complete)" : tiers});
    head.AddRow({"generation:", std::to_string(o.generation)});
    head.AddRow({"lease:", o.lease_expiry.count() > 0 ? HumanDuration(o.lease_expiry) + " remaining"
                                                      : "none"});
    head.AddRow({"pin:", PinText(o)});
    head.AddRow({"group:", o.group.empty() ? "none" : DisplayKey(o.group)});
    head.AddRow({"sketch:", std::to_string(o.sketch_estimate)});
    head.AddRow({"tasks:", tasks.empty() ? "none" : tasks});
    head.AddRow({"promotion:", LastPromotionText(o.last_promotion)});
    std::string rendered = head.Render();
    // The two-column table's header row is empty: drop it.
    rendered.erase(0, rendered.find('\n') + 1);
    Table replicas({"TIER", "STATUS", "NODE", "SIZE", "PINS"});
    replicas.AlignRight(3);
    replicas.AlignRight(4);
    for (size_t i = 0; i < o.replicas.size(); ++i) {
        const ReplicaDesc& r = o.replicas[i];
        replicas.AddRow({std::string(TierName(r.tier)), std::string(ReplicaStateName(r.state)),
                         NodeLabel(info, i), HumanSize(r.size), std::to_string(r.pins)});
    }
    rendered += "replicas:\n";
    std::string table = replicas.Render();
    for (size_t pos = 0; pos < table.size();) {
        size_t end = table.find('\n', pos);
        rendered += "  " + table.substr(pos, end - pos + 1);
        pos = end + 1;
    }
    return rendered;
}

std::string RenderList(const std::vector<ObjectInfo>& objects, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginArray();
        for (const ObjectInfo& info : objects) {
            json.BeginObject();
            WriteKeyFields(json, info.object.key);
            json.Key("size");
            json.Uint(info.object.size);
            WriteTiers(json, info.object);
            json.EndObject();
        }
        json.EndArray();
        return json.Finish();
    }
    Table table({"KEY", "SIZE", "TIERS"});
    table.AlignRight(1);
    for (const ObjectInfo& info : objects) {
        table.AddRow(
            {DisplayKey(info.object.key), HumanSize(info.object.size), TierList(info.object, ",")});
    }
    return table.Render();
}

// ---------------- nodes / tasks / hot ----------------

namespace {

// "ok", "CORRUPT (n)" when the node met corruption since it started, "drift" when its own
// disk figures differ from the master's, "-" before it reports (or without a disk).
std::string DiskHealthText(const NodeInfo& n) {
    if (!n.health.reported || n.spec.disk_capacity == 0) return "-";
    if (n.health.disk_corruptions > 0) {
        return "CORRUPT (" + std::to_string(n.health.disk_corruptions) + ")";
    }
    if (n.health.disk_used != n.disk_used || n.health.disk_objects != n.disk_objects) {
        return "drift";
    }
    return "ok";
}

// Whether new data may go to the node's DRAM segment: "ok"; "reporting" while it registered
// again and has not yet reported what it holds (moments, on a failover or restart);
// "draining" / "drained" under a drain.
std::string MemoryStateText(const NodeInfo& n) {
    if (n.reporting) return "reporting";
    std::string name(SegmentStateName(n.segment_state));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return name;
}

}  // namespace

namespace {

// "used/quota" for people; "-" for no quota.
std::string UsedOfQuota(uint64_t used, uint64_t quota) {
    return HumanSize(used) + "/" + (quota == 0 ? std::string("-") : HumanSize(quota));
}

}  // namespace

std::string RenderTenants(const TenantListing& listing, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginObject();
        json.Key("tenants");
        json.BeginArray();
        for (const TenantUsage& t : listing.tenants) {
            json.BeginObject();
            json.Key("tenant");
            json.String(t.tenant);
            json.Key("registered");
            json.Bool(t.registered);
            json.Key("memory_quota");
            json.Uint(t.memory_quota);
            json.Key("disk_quota");
            json.Uint(t.disk_quota);
            json.Key("memory_bytes");
            json.Uint(t.memory_bytes);
            json.Key("memory_objects");
            json.Uint(t.memory_objects);
            json.Key("disk_bytes");
            json.Uint(t.disk_bytes);
            json.Key("disk_objects");
            json.Uint(t.disk_objects);
            json.Key("puts_refused");
            json.Uint(t.puts_refused);
            json.Key("quota_evictions");
            json.Uint(t.quota_evictions);
            json.Key("promotions");
            json.Uint(t.promotions);
            json.EndObject();
        }
        json.EndArray();
        json.Key("memory_quota_sum");
        json.Uint(listing.memory_quota_sum);
        json.Key("disk_quota_sum");
        json.Uint(listing.disk_quota_sum);
        json.Key("memory_capacity");
        json.Uint(listing.memory_capacity);
        json.Key("disk_capacity");
        json.Uint(listing.disk_capacity);
        json.Key("multi_tenant");
        json.Bool(listing.multi_tenant);
        json.Key("warnings");
        json.BeginArray();
        for (const std::string& w : listing.warnings) json.String(w);
        json.EndArray();
        json.EndObject();
        return json.Finish();
    }
    Table table({"TENANT", "REGISTERED", "MEMORY", "OBJECTS", "LOCAL_DISK", "OBJECTS", "REFUSED",
                 "QUOTA-EVICTIONS", "PROMOTIONS"});
    for (size_t c : {2, 3, 4, 5, 6, 7, 8}) table.AlignRight(c);
    for (const TenantUsage& t : listing.tenants) {
        table.AddRow({t.tenant, t.registered ? "yes" : "no",
                      UsedOfQuota(t.memory_bytes, t.memory_quota),
                      std::to_string(t.memory_objects), UsedOfQuota(t.disk_bytes, t.disk_quota),
                      std::to_string(t.disk_objects), std::to_string(t.puts_refused),
                      std::to_string(t.quota_evictions), std::to_string(t.promotions)});
    }
    std::string out = table.Render();
    out += "quotas: MEMORY " + HumanSize(listing.memory_quota_sum) + " of " +
           HumanSize(listing.memory_capacity) + ", LOCAL_DISK " +
           HumanSize(listing.disk_quota_sum) + " of " + HumanSize(listing.disk_capacity) +
           (listing.multi_tenant ? " (multi-tenant: unregistered tenants' puts are refused)"
                                 : "") +
           "\n";
    return out;
}

std::string RenderNodes(const std::vector<NodeInfo>& nodes, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginArray();
        for (const NodeInfo& n : nodes) {
            json.BeginObject();
            json.Key("id");
            json.Uint(n.id);
            json.Key("name");
            json.String(n.spec.name);
            json.Key("data_address");
            json.String(n.spec.data_address);
            json.Key("memory_capacity");
            json.Uint(n.spec.segment_capacity);
            json.Key("memory_used");
            json.Uint(n.segment_used);
            json.Key("memory_objects");
            json.Uint(n.memory_objects);
            json.Key("local_disk_capacity");
            json.Uint(n.spec.disk_capacity);
            json.Key("local_disk_used");
            json.Uint(n.disk_used);
            json.Key("local_disk_objects");
            json.Uint(n.disk_objects);
            json.Key("ms_since_heartbeat");
            json.Int(Millis(n.last_heartbeat));
            json.Key("memory_state");
            json.String(MemoryStateText(n));
            if (n.health.reported) {
                // The node's own figures, beside the master's (local_disk_used/_objects).
                json.Key("node_disk_used");
                json.Uint(n.health.disk_used);
                json.Key("node_disk_objects");
                json.Uint(n.health.disk_objects);
                json.Key("disk_corruptions");
                json.Uint(n.health.disk_corruptions);
            }
            json.EndObject();
        }
        json.EndArray();
        return json.Finish();
    }
    Table table({"ID", "NODE", "DATA", "MEMORY", "KEYS", "LOCAL_DISK", "KEYS", "HEARTBEAT", "DISK",
                 "STATE"});
    // Ids are opaque and long (epoch << 32 | n, core/master/node_table.cc): left-aligned.
    for (size_t c : {4, 6}) table.AlignRight(c);
    for (const NodeInfo& n : nodes) {
        table.AddRow({std::to_string(n.id), n.spec.name, n.spec.data_address,
                      UsedOfCapacity(n.segment_used, n.spec.segment_capacity),
                      std::to_string(n.memory_objects),
                      UsedOfCapacity(n.disk_used, n.spec.disk_capacity),
                      std::to_string(n.disk_objects), HumanDuration(n.last_heartbeat) + " ago",
                      DiskHealthText(n), MemoryStateText(n)});
    }
    return table.Render();
}

std::string RenderTasks(const std::vector<TaskView>& tasks,
                        const std::map<NodeId, std::string>& node_names, Format format) {
    auto name_of = [&](NodeId id) {
        auto it = node_names.find(id);
        return it != node_names.end() ? it->second : std::string();
    };
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginArray();
        for (const TaskView& t : tasks) {
            json.BeginObject();
            json.Key("kind");
            json.String(t.kind == TaskKind::kPromotion ? "promotion" : "offload");
            WriteKeyFields(json, t.key);
            json.Key("size");
            json.Uint(t.size);
            json.Key("generation");
            json.Uint(t.generation);
            json.Key("node_id");
            json.Uint(t.node);
            json.Key("node");
            json.String(name_of(t.node));
            json.Key("age_ms");
            json.Int(Millis(t.age));
            json.Key("state");
            json.String(TaskState(t));
            json.EndObject();
        }
        json.EndArray();
        return json.Finish();
    }
    Table table({"KIND", "KEY", "SIZE", "NODE", "AGE", "STATE"});
    table.AlignRight(2);
    table.AlignRight(4);
    for (const TaskView& t : tasks) {
        std::string node = name_of(t.node);
        table.AddRow({t.kind == TaskKind::kPromotion ? "promotion" : "offload", DisplayKey(t.key),
                      HumanSize(t.size), node.empty() ? std::to_string(t.node) : node,
                      HumanDuration(t.age), TaskState(t)});
    }
    return table.Render();
}

std::string RenderInvariants(const InvariantReport& r, Format format) {
    const std::pair<const char*, uint64_t> counts[] = {
        {"objects", r.objects},
        {"dram_used", r.dram_used},
        {"dram_allocated", r.dram_allocated},
        {"pins", r.pins},
        {"source_pins_expected", r.source_pins_expected},
        {"promotion_tasks", r.promotion_tasks},
        {"offload_tasks", r.offload_tasks},
    };
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginObject();
        json.Key("ok");
        json.Bool(r.ok());
        json.Key("violations");
        json.BeginArray();
        for (const std::string& v : r.violations) json.String(v);
        json.EndArray();
        for (const auto& [name, value] : counts) {
            json.Key(name);
            json.Uint(value);
        }
        json.EndObject();
        return json.Finish();
    }
    std::string out = r.ok() ? "consistent\n" : "INCONSISTENT\n";
    for (const std::string& v : r.violations) out += "  violation: " + v + "\n";
    for (const auto& [name, value] : counts) {
        out += "  " + std::string(name) + ": " + std::to_string(value) + "\n";
    }
    return out;
}

std::string RenderScrub(const std::vector<ScrubResult>& results, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginArray();
        for (const ScrubResult& r : results) {
            json.BeginObject();
            json.Key("node");
            json.String(r.node);
            json.Key("checked");
            json.Uint(r.checked);
            json.Key("checked_bytes");
            json.Uint(r.checked_bytes);
            json.Key("io_errors");
            json.Uint(r.io_errors);
            json.Key("corrupt");
            json.BeginArray();
            for (const auto& [key, generation] : r.corrupt) {
                json.BeginObject();
                json.Key("key");
                json.String(key);
                json.Key("generation");
                json.Uint(generation);
                json.EndObject();
            }
            json.EndArray();
            if (!r.error.empty()) {
                json.Key("error");
                json.String(r.error);
            }
            json.EndObject();
        }
        json.EndArray();
        return json.Finish();
    }
    std::string out;
    for (const ScrubResult& r : results) {
        if (!r.error.empty()) {
            out += "node " + r.node + ": not scrubbed: " + r.error + "\n";
            continue;
        }
        out += "node " + r.node + ": " + std::to_string(r.checked) + " records (" +
               HumanSize(r.checked_bytes) + ") read, " + std::to_string(r.corrupt.size()) +
               " corrupt, " + std::to_string(r.io_errors) + " unreadable\n";
        for (const auto& [key, generation] : r.corrupt) {
            out += "  corrupt: " + QuoteKey(key) + " generation " + std::to_string(generation) +
                   " (dropped; the key is removed)\n";
        }
    }
    return out;
}

std::string RenderMasters(const std::vector<ha::MasterListing>& masters, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginArray();
        for (const auto& m : masters) {
            json.BeginObject();
            json.Key("address");
            json.String(m.address);
            json.Key("role");
            json.String(m.leader ? "leader" : "standby");
            json.Key("epoch");
            json.Uint(m.epoch);
            json.Key("since");
            json.String(Iso8601(m.since_ms));
            json.Key("since_ms");
            json.Int(m.since_ms);
            json.EndObject();
        }
        json.EndArray();
        return json.Finish();
    }
    Table table({"ADDRESS", "ROLE", "EPOCH", "SINCE"});
    table.AlignRight(2);
    for (const auto& m : masters) {
        table.AddRow({m.address, m.leader ? "leader" : "standby", std::to_string(m.epoch),
                      Iso8601(m.since_ms)});
    }
    return table.Render();
}

std::string RenderHot(const std::vector<HotKey>& keys, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginArray();
        for (const HotKey& h : keys) {
            json.BeginObject();
            WriteKeyFields(json, h.key);
            json.Key("size");
            json.Uint(h.size);
            json.Key("estimate");
            json.Uint(h.estimate);
            WriteLastPromotion(json, h.last_promotion);
            json.EndObject();
        }
        json.EndArray();
        return json.Finish();
    }
    Table table({"KEY", "SIZE", "ESTIMATE", "LAST PROMOTION DECISION"});
    table.AlignRight(1);
    table.AlignRight(2);
    for (const HotKey& h : keys) {
        table.AddRow({DisplayKey(h.key), HumanSize(h.size), std::to_string(h.estimate),
                      h.last_promotion ? std::string(PromotionOutcomeName(h.last_promotion->outcome)) +
                                             ", " + HumanDuration(DecisionAge(*h.last_promotion)) +
                                             " ago"
                                       : "-"});
    }
    return table.Render();
}

// ---------------- tune ----------------

std::string RenderKnobs(const std::vector<KnobInfo>& knobs, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginObject();
        for (const KnobInfo& k : knobs) {
            json.Key(k.name);
            WriteKnobValue(json, k);
        }
        json.EndObject();
        return json.Finish();
    }
    Table table({"NAME", "VALUE", "DEFAULT", "RANGE", "TUNABLE"});
    for (const KnobInfo& k : knobs) {
        table.AddRow({k.name, k.value.empty() ? "\"\"" : k.value,
                      k.default_value.empty() ? "\"\"" : k.default_value, k.range,
                      k.tunable ? "yes" : "no (start-up)"});
    }
    return table.Render();
}

std::string RenderKnobChanges(const std::vector<KnobInfo>& before,
                              const std::vector<KnobInfo>& after,
                              const std::vector<std::string>& names, Format format) {
    auto find = [](const std::vector<KnobInfo>& table, const std::string& name) -> const KnobInfo* {
        for (const KnobInfo& k : table) {
            if (k.name == name) return &k;
        }
        return nullptr;
    };
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginObject();
        for (const std::string& name : names) {
            const KnobInfo* k = find(after, name);
            if (k == nullptr) continue;
            json.Key(name);
            WriteKnobValue(json, *k);
        }
        json.EndObject();
        return json.Finish();
    }
    Table table({"NAME", "OLD", "NEW"});
    for (const std::string& name : names) {
        const KnobInfo* old_knob = find(before, name);
        const KnobInfo* new_knob = find(after, name);
        table.AddRow({name, old_knob ? old_knob->value : "?", new_knob ? new_knob->value : "?"});
    }
    return table.Render();
}

// ---------------- per-key outcomes ----------------

std::string RenderKeyResults(const std::vector<KeyResult>& results, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginArray();
        for (const KeyResult& r : results) {
            json.BeginObject();
            WriteKeyFields(json, r.key);
            json.Key("ok");
            json.Bool(r.status.ok());
            json.Key("outcome");
            json.String(r.status.ok() ? r.outcome : "error");
            if (!r.status.ok()) {
                json.Key("error");
                json.String(StatusCodeName(r.status.code()));
            }
            json.Key("message");
            json.String(r.status.ok() ? r.text : r.status.message());
            json.EndObject();
        }
        json.EndArray();
        return json.Finish();
    }
    Table table({"KEY", "RESULT"});
    for (const KeyResult& r : results) {
        std::string text;
        if (r.status.ok()) {
            text = r.text;
        } else if (r.status.Is(StatusCode::kNotFound)) {
            text = "not found";
        } else {
            text = "refused: " + r.status.message();
        }
        table.AddRow({DisplayKey(r.key), text});
    }
    return table.Render();
}

// ---------------- metrics ----------------

namespace {

struct Sample {
    std::string name;
    std::vector<std::pair<std::string, std::string>> labels;
    std::string value;
};

// One sample line of the Prometheus text format: name{l="v",...} value [timestamp].
bool ParseSample(std::string_view line, Sample& out) {
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
    out.name = std::string(line.substr(0, i));
    if (out.name.empty()) return false;
    if (i < line.size() && line[i] == '{') {
        ++i;
        while (i < line.size() && line[i] != '}') {
            while (i < line.size() && (line[i] == ',' || line[i] == ' ')) ++i;
            if (i < line.size() && line[i] == '}') break;
            size_t eq = line.find('=', i);
            if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
                return false;
            }
            std::string label(line.substr(i, eq - i));
            std::string value;
            i = eq + 2;
            while (i < line.size() && line[i] != '"') {
                if (line[i] == '\\' && i + 1 < line.size()) {
                    char e = line[++i];
                    value += e == 'n' ? '\n' : e;
                } else {
                    value += line[i];
                }
                ++i;
            }
            if (i >= line.size()) return false;
            ++i;  // closing quote
            out.labels.emplace_back(std::move(label), std::move(value));
        }
        if (i >= line.size()) return false;
        ++i;  // '}'
    }
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t end = i;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    out.value = std::string(line.substr(i, end - i));
    return !out.value.empty();
}

}  // namespace

std::string RenderMetrics(std::string_view text, Format format) {
    if (format == Format::kTable) return std::string(text);
    JsonWriter json;
    json.BeginArray();
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.empty() || line[0] == '#') continue;
        Sample s;
        if (!ParseSample(line, s)) continue;
        json.BeginObject();
        json.Key("name");
        json.String(s.name);
        json.Key("labels");
        json.BeginObject();
        for (const auto& [k, v] : s.labels) {
            json.Key(k);
            json.String(v);
        }
        json.EndObject();
        json.Key("value");
        json.NumberOrString(s.value);
        json.EndObject();
    }
    json.EndArray();
    return json.Finish();
}

// ---------------- put / get ----------------

std::string RenderPut(std::string_view key, uint64_t size, Format format) {
    if (format == Format::kJson) {
        JsonWriter json;
        json.BeginObject();
        WriteKeyFields(json, key);
        json.Key("size");
        json.Uint(size);
        json.EndObject();
        return json.Finish();
    }
    return "stored " + DisplayKey(key) + " (" + HumanSize(size) + ")\n";
}

std::string RenderGetOutJson(std::string_view key, uint64_t size, const std::string& out_file) {
    JsonWriter json;
    json.BeginObject();
    WriteKeyFields(json, key);
    json.Key("size");
    json.Uint(size);
    json.Key("out");
    json.String(out_file);
    json.EndObject();
    return json.Finish();
}

std::string RenderGetJson(std::string_view key, std::string_view value,
                          const std::string* out_file) {
    if (out_file != nullptr) return RenderGetOutJson(key, value.size(), *out_file);
    JsonWriter json;
    json.BeginObject();
    WriteKeyFields(json, key);
    json.Key("size");
    json.Uint(value.size());
    json.Key("value");
    json.String(value);
    if (!IsValidUtf8(value)) {
        json.Key("value_base64");
        json.String(Base64Encode(value));
    }
    json.EndObject();
    return json.Finish();
}

}  // namespace mooncake::cli
