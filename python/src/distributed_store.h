// DistributedStore: the C++ half of mooncake_tier.store.MooncakeDistributedStore, in plain
// C++ types (the pybind11 layer in store_module.cc only converts and releases the GIL).
//
// It adapts the client library (thrift/client.h) to Mooncake's return conventions: 0 or a
// negative Mooncake ErrorCode (error_codes.h); sizes or counts when positive. With a
// global_segment_size it also runs an embedded node (node/embedded_node.h) in this process.
// Tier rules stay in the master; nothing here decides where an object lives.
//
// Thread-safety: every method may be called from many threads at once; Setup and Close take
// the store exclusively, the rest share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "core/base/master_types.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "net/byte_pieces.h"

namespace mooncake {
class Client;
struct PiecesItem;
class EmbeddedNode;
class LocalFirstTransport;
}  // namespace mooncake

namespace mooncake::py {

struct SetupOptions {
    std::string local_hostname = "localhost";  // HOST or HOST:PORT
    uint64_t global_segment_size = 16ull << 20;  // DRAM the embedded node contributes; 0: none
    uint64_t local_buffer_size = 16ull << 20;    // bound of a staged (non zero-copy) put
    std::string master_server_addr = "127.0.0.1:50051";
    bool enable_ssd_offload = false;
    std::string ssd_offload_path;  // else $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH
    uint64_t ssd_offload_size = 0;  // 0: the disk_size knob's default
    // The tenant every key of this store belongs to ("" or "default": the default tenant;
    // core/base/tenant.h). Another tenant's keys are neither seen nor touched.
    std::string tenant_id;
    // setup_dummy: hand registered MooncakeHostMemAllocator pools to a node on this host, which
    // then copies bytes in and out of them itself (python/src/shared_pool_transport.h).
    bool shared_pools = false;
};

// Parses "16MB", "16 MB", "1.5GiB", "4096" (binary multiples, as Mooncake reads them).
Result<uint64_t> ParseHumanSize(std::string_view text);

struct ReplicaInfo {
    Tier tier = Tier::kMemory;
    ReplicaState state = ReplicaState::kComplete;
    uint64_t size = 0;
    std::string node;  // the holder's advertised name
};

// One range of get_into_ranges: dst offset into the buffer, src offset into the value, size.
struct ByteRange {
    uint64_t dst = 0, src = 0, size = 0;
};

// What ReplicateConfig says about a write that the store honours. `segment`: the name of the
// node whose segment should hold the object (preferred_segment; "" = wherever the master
// allocates), a hint the master takes if that node has room. `pin`: with_soft_pin /
// soft_pin_ttl_ms / with_hard_pin (core/master/pin_table.h).
struct WritePlacement {
    std::string segment;
    // Where copies past the first go first (pin.replicas > 1), by node name; resolved into
    // pin.copy_nodes when written.
    std::vector<std::string> copy_segments;
    PutConfig pin;
    // ReplicateConfig.group_ids: the group of the i-th key written (core/master/group_table.h);
    // empty, or one per key ("" = that key ungrouped).
    std::vector<std::string> groups;
    // ReplicateConfig.tenant_id: "" or the store's own tenant; another is refused (a store
    // acts in the one tenant it was set up in).
    std::string tenant;
    std::string_view GroupFor(size_t i) const {
        return i < groups.size() ? std::string_view(groups[i]) : std::string_view();
    }
};

class DistributedStore {
public:
    DistributedStore();
    ~DistributedStore();  // Close()

    // Closes every store of this process (at interpreter exit: a process that ends leaves the
    // cluster at once instead of leaving a dead node behind until client_live_ttl_sec).
    static void CloseAll();

    int Setup(const SetupOptions& options);
    int Close();
    bool is_setup() const;

