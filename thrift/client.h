// mooncake-tier client library (target `mooncake_client`): what mooncakectl, mooncake-tierfs,
// the tests and the benches use to talk to a master (or a standalone mooncaked).
//
//   auto client = mooncake::Client::Connect("127.0.0.1:50051");
//   if (!client.ok()) { ... client.status().ToString() ... }
//   Status st = (*client)->Put("key", "value bytes");
//   Result<std::string> value = (*client)->Get("key");
//
// Errors are values (core/base/status.h), never exceptions:
//   kUnavailable      the master or a node cannot be reached (connect refused, reset, closed)
//   kTimeout          it was reached but did not answer in time
//   kNotFound         no such key
//   kNotReady         a Put of the key is still in progress
//   kAlreadyExists    Put of a key that exists (Remove it first)
//   kNoSpace          DRAM cannot make room (everything evictable is leased or pinned)
//   kHasLease         Remove refused while readers hold a lease (pass force)
//   kInvalidArgument  bad key (1..4096 bytes, no NUL), size, knob value; or a protocol mismatch
//   others            as in core/base/status.h
//
// Against a standalone daemon (its Hello names a data channel for by-key ops) Get, GetInto and
// a Put of up to 1 MiB are one exchange with that channel: the daemon does the master's part in
// process, with the same rules and counting as below (when that channel cannot be reached, the
// op is made as below). Otherwise, and for larger values:
// Reads and writes: Put = PutStart (master allocates a DRAM range) -> the bytes go straight to
// the node holding that range over the data channel, and that node ends the put (PutEnd at
// its master) before it answers, so a Put that returns OK is readable at once; a transport
// that cannot ask the node (a memcpy into a local segment) sends PutEnd itself. On any failure
// after PutStart the put is revoked (BatchPut keeps one BatchPutEnd for all its keys). Get = GetReplicaList (a read: lease, recency, may trigger promotion) -> read
// the first COMPLETE replica that answers, MEMORY first, LOCAL_DISK through its holder node.
// The value's bytes never pass through the master.
//
// Inspection (Stat, List, Nodes, Tasks, Hot, TuneGet, MetricsText, Exists) never counts as an
// access: no lease, no recency, no promotion.
//
// Retries: calls that are safe to repeat (reads, inspection, Remove, TuneSet, Exists) are retried
// on a fresh connection after a transport failure (ClientOptions::retries). PutStart/PutEnd
// are not: a Put that fails in transport returns the error and leaves the key absent (the
// master reclaims an abandoned put after put_timeout_sec).
//
// Thread-safety: a Client may be used from any number of threads at once; each call borrows
// its own pooled connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/manual_move.h"
#include "core/base/master_types.h"
#include "core/base/status.h"
#include "core/base/types.h"
#include "net/data_transport.h"

