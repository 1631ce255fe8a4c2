// mooncake-tier control wire. Control messages only: object bytes travel on the data channel
// (thrift/data_protocol.h), so a heartbeat never waits behind a 64 MiB value.
//
// Transport: TFramedTransport + TBinaryProtocol (strict). Every connection starts with
// Hello(PROTOCOL_VERSION, token, name); any other call first is refused with ILLEGAL_CLIENT.
// Keys are `binary` (1..4096 bytes, no NUL, not necessarily UTF-8).
// Times are durations relative to the master's clock at reply time (the master's monotonic
// clock means nothing on another machine).

namespace cpp mooncake.rpc

// Bumped on any incompatible change to this file or to the data channel header.
const i32 PROTOCOL_VERSION = 1

// Same numbers as core's StatusCode (core/base/status.h); thrift/convert.cc checks it statically.
enum ErrorCode {
  OK = 0,
  NOT_FOUND = 1,
  ALREADY_EXISTS = 2,
  NO_SPACE = 3,
  INVALID_ARGUMENT = 4,
  HAS_LEASE = 5,
  NOT_READY = 6,
  ILLEGAL_CLIENT = 7,
  STALE_GENERATION = 8,
  UNKNOWN_NODE = 9,
  BUSY = 10,
  IO_ERROR = 11,
  CORRUPTION = 12,
  TIMEOUT = 13,
  UNAVAILABLE = 14,
  INTERNAL = 15,
  // A standby master (or one that lost its etcd lease) refuses every call but Hello; the
  // client asks etcd who leads (--master etcd://...) and retries there.
  NOT_LEADER = 16,
}

// Every refusal the caller can act on. One function in thrift/convert.cc builds it from a
// core Status; the client maps it back.
exception StoreError {
  1: ErrorCode code,
  2: string message,
}

// Per-item result inside batch replies (a batch never fails as a whole for one bad key).
struct Outcome {
  1: ErrorCode code = ErrorCode.OK,
  2: string message,
}

enum Tier { MEMORY = 0, LOCAL_DISK = 1 }
enum ReplicaState { PROCESSING = 0, COMPLETE = 1 }

struct Replica {
  1: Tier tier,
  2: ReplicaState state,
  3: i64 node,
  4: i64 offset,          // MEMORY: byte offset in the node's DRAM segment
  5: i64 size,
  6: i32 pins,
  7: string node_name,    // the node's advertised RPC address ("" if it is gone)
  8: string data_address, // HOST:PORT of the node's data channel ("" if it is gone)
}

// Why a key is or is not on its way back to MEMORY: its last promotion decision
// (core/base/promotion_decision.h). outcome: queued, deduplicated, admission_gated,
// watermark_gated, no_room, victims_hotter, gate_refused, queue_full, stale (an attempt's),
// completed, alloc_failed, io_failed, expired, cancelled (a queued task's end).
struct PromotionDecision {
  1: string outcome,
  2: i32 reads,       // the key's admission count when decided
  3: i32 threshold,   // promotion_admission_threshold then (0 read as 1)
  4: i64 age_ms,      // how long ago
}

struct ObjectInfo {
  1: binary key,
  2: i64 generation,
  3: i64 size,
  4: list<Replica> replicas,   // GetReplicaList: COMPLETE only, MEMORY first; Stat: all
  5: i64 lease_remaining_ms,
  6: i64 recency,
  7: i32 sketch_estimate,
  8: bool promotion_in_flight,
  9: bool offload_in_flight,
  10: optional PromotionDecision last_promotion,  // Stat only
  // Stat only, set for a pinned object (core/master/pin_table.h).
  11: optional bool soft_pinned,
  12: optional i64 soft_pin_remaining_ms,  // 0: lapsed (or the put has not ended)
  13: optional bool hard_pinned,
  14: optional binary group,  // Stat only, set for a grouped object (core/master/group_table.h)
}

struct ObjectResult {
  1: Outcome outcome,
  2: optional ObjectInfo object,
}