    // Writes. Put of an existing key returns 0 and keeps the stored value (Mooncake's callers
    // put content-addressed blocks and treat "already there" as done). `staged`: the bytes are
    // Python-owned (put, put_batch, put_parts) and bounded by local_buffer_size; otherwise
    // they are caller memory named by address (put_from, batch_put_from), checked against the
    // registered buffers first (CheckCallerRange).
    //
    // `preferred` (every write): where and how the object lands (WritePlacement).
    int Put(const std::string& key, const void* data, size_t size, bool staged,
            const WritePlacement& preferred = {});
    std::vector<int> BatchPut(const std::vector<std::string>& keys,
                              const std::vector<const void*>& data,
                              const std::vector<size_t>& sizes, bool staged,
                              const WritePlacement& preferred = {});
    // One object from several pieces, concatenated in order (put_parts).
    int PutParts(const std::string& key, const std::vector<std::span<const std::byte>>& parts,
                 const WritePlacement& preferred = {});
    // Upsert: the key holds this value afterwards, whether or not it existed. The old version
    // is removed first (refused with -706 while a reader holds its lease, as remove is) and
    // the new one put; a put racing in between is retried. Not atomic: a reader in between
    // sees -704, never the old bytes after the call returned.
    int Upsert(const std::string& key, const void* data, size_t size, bool staged,
               const WritePlacement& preferred = {});
    std::vector<int> BatchUpsert(const std::vector<std::string>& keys,
                                 const std::vector<const void*>& data,
                                 const std::vector<size_t>& sizes, bool staged,
                                 const WritePlacement& preferred = {});
    // Objects each made of scattered caller buffers, concatenated in order
    // (batch_put_from_multi_buffers): per key 0 or a negative error; every key -600 when the
    // three lists differ in length; a key whose buffer and size lists differ, or with a buffer
    // past its registered region, -600. `upsert`: replace existing keys (Upsert). The buffers
    // are sent as they lie (vectored I/O, or one memcpy each into the local segment): no
    // contiguous copy of a value is made.
    std::vector<int> BatchPutMulti(const std::vector<std::string>& keys,
                                   const std::vector<std::vector<uintptr_t>>& buffers,
                                   const std::vector<std::vector<size_t>>& sizes,
                                   bool upsert = false, const WritePlacement& preferred = {});

    // Reads (each an access: lease, recency, promotion trigger).
    Result<std::string> Get(const std::string& key);
    std::vector<Result<std::string>> BatchGet(const std::vector<std::string>& keys);
    int64_t GetInto(const std::string& key, void* buffer, size_t size);
    // GetInto for many keys: one replica-list round trip and parallel reads (Client::
    // BatchGetInto). Per key the bytes read or a negative error; kInvalidParams for every key
    // when the three lists differ in length.
    std::vector<int64_t> BatchGetInto(const std::vector<std::string>& keys,
                                      const std::vector<uintptr_t>& buffers,
                                      const std::vector<size_t>& sizes);
    // Each value scattered over its key's buffers in order (batch_get_into_multi_buffers): per
    // key the value's size or a negative error (-600 when the buffers cannot hold it, when
    // the lists differ in shape, or a buffer runs past its registered region). The bytes land
    // in the buffers directly (vectored receives, or one memcpy each out of the local segment).
    std::vector<int64_t> BatchGetIntoMulti(const std::vector<std::string>& keys,
                                           const std::vector<std::vector<uintptr_t>>& buffers,
                                           const std::vector<std::vector<size_t>>& sizes);
    // Per buffer, per key, per range: bytes read or a negative error. A key whose three
    // range lists differ in length gets one error; a missing key one error per range. Each
    // range is read from the replica at its offset straight into the buffer
    // (Client::BatchGetRanges: one replica-list round trip, the ranges pipelined per node).
    std::vector<std::vector<std::vector<int64_t>>> GetIntoRanges(
        const std::vector<uintptr_t>& buffers, const std::vector<std::vector<std::string>>& keys,
        const std::vector<std::vector<std::vector<uint64_t>>>& dst,
        const std::vector<std::vector<std::vector<uint64_t>>>& src,
        const std::vector<std::vector<std::vector<uint64_t>>>& sizes);

    // Mooncake's session API for layer-wise transfers (python/src/range_sessions.h has what
    // each does and how it differs). Per key: 0 or bytes, or a negative error. The range calls
    // are key-major: per key, lists of buffers, sizes and object offsets; every buffer is
    // checked (CheckCallerRange) before a byte moves.
    std::vector<int> BatchPutSessionStart(const std::vector<std::string>& keys,
                                          const std::vector<uint64_t>& sizes,
                                          const WritePlacement& preferred = {});
    std::vector<int64_t> BatchPutFromMultiBufferRanges(
        const std::vector<std::string>& keys, const std::vector<std::vector<uintptr_t>>& buffers,
        const std::vector<std::vector<size_t>>& sizes,
        const std::vector<std::vector<uint64_t>>& offsets);
    std::vector<int> BatchPutSessionEnd(const std::vector<std::string>& keys);
    std::vector<int> BatchPutSessionRevoke(const std::vector<std::string>& keys);
    // `sources`: as RangeSessions::GetStart's (batch_get_session_start_with_sources).
    std::vector<int> BatchGetSessionStart(const std::vector<std::string>& keys,
                                          std::vector<std::optional<Tier>>* sources = nullptr);
    std::vector<int64_t> BatchGetIntoMultiBufferRanges(
        const std::vector<std::string>& keys, const std::vector<std::vector<uintptr_t>>& buffers,
        const std::vector<std::vector<size_t>>& sizes,
        const std::vector<std::vector<uint64_t>>& offsets);
    int BatchGetSessionEnd(const std::vector<std::string>& keys);