namespace mooncake {

class FanOut;
class MasterChannel;

struct ClientOptions {
    std::chrono::milliseconds connect_timeout{3000};
    std::chrono::milliseconds rpc_timeout{30000};   // per control call
    std::chrono::milliseconds data_timeout{30000};  // per socket call on the data channel
    int retries = 2;                                // extra attempts of idempotent calls
    std::string auth_token;  // the master's and nodes' --auth_token_file contents, if any
    std::string client_name = "mooncake-client";
    // The tenant every call acts in: its keys are its own (core/base/tenant.h). "" or
    // "default": the default tenant. A master that does not support tenants is refused.
    std::string tenant;
    // --master etcd://...: the HA cluster whose leader to follow (empty: $MOONCAKE_CLUSTER_ID,
    // else "mooncake_cluster"; docs/HA.md).
    std::string cluster_id;
    // Replaces the TCP data transport (an in-process node, an RDMA transport, a test fake).
    std::shared_ptr<DataTransport> transport;
    // Transfers of one BatchGet / BatchPut in flight at once (each on its own pooled data
    // connection; 1: one after another). The client's batch workers (batch_parallelism - 1
    // threads, started by the first batch) are shared by all its callers.
    size_t batch_parallelism = 4;
};

// Where a replica's node is, parallel to ObjectView::replicas.
struct ReplicaLocation {
    std::string node_name;     // the node's advertised RPC address ("" if it is gone)
    std::string data_address;  // HOST:PORT of its data channel
};

// An object's metadata as the master reports it. In a client result, object.lease_expiry is
// the lease time *remaining* when the master answered (not an absolute time).
struct ObjectInfo {
    ObjectView object;
    std::vector<ReplicaLocation> locations;  // locations[i] is where object.replicas[i] lives
};

// The index of `info`'s first COMPLETE replica whose node has a data address (the one a read
// tries first), or replicas.size() if none.
size_t FirstReachableReplica(const ObjectInfo& info);

struct ListPage {
    std::vector<ObjectInfo> objects;  // sorted by key
    bool more = false;                // ask again with start_after = objects.back().object.key
};

// One row of the knob table (core/base/knobs.def) with its current value on the master.
struct KnobInfo {
    std::string name;
    std::string value;
    std::string default_value;
    std::string range;  // "0..255", "true|false", "standalone|master|node", "any text"
    std::string type;   // bool|int|double|size|enum|string
    bool tunable = false;  // changeable at runtime by TuneSet
    std::string doc;
};

// Per-key result of a batch or manual tier move. `outcome` is set when status is ok.
struct KeyOutcome {
    std::string key;
    Status status;
    std::optional<ManualOutcome> outcome;
};

// How one key of WaitForMove ended (core/base/manual_move.h has the rule).
struct MoveKeyResult {
    std::string key;
    MoveEnd end = MoveEnd::kLate;
    // kReached: kDone (the move happened) or kAlreadyThere (the key had the state already).
    ManualOutcome outcome = ManualOutcome::kDone;
    // Ok when kReached. kRefused, kBusy: the master's refusal. kRemoved (NotFound),
    // kEndedShort (IoError), kLate (Timeout): a one-line message for the key.
    Status status;
};

struct MoveWaitOptions {
    // When to stop waiting: keys still moving then end kLate (their move may still complete).
    std::chrono::steady_clock::time_point deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool force = false;  // promote: even under DRAM pressure (also when asked again)
};

// What a scrub of one node's disk found (Client::Scrub).
struct ScrubResult {
    std::string node;  // its advertised RPC address
    uint64_t checked = 0;
    uint64_t checked_bytes = 0;
    uint64_t io_errors = 0;
    std::vector<std::pair<std::string, Generation>> corrupt;  // dropped, then removed
    std::string error;  // not empty: this node could not be scrubbed
};

// One object of BatchPutPieces: its key and its value as pieces of caller memory
// (net/byte_pieces.h), both borrowed for the call.
// One tenant's row of `mooncakectl tenant ls` (MasterService.TenantList).
struct TenantUsage {
    std::string tenant;
    bool registered = false;
    uint64_t memory_quota = 0;  // 0: none
    uint64_t disk_quota = 0;    // 0: none
    uint64_t memory_bytes = 0;
    uint64_t memory_objects = 0;
    uint64_t disk_bytes = 0;
    uint64_t disk_objects = 0;
    uint64_t puts_refused = 0;
    uint64_t quota_evictions = 0;
    uint64_t promotions = 0;
};

struct TenantListing {
    std::vector<TenantUsage> tenants;  // a tenant's session: its own row only
    uint64_t memory_quota_sum = 0;
    uint64_t disk_quota_sum = 0;
    uint64_t memory_capacity = 0;
    uint64_t disk_capacity = 0;
    bool multi_tenant = false;
    std::vector<std::string> warnings;
    uint64_t removed = 0;  // TenantRemove with purge: objects removed
};

struct PiecesItem {
    std::string_view key;
    ConstPieces value;
    std::string_view group = {};  // the group it joins ("" none; see PutConfig::group)
};

struct RemovePrefixResult {
    uint64_t removed = 0;
    uint64_t skipped = 0;  // leased keys left in place (without force)
};

class Client {
public:
    // Connects to the master at HOST:PORT and checks the protocol version.
    // kUnavailable if nothing answers there; kInvalidArgument on a version mismatch or a bad
    // address; kIllegalClient if the auth token is refused.
    static Result<std::unique_ptr<Client>> Connect(std::string_view master,
                                                   const ClientOptions& options = {});
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    // ---- objects ----