struct HelloReply {
  1: i32 protocol_version,
  2: i64 client_id,       // use it for PutStart/PutEnd/PutRevoke
  3: string role,         // "master", "standalone" or "node"
  4: string server_version,
  // Standalone only: HOST:PORT of its data channel, which serves one-exchange by-key Gets and
  // Puts (net/data_protocol.h kFlagByKey). Unset: use the two-step path.
  5: optional string by_key_data_address,
  // The tenant the session acts in (core/base/tenant.h), echoed from Hello; a client that
  // named one refuses a server that does not echo it (it would act in the default tenant).
  6: optional string tenant,
}

struct PutStartReply {
  1: i64 generation,
  2: Replica replica,     // the PROCESSING MEMORY range to write the bytes into
  // replicas > 1 (PutConfig): more PROCESSING MEMORY ranges, each on another node; the same
  // bytes go to each before the put ends. Unset for one copy (and from an older master).
  3: optional list<Replica> copies,
}

// What a Put asks beyond its bytes (Python's ReplicateConfig): pins (core/master/pin_table.h),
// a group (core/master/group_table.h) and more MEMORY copies. Unset: unpinned, ungrouped, one
// copy, so an older client (which never sends one) and an older master (which skips it, and
// the optional fields) still agree.
struct PutConfig {
  1: bool soft,
  2: i64 soft_ttl_ms,   // 0: the master's default_kv_soft_pin_ttl_ms
  3: bool hard,
  4: optional binary group,  // ReplicateConfig.group_ids' entry for this object
  5: optional i32 replicas,  // ReplicateConfig.replica_num: MEMORY copies on distinct nodes
  6: optional list<i64> copy_nodes,  // where copies past the first go first (node ids)
}

struct PutStartItem {
  1: binary key,
  2: i64 size,
  3: optional PutConfig pin,
}

struct PutStartResult {
  1: Outcome outcome,
  2: optional PutStartReply reply,
}

struct KeyGeneration {
  1: binary key,
  2: i64 generation,
}

struct ExistsResult {
  1: Outcome outcome,
  2: bool exists,
}

struct RemovePrefixReply {
  1: i64 removed,
  2: i64 skipped,         // leased keys left alone (without force)
}

// ---- nodes ----

struct NodeSpec {
  1: string name,             // advertised RPC address, unique among live nodes
  2: string data_address,
  3: i64 segment_capacity,
  4: i64 disk_capacity,
  // Random per node process (absent or 0 from older nodes): a new one under a live name
  // replaces that registration at once; the same one gets its registration back.
  5: optional i64 incarnation,
  // The node holds DRAM ranges it reports (RegisterMemoryReplicas) after this call: the
  // master places nothing in its segment until its first heartbeat under the id returned,
  // which it sends once those reports are in (absent from older nodes: placeable at once).
  6: optional bool holds_memory,
}

// A node's own view of its disk tier (ReportNodeHealth).
struct NodeHealth {
  1: i64 disk_used,          // bytes allocated to its disk records (whole 4 KiB blocks)
  2: i64 disk_objects,
  3: i64 disk_corruptions,   // corruption events since the node process started
}

struct NodeInfo {
  1: i64 id,
  2: NodeSpec spec,
  3: i64 segment_used,
  4: i64 disk_used,
  5: i64 memory_objects,
  6: i64 disk_objects,
  7: i64 ms_since_heartbeat,
  8: optional NodeHealth health,  // absent until the node reports (older nodes: never)
  // Whether new data may go to its DRAM segment: "OK", "DRAINING", "DRAINED" (a drain), and
  // `reporting` while it registered again and has not yet reported the ranges it holds
  // (absent from older masters: OK, not reporting).
  9: optional string segment_state,
  10: optional bool reporting,
}

struct ReleasedRange {
  1: binary key,
  2: i64 generation,
  3: i64 offset,
  4: i64 size,
}