    // Inspection.
    int64_t GetSize(const std::string& key);  // not an access
    int IsExist(const std::string& key, bool prefetch);
    std::vector<int> BatchIsExist(const std::vector<std::string>& keys, bool prefetch);
    // An access, as Mooncake's replica query is: COMPLETE replicas, MEMORY first.
    Result<std::vector<ReplicaInfo>> GetReplicaDesc(const std::string& key);
    // The same for several keys in one round trip (one result per key).
    std::vector<Result<std::vector<ReplicaInfo>>> BatchGetReplicaDesc(
        const std::vector<std::string>& keys);

    int Remove(const std::string& key, bool force);
    std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force);
    int64_t RemoveByRegex(const std::string& pattern, bool force);
    int64_t RemoveAll(bool force);

    // A buffer inside a MooncakeHostMemAllocator pool also hands that pool to the node, when
    // set up with shared_pools; unregistering the last buffer in it takes it back.
    int RegisterBuffer(uintptr_t address, size_t size);
    int UnregisterBuffer(uintptr_t address);
    // Transfers that went through a shared pool (no bytes on a socket) since setup.
    uint64_t shared_pool_transfers() const;
    // Caller memory [address, address + size) that this store is about to write or read:
    // kOK when it lies inside registered memory (RegisteredEnd), or touches none (an
    // unregistered pointer is the caller's word, as with Mooncake over TCP); kInvalidParams
    // (logged, with the figures) when it starts inside a registered buffer and runs past its end,
    // runs into a registered buffer from outside, wraps around, or is null. Checked before a byte
    // moves, on every path that takes an address from Python.
    int CheckCallerRange(uintptr_t address, size_t size, const char* op) const;

    std::string hostname() const;
    int HealthCheck();
    uint64_t offload_rpc_read_count() const;

private:
    // The store's state between Setup and Close.
    struct Session;
    // Where the registered memory holding the byte at `address` ends, if any: buffers
    // registered end to end, overlapping or nested count as one region.
    std::optional<uintptr_t> RegisteredEnd(uintptr_t address) const MC_EXCLUDES(buffers_mu_);
    // The same with buffers_mu_ held, following adjacent buffers only until `need` is reached.
    std::optional<uintptr_t> RegisteredEndLocked(uintptr_t address, uintptr_t need) const
        MC_REQUIRES(buffers_mu_);
    // The furthest end of the registered buffers holding the byte at `at`; 0 if none does.
    uintptr_t CoveredTo(uintptr_t at) const MC_REQUIRES(buffers_mu_);
    static int PutResult(const Status& st);
    // BatchPut and BatchUpsert: each value checked, then one batch of puts.
    std::vector<int> BatchWrite(const std::vector<std::string>& keys,
                                const std::vector<const void*>& data,
                                const std::vector<size_t>& sizes, bool staged,
                                const WritePlacement& preferred, bool upsert);
    // One multi-buffer object's buffers checked (shape, CheckCallerRange each): kOK or why not.
    int CheckPieces(const std::vector<uintptr_t>& buffers, const std::vector<size_t>& sizes,
                    const char* op) const;
    // The write and read paths shared by the public forms: every value as pieces of caller
    // memory (one piece for the single-buffer forms).
    std::vector<int> PutItemsLocked(const std::vector<PiecesItem>& items, bool upsert,
                                    const WritePlacement& preferred) MC_REQUIRES_SHARED(mu_);
    // The id of the live node named `name` (kNoNode: "" or no such node).
    // Names are looked up in a cache refreshed from the master at most once a second.
    NodeId PreferredNodeLocked(const std::string& name) MC_REQUIRES_SHARED(mu_);
    // What the master is asked for a write: the pins and copies, the copies' segments as ids.
    PutConfig ConfigLocked(const WritePlacement& preferred) MC_REQUIRES_SHARED(mu_);
    // ReplicateConfig.tenant_id names none or this store's tenant; another is refused (logged).
    bool WritesInOwnTenantLocked(const WritePlacement& preferred) const MC_REQUIRES_SHARED(mu_);
    std::vector<int64_t> GetIntoLocked(const std::vector<std::string>& keys,
                                       const std::vector<MutablePieces>& outs)
        MC_REQUIRES_SHARED(mu_);

    mutable SharedMutex mu_;
    std::unique_ptr<Session> session_ MC_GUARDED_BY(mu_);
    std::string hostname_ MC_GUARDED_BY(mu_);
    std::string tenant_ MC_GUARDED_BY(mu_);  // KeyScope::tenant() of setup's tenant_id
    mutable Mutex buffers_mu_;
    std::map<uintptr_t, size_t> buffers_ MC_GUARDED_BY(buffers_mu_);  // start -> size
    size_t longest_buffer_ MC_GUARDED_BY(buffers_mu_) = 0;            // bounds CoveredTo's scan
};

}  // namespace mooncake::py