    // Stores `value` (1 byte .. max_value_size) under a key that does not exist yet.
    // `preferred`: allocate in that node's segment if it has room (else where the master
    // would; an unknown node is no preference). Not used against a standalone daemon.
    // `pin` (core/master/pin_table.h): a pinned put always takes the PutStart path, which carries it.
    Status Put(std::string_view key, std::span<const std::byte> value,
               NodeId preferred = kNoNode, const PutConfig& pin = {});
    Status Put(std::string_view key, std::string_view value) {
        return Put(key, std::as_bytes(std::span(value.data(), value.size())));
    }
    // Put of a value that is its pieces concatenated in order (scattered caller buffers): the
    // pieces go to the node with vectored I/O, or by one memcpy each into a local segment; no
    // contiguous copy is made. Put is this with one piece.
    Status PutPieces(std::string_view key, ConstPieces value, NodeId preferred = kNoNode,
                     const PutConfig& pin = {});
    // Stores a value of `size` bytes taken from `source` as they are sent (a file is sent with
    // sendfile, a pipe spliced): memory use does not grow with the value. The master checks
    // `size` (max_value_size, DRAM room) before a byte is read. A source that fails or ends
    // short fails the put, which is revoked: nothing readable is left.
    Status PutFrom(std::string_view key, uint64_t size, ByteSource& source);
    // Puts several objects with one PutStart and one PutEnd round trip, the values' bytes
    // written batch_parallelism at a time; one Status per item. (Against a standalone daemon
    // each value is a Put of its own, one exchange each, batch_parallelism at a time.)
    std::vector<Status> BatchPut(
        std::span<const std::pair<std::string, std::span<const std::byte>>> items,
        NodeId preferred = kNoNode, const PutConfig& pin = {});
    // BatchPut of values in pieces (as PutPieces).
    std::vector<Status> BatchPutPieces(std::span<const PiecesItem> items,
                                       NodeId preferred = kNoNode, const PutConfig& pin = {});

    // ---- a batch put in two steps (BatchPutPieces is the two together; the Python module's
    // put sessions hold the values in between) ----
    // A started put: its generation and the ranges its bytes go to (the first, then each
    // copy's), PROCESSING: no reader sees the key until it is committed.
    struct PutStarted {
        struct Range {
            std::string address;  // the holder's data channel
            uint64_t offset = 0;  // in its DRAM segment
        };
        Generation generation = kNoGeneration;
        std::vector<Range> ranges;
    };
    struct PutBeginItem {
        std::string_view key;
        uint64_t size = 0;
        std::string_view group = {};
    };
    // PutStart of every item in one round trip (the PutStart path, against a standalone daemon
    // too): its ranges allocated, or why not (AlreadyExists, NoSpace, ...).
    std::vector<Result<PutStarted>> BatchPutBegin(std::span<const PutBeginItem> items,
                                                  NodeId preferred = kNoNode,
                                                  const PutConfig& pin = {});
    // Writes each started put's value (its full size) to every one of its ranges, one
    // pipelined stream per node, ends those written in one round trip and revokes the rest.
    // One Status per key.
    std::vector<Status> BatchPutCommit(std::span<const std::string_view> keys,
                                       std::span<const PutStarted> started,
                                       std::span<const ConstPieces> values);
    // Gives started puts up: their ranges freed, their keys free again. One Status per key.
    std::vector<Status> BatchPutAbandon(std::span<const std::string_view> keys,
                                        std::span<const Generation> generations);