struct DiskDelete {
  1: binary key,
  2: i64 generation,
}

// Sent again in every reply until the node confirms it: Heartbeat's `applied` is the seq of
// the last reply the node acted on (0 before the first).
struct HeartbeatReply {
  1: list<ReleasedRange> released,
  2: list<DiskDelete> disk_deletes,
  3: i64 seq,
}

struct DiskReplicaReport {
  1: binary key,
  2: i64 generation,
  3: i64 size,
}

// A committed range of a node's DRAM segment, from the node's own range table.
struct MemoryReplicaReport {
  1: binary key,
  2: i64 generation,
  3: i64 size,
  4: i64 offset,
}

struct OffloadTask {
  1: binary key,
  2: i64 generation,
  3: i64 size,
  4: i64 source_offset,
}

struct PromotionTask {
  1: binary key,
  2: i64 generation,
  3: i64 size,
  4: i64 holder,
  5: i64 age_us,          // time since admission, at hand-out
}

// ---- admin ----

enum TaskKind { OFFLOAD = 0, PROMOTION = 1 }

struct TaskInfo {
  1: TaskKind kind,
  2: binary key,
  3: i64 generation,
  4: i64 size,
  5: i64 node,
  6: i64 age_us,
  7: bool delivered,
  8: bool staged,
}

struct HotKey {
  1: binary key,
  2: i64 size,
  3: i32 estimate,
  4: optional PromotionDecision last_promotion,
}

struct ListRequest {
  1: optional Tier tier,
  2: binary prefix,
  3: binary start_after,  // paging: keys strictly greater than this
  4: i32 limit = 1000,
}

struct ListReply {
  1: list<ObjectInfo> objects,
  2: bool more,           // another page exists: ask again with start_after = last key
}

struct KnobInfo {
  1: string name,
  2: string value,
  3: string default_value,
  4: string range,
  5: bool tunable,        // may be changed at runtime by TuneSet
  6: string doc,
  7: string type,         // bool|int|double|size|enum|string
}

struct KnobAssignment {
  1: string name,
  2: string value,
}

// MasterService.CheckInvariants: the master's bookkeeping against a walk over everything.
struct InvariantReport {
  1: bool ok,
  2: list<string> violations,
  3: i64 objects,
  4: i64 dram_used,             // the segment allocators' view
  5: i64 dram_allocated,        // sum of live MEMORY replicas and staging ranges
  6: i64 pins,
  7: i64 source_pins_expected,  // one per task in flight
  8: i64 promotion_tasks,
  9: i64 offload_tasks,
}

enum ManualOutcome { QUEUED = 0, DONE = 1, ALREADY_THERE = 2, IN_FLIGHT = 3 }

struct ManualResult {
  1: binary key,
  2: Outcome outcome,
  3: optional ManualOutcome result,  // set when outcome is OK
}

// One tenant's quotas, usage and figures (TenantList / TenantSet / TenantRemove).
struct TenantInfo {
  1: string tenant,           // "" is the default tenant
  2: bool registered,         // named by the tenant policy (the default tenant always is)
  3: i64 memory_quota,        // bytes; 0: no MEMORY quota
  4: i64 disk_quota,          // bytes; 0: no LOCAL_DISK quota
  5: i64 memory_bytes,
  6: i64 memory_objects,
  7: i64 disk_bytes,
  8: i64 disk_objects,
  9: i64 puts_refused,        // Puts refused for its quota or for not being registered
  10: i64 quota_evictions,    // its MEMORY replicas evicted because it was over its quota
  11: i64 promotions,         // promotions of its objects committed
}

struct TenantReport {
  1: list<TenantInfo> tenants,  // a tenant-scoped session sees its own row only
  2: i64 memory_quota_sum,      // of the registered tenants
  3: i64 disk_quota_sum,
  4: i64 memory_capacity,       // DRAM of the live nodes
  5: i64 disk_capacity,         // LOCAL_DISK of the live nodes
  6: bool multi_tenant,         // strict: unregistered tenants' Puts are refused
  7: list<string> warnings,     // over-committed quotas, a change not persisted
  8: i64 removed,               // TenantRemove with purge: objects removed
}

