// DataTransport: how object bytes move between a client (or a node) and a node's segment or
// disk. The TCP implementation below speaks thrift/data_protocol.h; an RDMA one can implement
// the same interface later, and the daemon wraps it to short-circuit its own segment to memcpy.
//
// Every call names (key, generation): the node refuses a range that no longer holds that
// incarnation (kStaleGeneration / kNotFound), so a caller gets the right bytes or an error,
// never another object's bytes.
//
// Thread-safety: implementations are safe to call from many threads at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/base/types.h"
#include "net/byte_pieces.h"
#include "net/byte_stream.h"

namespace mooncake {

// One value of a batch for one address (DataTransport::RunBatch): the request, and once the
// call returns, its answer. Items are independent: one's refusal never fails another.
struct BatchOp {
    enum class Kind {
        kWrite,      // WriteMemoryPieces: `send` into the range (generation, offset)
        kRead,       // ReadPieces: exactly PiecesSize(receive) bytes of (tier, generation, offset)
        kPutByKey,   // PutPiecesByKey of `send` for `client`
        kReadByKey,  // ReadByKeyIntoPieces: up to PiecesSize(receive) bytes
    };
    Kind kind = Kind::kRead;
    std::string_view key;
    Tier tier = Tier::kMemory;
    Generation generation = kNoGeneration;
    uint64_t offset = 0;
    ConstPieces send;
    MutablePieces receive;
    ClientId client = 0;

    Status status;                      // the item's answer
    uint64_t size = 0;                  // kReadByKey: the value's size
    Tier served_from = Tier::kMemory;   // kReadByKey: the tier read
    bool sent = false;                  // kPutByKey: the request may have left (see PutByKey)
};

class DataTransport {
public:
    virtual ~DataTransport() = default;

    // Writes `data` into the MEMORY range at `offset` of the segment served at `address`
    // (HOST:PORT of the node's data channel), recording the range as holding (key, generation).
    virtual Status WriteMemory(std::string_view address, std::string_view key,
                               Generation generation, uint64_t offset,
                               std::span<const std::byte> data) = 0;

    // Reads exactly out.size() bytes of (key, generation): for MEMORY from segment `offset`,
    // for LOCAL_DISK from `offset` inside the object (through the holder's disk store).
    virtual Status Read(std::string_view address, Tier tier, std::string_view key,
                        Generation generation, uint64_t offset, std::span<std::byte> out) = 0;

    // WriteMemory of `length` bytes taken from `source` as they are sent: the value is never
    // held whole on this side. A source that fails or ends early fails the write, and the
    // range keeps nothing readable. The default gathers the value in memory and calls
    // WriteMemory (for transports with nothing better, such as a memcpy into a local segment).
    virtual Status WriteMemoryFrom(std::string_view address, std::string_view key,
                                   Generation generation, uint64_t offset, uint64_t length,
                                   ByteSource& source);

    // A put's write that also asks the node to end the put once the bytes have landed
    // (MasterStore::PutEnd on behalf of `client`, net/data_protocol.h kFlagEndPut), saving the
    // writer its own PutEnd round trip to the master. `*ended` says what happened:
    //   Ok, *ended true:  the bytes are written AND the object is COMPLETE (readable);
    //   Ok, *ended false: the bytes are written only: this transport cannot ask (the default,
    //                     e.g. a memcpy into a local segment), the caller calls PutEnd itself;
    //   an error:         the put failed (a node-side PutEnd refusal included); the caller
    //                     revokes it, as after any failed write.
    virtual Status WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                        Generation generation, uint64_t offset,
                                        std::span<const std::byte> data, ClientId client,
                                        bool* ended);
    // The same for a streamed value (WriteMemoryFrom).
    virtual Status WriteMemoryFromEndingPut(std::string_view address, std::string_view key,
                                            Generation generation, uint64_t offset,
                                            uint64_t length, ByteSource& source,
                                            ClientId client, bool* ended);
    // Read of `length` bytes handed to `sink` as they arrive. The default reads into memory
    // and writes that to the sink.
    virtual Status ReadTo(std::string_view address, Tier tier, std::string_view key,
                          Generation generation, uint64_t offset, uint64_t length,
                          ByteSink& sink);