    // Reads the whole value. A read: counts toward promotion.
    Result<std::string> Get(std::string_view key);
    // Reads into `out` (which must hold the whole value) and returns the value's size. If `out`
    // is too small: kInvalidArgument naming the size needed, nothing read.
    // `served_from`, when given, is set to the tier of the replica the bytes came from.
    Result<uint64_t> GetInto(std::string_view key, std::span<std::byte> out,
                             Tier* served_from = nullptr);
    // GetInto scattering the value over `out`'s pieces in order (they must hold it in total;
    // the last ones may be left untouched): vectored receives, or one memcpy per piece out of
    // a local segment.
    Result<uint64_t> GetIntoPieces(std::string_view key, MutablePieces out,
                                   Tier* served_from = nullptr);
    // Reads the value into `sink` as it arrives (spliced into a descriptor sink: a file,
    // /dev/null, a pipe), memory use independent of its size; returns the size. A read that
    // fails part-way tries the next replica only if the sink can rewind (a regular file, a
    // memory buffer, /dev/null); otherwise the error is returned with the sink holding a prefix.
    Result<uint64_t> GetTo(std::string_view key, ByteSink& sink, Tier* served_from = nullptr);
    // Reads several values with one replica-list round trip, batch_parallelism reads at a
    // time; one result per key (each a read, as Get). (Against a standalone daemon each key is
    // a one-exchange Get, batch_parallelism at a time: there is no round trip to share.)
    std::vector<Result<std::string>> BatchGet(std::span<const std::string> keys);
    // The same into the caller's buffers (outs[i] for keys[i], which must hold the whole value;
    // else kInvalidArgument for that key, nothing read): no allocation per value. One result
    // per key: the value's size, or why it was not read. `served_from`, when not empty (one
    // per key), is set to the tier each value was read from.
    std::vector<Result<uint64_t>> BatchGetInto(std::span<const std::string> keys,
                                               std::span<const std::span<std::byte>> outs,
                                               std::span<Tier> served_from = {});
    // BatchGetInto with each value scattered over its pieces (as GetIntoPieces).
    std::vector<Result<uint64_t>> BatchGetIntoPieces(std::span<const std::string> keys,
                                                     std::span<const MutablePieces> outs,
                                                     std::span<Tier> served_from = {});

    // One range of a value for BatchGetRanges: out.size() bytes from byte `offset` of the
    // value, into `out`.
    struct ValueRange {
        uint64_t offset = 0;
        std::span<std::byte> out;
    };
    // Reads ranges of values straight into caller memory (get_into_ranges): one replica-list
    // round trip for the batch, then each range read from its replica at its offset, pipelined
    // per node, into its `out` (no staging copy; bytes outside the ranges do not travel from a
    // MEMORY replica; a LOCAL_DISK holder reads the value from its disk and sends the range).
    // One status per key per range: ok, NotFound, or InvalidArgument for a range past the
    // value (nothing read). A read of each key, as Get. `lists`: the keys' replica lists
    // looked up already (one per key: a get session's), used without a round trip to the
    // master; a replica gone since is looked up again, as any failed read is. Empty: looked up.
    std::vector<std::vector<Status>> BatchGetRanges(std::span<const std::string> keys,
                                                    std::span<const std::vector<ValueRange>> ranges,
                                                    std::vector<Result<ObjectInfo>> lists = {});

    // Removes the key (its DRAM now, its disk copies at the holders' next heartbeat).
    // Refused with kHasLease while leased, unless `force`.
    Status Remove(std::string_view key, bool force = false);
    std::vector<Status> BatchRemove(std::span<const std::string> keys, bool force = false);
    Result<RemovePrefixResult> RemoveByPrefix(std::string_view prefix, bool force = false);