// The master (and the standalone daemon). Readers and writers, nodes and operators all call it.
service MasterService {
  // tenant: every key the session names is that tenant's ("" or "default": the default one).
  HelloReply Hello(1: i32 protocol_version, 2: string auth_token, 3: string client_name,
                   4: string tenant) throws (1: StoreError error),

  // ---- clients: object lifecycle ----
  PutStartReply PutStart(1: i64 client_id, 2: binary key, 3: i64 size, 4: i64 preferred_node,
                         5: PutConfig pin) throws (1: StoreError error),
  void PutEnd(1: i64 client_id, 2: binary key, 3: i64 generation) throws (1: StoreError error),
  void PutRevoke(1: i64 client_id, 2: binary key, 3: i64 generation)
      throws (1: StoreError error),
  // A read: grants a lease, refreshes recency, may trigger promotion.
  ObjectInfo GetReplicaList(1: binary key) throws (1: StoreError error),
  void Remove(1: binary key, 2: bool force) throws (1: StoreError error),
  // prefetch: a LOCAL_DISK-only key runs the read's promotion trigger (as the knob
  // prefetch_on_exist does for every Exists); otherwise inspection, not an access.
  bool Exists(1: binary key, 2: bool prefetch) throws (1: StoreError error),

  list<PutStartResult> BatchPutStart(1: i64 client_id, 2: list<PutStartItem> items,
                                     3: i64 preferred_node) throws (1: StoreError error),
  list<Outcome> BatchPutEnd(1: i64 client_id, 2: list<KeyGeneration> items)
      throws (1: StoreError error),
  list<Outcome> BatchPutRevoke(1: i64 client_id, 2: list<KeyGeneration> items)
      throws (1: StoreError error),
  list<ObjectResult> BatchGetReplicaList(1: list<binary> keys) throws (1: StoreError error),
  list<Outcome> BatchRemove(1: list<binary> keys, 2: bool force) throws (1: StoreError error),
  list<ExistsResult> BatchExists(1: list<binary> keys, 2: bool prefetch)
      throws (1: StoreError error),
  RemovePrefixReply RemoveByPrefix(1: binary prefix, 2: bool force)
      throws (1: StoreError error),

  // ---- nodes ----
  i64 RegisterNode(1: NodeSpec spec) throws (1: StoreError error),
  HeartbeatReply Heartbeat(1: i64 node, 2: i64 applied) throws (1: StoreError error),
  void UnregisterNode(1: i64 node) throws (1: StoreError error),
  list<Outcome> RegisterDiskReplicas(1: i64 node, 2: list<DiskReplicaReport> reports)
      throws (1: StoreError error),
  // After the master restarted (or expired the node): the node's DRAM ranges, served again.
  list<Outcome> RegisterMemoryReplicas(1: i64 node, 2: list<MemoryReplicaReport> reports)
      throws (1: StoreError error),
  void ReportDiskReplicaDropped(1: i64 node, 2: binary key, 3: i64 generation)
      throws (1: StoreError error),
  // The node's own disk figures and corruption count (sent when they change).
  void ReportNodeHealth(1: i64 node, 2: NodeHealth health) throws (1: StoreError error),
  // Long-polls: return as soon as work exists, or after wait_ms with an empty list.
  list<OffloadTask> OffloadObjectHeartbeat(1: i64 node, 2: i32 max, 3: i32 wait_ms)
      throws (1: StoreError error),
  void NotifyOffloadSuccess(1: i64 node, 2: binary key, 3: i64 generation)
      throws (1: StoreError error),
  void NotifyOffloadFailure(1: i64 node, 2: binary key, 3: i64 generation)
      throws (1: StoreError error),
  list<PromotionTask> PromotionObjectHeartbeat(1: i64 node, 2: i32 max, 3: i32 wait_ms)
      throws (1: StoreError error),
  Replica PromotionAllocStart(1: i64 node, 2: binary key, 3: i64 generation, 4: i64 size)
      throws (1: StoreError error),
  void NotifyPromotionSuccess(1: i64 node, 2: binary key, 3: i64 generation)
      throws (1: StoreError error),
  void NotifyPromotionFailure(1: i64 node, 2: binary key, 3: i64 generation)
      throws (1: StoreError error),

  // ---- admin: never an access (no lease, no recency, no sketch) ----
  ObjectInfo Stat(1: binary key) throws (1: StoreError error),
  ListReply List(1: ListRequest request) throws (1: StoreError error),
  list<NodeInfo> Nodes() throws (1: StoreError error),
  list<TaskInfo> Tasks() throws (1: StoreError error),
  list<HotKey> Hot(1: i32 limit) throws (1: StoreError error),
  list<KnobInfo> TuneGet() throws (1: StoreError error),
  // All or nothing; returns the whole table after the change. With persist, the daemon also
  // writes the values into its --config file (refused, nothing changed, if it has none or
  // cannot write it).
  list<KnobInfo> TuneSet(1: list<KnobAssignment> assignments, 2: bool persist)
      throws (1: StoreError error),
  string MetricsText() throws (1: StoreError error),
  list<ManualResult> Promote(1: list<binary> keys, 2: bool force) throws (1: StoreError error),
  list<ManualResult> Offload(1: list<binary> keys) throws (1: StoreError error),
  list<ManualResult> Evict(1: list<binary> keys) throws (1: StoreError error),
  // Consistency check (what `mooncakectl check` prints). Meaningful when the store is quiet.
  InvariantReport CheckInvariants() throws (1: StoreError error),
  // Reads and verifies every disk record of node `node` (0: every live node), at the disk's
  // background rate; answers when done. A master asks each node's NodeService.Scrub.
  list<ScrubReply> Scrub(1: i64 node) throws (1: StoreError error),
  // Tenants' quotas (issue 34). TenantList: an administrator sees every tenant, a tenant's
  // session its own row. TenantSet/TenantRemove need the cluster's token; a quota of 0 is none.
  TenantReport TenantList() throws (1: StoreError error),
  TenantReport TenantSet(1: string tenant, 2: i64 memory_quota, 3: i64 disk_quota)
      throws (1: StoreError error),
  TenantReport TenantRemove(1: string tenant, 2: bool purge) throws (1: StoreError error),
}

