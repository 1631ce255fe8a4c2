// Mooncake's session API (its PR #2881), as layer-wise engines drive it (vLLM's Mooncake store
// connector when the store has every method; SGLang's direct linker for its loads):
//
//   batch_put_session_start(keys, sizes, config)   -> per key 0 / error: the objects allocated
//   batch_put_from_multi_buffer_ranges(keys, ...)  -> per key bytes / error: ranges of them, one
//                                                     call per layer as the layers are computed
//   batch_put_session_end(keys) / _revoke(keys)    -> per key 0 / error: committed / given up
//   batch_get_session_start(keys)                  -> per key 0 / error: looked up once
//   batch_get_session_start_with_sources(keys)     -> the same, and per key the tier its reads
//                                                     will come from ("memory", "local_disk")
//   batch_get_into_multi_buffer_ranges(keys, ...)  -> per key bytes / error: ranges, per layer
//   batch_get_session_end(keys)                    -> 0
//
// How it is done here, and what differs from Mooncake:
//  - A put session allocates at its start (so NO_AVAILABLE_HANDLE and OBJECT_ALREADY_EXISTS
//    come where Mooncake gives them), gathers its ranges in this process (a buffer of the
//    object's size, made at its first range) and writes the object to its replicas in one
//    pipelined stream at its end: a node takes a replica's bytes as one write (one record,
//    one checksum when it is offloaded). Mooncake writes each range into the replica as it
//    comes. The cost is one copy of each range here, and the object's size in memory while
//    its session is open.
//  - A get session keeps the replica lists it looked up (a read of each key, as Get: recency,
//    promotion); its range reads use them with no round trip to the master. A replica gone
//    since is looked up again, and a node checks every read by (key, generation), so a session
//    does not expire (Mooncake's does with its lease: -707) and never reads another object.
//    A range read of a key with no session looks it up first.
//
// Thread-safety: every method may be called from several threads; one key's session is the
// caller's to order (start, ranges, end), as with Mooncake.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/mutex.h"
#include "thrift/client.h"

namespace mooncake::py {

class RangeSessions {
public:
    // A range of one object: `bytes` at byte `offset` of the value.
    struct PutRange {
        uint64_t offset = 0;
        std::span<const std::byte> bytes;
    };

    explicit RangeSessions(Client& client) : client_(client) {}

    // Starts a put of each key (`sizes[i]` bytes, joining group `groups[i]`, "" none),
    // allocated now. A key with a session open already is refused (-600); its session is left
    // as it is.
    std::vector<int> PutStart(const std::vector<std::string>& keys,
                              const std::vector<uint64_t>& sizes,
                              const std::vector<std::string_view>& groups, NodeId preferred,
                              const PutConfig& config) MC_EXCLUDES(mu_);
    // Takes each key's ranges (copied now): per key the bytes taken, or -600 for a range past
    // the object or a key with no session (nothing taken of that key).
    std::vector<int64_t> PutRanges(const std::vector<std::string>& keys,
                                   const std::vector<std::vector<PutRange>>& ranges)
        MC_EXCLUDES(mu_);
    // Writes each object (bytes no range gave are zeros) and commits it: per key 0 or why not
    // (the put is revoked then). A key with no session: -600.
    std::vector<int> PutEnd(const std::vector<std::string>& keys) MC_EXCLUDES(mu_);
    // Gives each put up: its DRAM freed, its key free again. A key with no session: -600.
    std::vector<int> PutRevoke(const std::vector<std::string>& keys) MC_EXCLUDES(mu_);

    // Looks each key up (a read, as Get): per key 0, or why not (-704 when it does not exist).
    // `sources` (if given) gets, per key, the tier its range reads will be served from (its
    // first COMPLETE replica in read order), or nothing for a key that was not found.
    std::vector<int> GetStart(const std::vector<std::string>& keys,
                              std::vector<std::optional<Tier>>* sources = nullptr)
        MC_EXCLUDES(mu_);
    // Reads each key's ranges into caller memory: per key the bytes read, or the first error.
    std::vector<int64_t> GetRanges(const std::vector<std::string>& keys,
                                   const std::vector<std::vector<Client::ValueRange>>& ranges)
        MC_EXCLUDES(mu_);
    // Forgets the keys' get sessions (none open: nothing to do). Always 0.
    int GetEnd(const std::vector<std::string>& keys) MC_EXCLUDES(mu_);

    // Revokes every open put session (the store closes).
    void AbandonAll() MC_EXCLUDES(mu_);
    // Open sessions.
    size_t open_puts() const MC_EXCLUDES(mu_);
    size_t open_gets() const MC_EXCLUDES(mu_);

private:
    using Bytes = std::unique_ptr<std::byte[]>;
    struct Put {
        Client::PutStarted started;
        uint64_t size = 0;
        Mutex bytes_mu;  // ranges of one object may come from several threads
        Bytes bytes MC_GUARDED_BY(bytes_mu);  // `size` bytes, taken at the first range
        // Ended or revoked: a range racing that is refused, not copied into bytes being sent.
        bool closed MC_GUARDED_BY(bytes_mu) = false;
        // The ranges copied in, [begin, end): what they leave out is zeroed at the end (a
        // layer-wise put covers its object, so nothing is written twice).
        std::vector<std::pair<uint64_t, uint64_t>> covered MC_GUARDED_BY(bytes_mu);
        void ZeroWhatNoRangeGave() MC_REQUIRES(bytes_mu);
    };
    // Takes the keys' put sessions out (null where none is open), for end and revoke.
    std::vector<std::shared_ptr<Put>> TakePuts(const std::vector<std::string>& keys)
        MC_EXCLUDES(mu_);
    // A put's buffer (not zeroed): a recycled one of its size if there is one. Fresh memory costs a
    // page fault per 4 KiB (40 ms for the 16 MiB of 64 layer-wise objects on the VM measured,
    // more than the transfer), and engines put objects of one size over and over.
    Bytes TakeBuffer(uint64_t size) MC_EXCLUDES(mu_);
    // Keeps `bytes` for the next put of `size` bytes, while the kept ones stay under
    // kKeptBytes; frees it otherwise.
    void KeepBuffer(uint64_t size, Bytes bytes) MC_EXCLUDES(mu_);
    static constexpr uint64_t kKeptBytes = uint64_t{256} << 20;
    // Get sessions an engine never ended are dropped past this many (their range reads then
    // look the keys up: slower, never wrong).
    static constexpr size_t kMaxGetSessions = size_t{1} << 20;

    Client& client_;
    mutable Mutex mu_;
    std::unordered_map<std::string, std::shared_ptr<Put>> puts_ MC_GUARDED_BY(mu_);
    std::unordered_map<std::string, ObjectInfo> gets_ MC_GUARDED_BY(mu_);
    std::unordered_map<uint64_t, std::vector<Bytes>> kept_ MC_GUARDED_BY(mu_);  // by size
    uint64_t kept_bytes_ MC_GUARDED_BY(mu_) = 0;
};

}  // namespace mooncake::py