    // True when the key has a COMPLETE replica. Not an access.
    // `prefetch`: a LOCAL_DISK-only key is read as Get reads it, so the master's promotion
    // trigger (its admission gate) may bring it to MEMORY before the read that follows.
    Result<bool> Exists(std::string_view key, bool prefetch = false);
    std::vector<Result<bool>> BatchExists(std::span<const std::string> keys,
                                          bool prefetch = false);

    // The replicas a reader would use (COMPLETE, MEMORY first, a MEMORY copy near this
    // client's transport before the others: PreferNearMemoryCopy). This IS an access: it
    // grants a read lease, refreshes recency and may trigger promotion, exactly like Get.
    Result<ObjectInfo> GetReplicaList(std::string_view key);
    // The same for several keys in one round trip; one result per key.
    std::vector<Result<ObjectInfo>> BatchGetReplicaList(std::span<const std::string> keys);

    // ---- inspection (never an access) ----

    Result<ObjectInfo> Stat(std::string_view key);  // every replica, any state
    Result<ListPage> List(const ListOptions& options);
    // Every matching object, paging internally (options.limit is the page size).
    Result<std::vector<ObjectInfo>> ListAll(ListOptions options);
    Result<std::vector<NodeInfo>> Nodes();  // live nodes; last_heartbeat = time since it
    Result<std::vector<TaskView>> Tasks();
    Result<std::vector<HotKey>> Hot(size_t limit);
    Result<std::string> MetricsText();  // Prometheus text exposition, as /metrics serves it
    // The master's bookkeeping checked against a walk over everything (quiet store only).
    Result<InvariantReport> CheckInvariants();
    // Reads every disk record of node `node` (kNoNode: every live node) and verifies its
    // checksum; the corrupt ones are dropped and their keys removed. Waits for the answer up
    // to `max_time` beyond the call deadline (a scrub reads the whole disk at its background
    // rate). Not an access.
    Result<std::vector<ScrubResult>> Scrub(NodeId node, std::chrono::milliseconds max_time);

    // ---- tuning ----

    Result<std::vector<KnobInfo>> TuneGet();
    // Applies all assignments or none (a bad name or out-of-range value refuses the lot with
    // kInvalidArgument naming it). Returns the table after the change. With `persist`, the
    // daemon also writes them into its --config file, replacing each knob's line (or appending
    // it), atomically; refused with nothing changed when it was started without --config
    // (kInvalidArgument) or cannot write the file (kIoError).
    Result<std::vector<KnobInfo>> TuneSet(
        const std::vector<std::pair<std::string, std::string>>& assignments,
        bool persist = false);

    // ---- tenants (issue 34) ----

    Result<TenantListing> TenantList();
    // Registers `tenant` or changes its quotas (0: none). Needs the cluster's token.
    Result<TenantListing> TenantSet(const std::string& tenant, uint64_t memory_quota,
                                    uint64_t disk_quota);
    // Unregisters `tenant`; refused while it holds objects unless `purge`. Cluster's token.
    Result<TenantListing> TenantRemove(const std::string& tenant, bool purge);

    // ---- manual tier moves: one outcome per key ----

    // Queue a promotion to MEMORY (bypasses admission; respects DRAM pressure unless force).
    Result<std::vector<KeyOutcome>> Promote(std::span<const std::string> keys, bool force = false);
    // Write a LOCAL_DISK copy, MEMORY kept.
    Result<std::vector<KeyOutcome>> Offload(std::span<const std::string> keys);
    // Drop the MEMORY copy (offloading first when offload is on and no disk copy exists).
    Result<std::vector<KeyOutcome>> Evict(std::span<const std::string> keys);
    // One of the three above, by move (`force` is for promote only).
    Result<std::vector<KeyOutcome>> Move(TierMove move, std::span<const std::string> keys,
                                         bool force = false);