// What a scrub of one node's disk found: every record read and its checksum verified; the
// corrupt ones were dropped there (and are removed from the master as any dropped copy).
struct ScrubReply {
  1: string node,              // the node's name (advertised RPC address)
  2: i64 checked,              // records read
  3: i64 checked_bytes,
  4: list<KeyGeneration> corrupt,
  5: i64 io_errors,            // records the device would not read (kept)
  6: optional string error,    // set when the node could not be scrubbed (unreachable, no disk)
}

struct NodeStatus {
  1: i64 node_id,         // 0 until registered
  2: string name,
  3: string data_address,
  4: string master,
  5: i64 segment_capacity,
  6: i64 segment_bytes_held,  // bytes of ranges that hold an object's bytes
  7: i64 disk_capacity,
  8: i64 disk_used,
  9: i64 disk_objects,
  10: bool registered,
}

// A node's own RPC service on its --listen address: health and inspection. Object bytes are
// on the data channel; work comes from the master.
service NodeService {
  HelloReply Hello(1: i32 protocol_version, 2: string auth_token, 3: string client_name)
      throws (1: StoreError error),
  NodeStatus GetStatus() throws (1: StoreError error),
  string MetricsText() throws (1: StoreError error),
  // Reads and verifies every record of this node's disk (see MasterService.Scrub).
  ScrubReply Scrub() throws (1: StoreError error),
}