    // ---- one exchange with a standalone daemon (net/data_protocol.h kFlagByKey) ----
    // The daemon does the master's part itself: no master round trip before the bytes.
    // A transport without them (the defaults) says so in HasByKey; the caller then takes the
    // two-step path.
    virtual bool HasByKey() const { return false; }
    // Reads `key` as Get does (a read: lease, recency, promotion). `buffer_for(size)` is called
    // once the value's size is known (size <= max_size) and gives where its bytes go (at least
    // `size` long). Returns the size, and sets *served_from (if given) to the tier of the
    // replica read. Refusals as Get's (NotFound, NotReady, InvalidArgument for a value over
    // max_size, Corruption).
    virtual Result<uint64_t> ReadByKey(
        std::string_view address, std::string_view key, uint64_t max_size,
        const std::function<std::span<std::byte>(uint64_t size)>& buffer_for,
        Tier* served_from = nullptr);
    // The same into `out` (max_size = out.size()); the default calls ReadByKey.
    virtual Result<uint64_t> ReadByKeyInto(std::string_view address, std::string_view key,
                                           std::span<std::byte> out,
                                           Tier* served_from = nullptr);
    // Puts `value` under a new `key` for `client` (PutStart, the bytes, PutEnd at the daemon):
    // OK means COMPLETE. Refusals as Put's, after the value has been sent. Not retried: when
    // the answer is lost the put may or may not have happened. *sent (if given) is false when
    // the request never left (no connection could be made): then nothing happened.
    virtual Status PutByKey(std::string_view address, std::string_view key, ClientId client,
                            std::span<const std::byte> value, bool* sent = nullptr);

    // ---- values in pieces of caller memory (net/byte_pieces.h) ----
    // The calls above for a value that is its pieces concatenated in order; a read fills
    // exactly PiecesSize(out) bytes (ReadByKeyIntoPieces: up to that many). The defaults hand
    // one piece to the span call and join (or split) several through one copy, for transports
    // with nothing better; the TCP transport sends and receives the pieces with vectored
    // socket calls, and a local segment copies each piece once.
    virtual Status WriteMemoryPieces(std::string_view address, std::string_view key,
                                     Generation generation, uint64_t offset, ConstPieces data);
    virtual Status WriteMemoryPiecesEndingPut(std::string_view address, std::string_view key,
                                              Generation generation, uint64_t offset,
                                              ConstPieces data, ClientId client, bool* ended);
    virtual Status ReadPieces(std::string_view address, Tier tier, std::string_view key,
                              Generation generation, uint64_t offset, MutablePieces out);
    virtual Status PutPiecesByKey(std::string_view address, std::string_view key, ClientId client,
                                  ConstPieces value, bool* sent = nullptr);
    virtual Result<uint64_t> ReadByKeyIntoPieces(std::string_view address, std::string_view key,
                                                 MutablePieces out, Tier* served_from = nullptr);

    // ---- a batch of values for one address ----
    // Every op in `ops`, each answered in its own status (and size, tier, sent). The default
    // makes them one at a time with the calls above. The TCP transport pipelines them: the
    // requests of a window leave in one vectored send, straight from the caller's pieces, and
    // the answers come back on the same connection in order (net/data_protocol.h kFlagMore).
    // A connection that breaks part-way answers the ops it did not answer with its error
    // (kUnavailable for a closed one); the ops that may be sent again are, once, on a fresh
    // connection, as a single call would be.
    virtual void RunBatch(std::string_view address, std::span<BatchOp> ops);

    // Whether this transport reaches the node at data `address` without the network (its own
    // process's segment, a node on this host through shared memory): a reader tries such a
    // MEMORY copy first (PreferNearMemoryCopy, core/base/master_types.h). Cheap; never
    // connects. The default: no address is near.
    virtual bool IsNear(std::string_view /*address*/) { return false; }
};

struct TcpTransportOptions {
    // Bounds connect and every send/recv on a data connection. A 64 MiB transfer is a series
    // of socket calls, each bounded by this, not the whole transfer.
    std::chrono::milliseconds timeout{10000};
    std::string auth_token;       // sent in each connection's Hello
    size_t max_idle_per_peer = 8; // pooled idle connections kept per address
};

// Plain TCP with pooled connections per address. A request that fails on a pooled connection
// (the peer may have closed it while idle) is retried once on a fresh one: reads and writes
// of a (key, generation) range are idempotent (a streamed one only if its source or sink can
// rewind), and so is ending a put (a retried end-put write of a put already ended answers OK).
// End-put writes are version 2 headers: a node that predates them refuses them with "data
// channel version 2 is not supported" (upgrade nodes before clients). Streamed transfers use
// sendfile/splice where the source or sink is a descriptor (net/stream_io.h).
std::unique_ptr<DataTransport> NewTcpTransport(const TcpTransportOptions& options);

}  // namespace mooncake