    // ---- manual tier moves until done ----
    //
    // Issues `move` for every key (any number; sent in batches) and waits until each has the
    // asked state (TierMoveTarget), polling Stat (inspection, never an access), backing off
    // from 10 ms to 200 ms. Asks again for keys refused as busy, and for an evict that found
    // an offload in flight once it ended. One result per key, in order. A status only when
    // the master fails as a whole (unreachable, a Stat failing other than NotFound).
    Result<std::vector<MoveKeyResult>> WaitForMove(TierMove move, std::span<const std::string> keys,
                                                   const MoveWaitOptions& options = {});
    // The same for a move already issued: `issued` is what Move (or Promote, Offload, Evict)
    // returned for the keys, in order.
    Result<std::vector<MoveKeyResult>> WaitForMove(TierMove move,
                                                   std::span<const KeyOutcome> issued,
                                                   const MoveWaitOptions& options = {});

    // ---- about the connection ----

    const std::string& master() const;
    const std::string& server_role() const;  // "master" or "standalone"
    // The tenant this client acts in: the one asked for, or the one its token implies.
    std::string_view tenant() const;
    // A standalone daemon's data channel (HOST:PORT), as its Hello named it; "" otherwise.
    const std::string& standalone_data_address() const;
    int64_t client_id() const;

private:
    Client(std::unique_ptr<MasterChannel> channel, std::shared_ptr<DataTransport> transport,
           size_t batch_parallelism);
    // Reads the value into the first info.object.size bytes of `out`'s pieces.
    Status ReadReplicas(const ObjectInfo& info, MutablePieces out, Tier* served_from = nullptr);
    // The replica loop of ReadReplicas with `read` doing one replica's transfer; `again`
    // says whether another replica may be tried after a failure.
    Status ReadReplicasWith(const ObjectInfo& info, Tier* served_from,
                            const std::function<Status(const std::string& address,
                                                       const ReplicaDesc& replica)>& read,
                            const std::function<bool()>& again);
    // PutStart, `write_copy` into each further copy's range (pin.replicas > 1), `write` into
    // the first range, PutEnd unless `write` says (*ended) the node ended the put; revoked on
    // any failure after PutStart.
    using CopyWriter =
        std::function<Status(const std::string& address, Generation generation, uint64_t offset)>;
    Status PutWith(std::string_view key, uint64_t size,
                   const std::function<Status(const std::string& address, Generation generation,
                                              uint64_t offset, bool* ended)>& write,
                   NodeId preferred = kNoNode, const PutConfig& pin = {},
                   const CopyWriter& write_copy = nullptr);
    // BatchGet / BatchGetInto: reads keys[i] into the pieces buffer_for(i, size, &refused)
    // returns (refused not ok: that is the key's answer), batch_width_ reads at a time.
    // `served_from`: empty, or one tier per key to set.
    void BatchRead(std::span<const std::string> keys,
                   const std::function<MutablePieces(size_t, uint64_t, Status*)>& buffer_for,
                   std::vector<Status>& out, std::span<Tier> served_from = {});

    // Runs ops[i] at addresses[i]: the ops of one address as pipelined batches
    // (DataTransport::RunBatch), a large group cut into parts so the node's connection
    // threads work in parallel, the addresses and parts batch_width_ at a time.
    // BatchPutPieces against a standalone daemon: by-key puts, pipelined.
    std::vector<Status> BatchPutByKey(std::span<const PiecesItem> items);
    void RunPipelined(std::span<const std::string> addresses, std::span<BatchOp> ops);

    std::unique_ptr<MasterChannel> channel_;
    std::shared_ptr<DataTransport> transport_;
    // A standalone daemon's data channel, when it and the transport do by-key ops: Get, GetInto
    // and small Puts are then one exchange there (net/data_protocol.h kFlagByKey). Else empty.
    const std::string by_key_address_;
    const size_t batch_width_;
    std::unique_ptr<FanOut> fan_out_;  // batch_width_ - 1 workers
};

}  // namespace mooncake
