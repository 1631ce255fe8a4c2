// mooncakectl's printers: one per response type, each writing either a human table or JSON
// (the output format is chosen once, by --json). Commands call exactly one of these with what
// the client library returned; they never format output themselves. Pure functions returning
// the text for stdout, so unit tests check them without a daemon.
//
// JSON shapes (stable, for scripts; fields may be added, never removed or renamed):
//   key fields      "key": the key (JsonWriter's escaping); plus "key_base64" when the key is
//                   not valid UTF-8 (the exact bytes).
//   stat            {key, size, generation, tiers:[MEMORY first], replicas:[{tier, status,
//                   node, node_id, size, pins}], lease_remaining_ms, soft_pinned,
//                   soft_pin_ms_remaining (0 when lapsed or unpinned), hard_pinned, recency, sketch_estimate,
//                   promotion_in_flight, offload_in_flight, last_promotion}
//   last_promotion  null, or {outcome (core/base/promotion_decision.h names), refused (bool),
//                   reason (one line), reads, threshold, age_ms}: the key's last promotion
//                   decision, "why is this key not in MEMORY?"
//   ls              [{key, size, tiers}]
//   nodes           [{id, name, data_address, memory_capacity, memory_used, memory_objects,
//                   local_disk_capacity, local_disk_used, local_disk_objects,
//                   ms_since_heartbeat}]
//   tasks           [{kind: "promotion"|"offload", key, size, generation, node_id, node,
//                   age_ms, state: "queued"|"delivered"|"staged"}]
//   hot             [{key, size, estimate, last_promotion}]
//   scrub           [{node, checked, checked_bytes, io_errors, corrupt:[{key, generation}],
//                   error (only when the node was not scrubbed)}]
//   masters         [{address, role: "leader"|"standby", epoch, since (ISO 8601), since_ms}]
//   tune get/set    {knob: value}; bool -> true/false, int/double -> number, size -> number
//                   of bytes, enum/string -> string
//   rm/promote/offload/evict
//                   [{key, ok, outcome, message}] plus {error: StatusCodeName} when !ok
//   metrics         [{name, labels:{...}, value}] (value a number, or a string for NaN/Inf)
//   put             {key, size}
//   get             {key, size, value} plus value_base64 when the value is not valid UTF-8;
//                   with --out: {key, size, out}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cli/json.h"
#include "core/base/master_types.h"
#include "core/base/status.h"
#include "etcd/leader_discovery.h"
#include "thrift/client.h"

namespace mooncake::cli {

enum class Format { kTable, kJson };

// A human table: a header row, then rows; columns padded to the widest cell (by display
// width), two spaces apart; right-aligned where asked (numbers, sizes).
class Table {
  public:
    explicit Table(std::vector<std::string> header);
    void AlignRight(size_t column);
    void AddRow(std::vector<std::string> cells);
    std::string Render() const;

  private:
    std::vector<std::string> header_;
    std::vector<bool> right_;
    std::vector<std::vector<std::string>> rows_;
};

// "key" and, when it is not valid UTF-8, "key_base64".
void WriteKeyFields(JsonWriter& json, std::string_view key);

// The outcome of one key in rm/promote/offload/evict.
struct KeyResult {
    std::string key;
    Status status;        // not ok: the key failed (the message says why)
    std::string outcome;  // machine word: "queued", "promoted", "already", "removed", ...
    std::string text;     // for people: "already in MEMORY", "queued for promotion", ...
};

std::string RenderStat(const ObjectInfo& info, Format format);
std::string RenderList(const std::vector<ObjectInfo>& objects, Format format);
std::string RenderNodes(const std::vector<NodeInfo>& nodes, Format format);
std::string RenderInvariants(const InvariantReport& report, Format format);
std::string RenderTasks(const std::vector<TaskView>& tasks,
                        const std::map<NodeId, std::string>& node_names, Format format);
std::string RenderHot(const std::vector<HotKey>& keys, Format format);
// scrub: per node what was read, what was corrupt (dropped, its key removed), or why not.
std::string RenderScrub(const std::vector<ScrubResult>& results, Format format);
// masters: the leader and the standbys of an HA cluster, as etcd lists them.
std::string RenderMasters(const std::vector<ha::MasterListing>& masters, Format format);
// tenant ls/set/rm: each tenant's quotas and use, and the quota sums against the capacity.
// Warnings are not part of it (the command prints them to stderr).
std::string RenderTenants(const TenantListing& listing, Format format);
// tune get: every row of `knobs` (already filtered to the asked name, if any).
std::string RenderKnobs(const std::vector<KnobInfo>& knobs, Format format);
// tune set: the knobs set, old value -> new value (table) or name -> new value (JSON).
std::string RenderKnobChanges(const std::vector<KnobInfo>& before,
                              const std::vector<KnobInfo>& after,
                              const std::vector<std::string>& names, Format format);
std::string RenderKeyResults(const std::vector<KeyResult>& results, Format format);
// Prometheus text as is (table), or parsed into samples (JSON).
std::string RenderMetrics(std::string_view text, Format format);
std::string RenderPut(std::string_view key, uint64_t size, Format format);
// get --json: the value inline (value, plus value_base64 when not UTF-8), or where it went.
std::string RenderGetJson(std::string_view key, std::string_view value,
                          const std::string* out_file);
// get --json --out FILE: where a value of `size` bytes went (the value itself is not needed).
std::string RenderGetOutJson(std::string_view key, uint64_t size, const std::string& out_file);

// A knob's current value as typed JSON (see the table above).
void WriteKnobValue(JsonWriter& json, const KnobInfo& knob);

}  // namespace mooncake::cli
