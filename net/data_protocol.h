// The data channel's wire format: fixed-size little-endian headers for object bytes.
//
// Object bytes never travel in a Thrift frame; they go over this channel (TCP today, RDMA can
// sit beside it behind DataTransport). One request, one response, on a connection that may be
// reused for many:
//
//   request  = RequestHeader (40 bytes) | key (key_length bytes) | [client id, 8 bytes LE:
//              kWrite with kFlagEndPut or kFlagByKey only] | payload (length bytes, kWrite and
//              kHello only)
//   response = ResponseHeader (24 bytes) | message (message_length bytes, errors only) |
//              payload (length bytes, kRead only)
//
// A connection's first request must be kHello (payload: the auth token, possibly empty); the
// server answers every later request on it. After an error response the connection stays
// usable unless the request itself could not be framed (then the server closes it).
//
// Versions: a header without flags is version 1 (what every node has always spoken); a header
// with flags is version 2, so a node that predates flags refuses it with "data channel version
// 2 is not supported" rather than misreading it. Each header has exactly one encoding: version
// 1 with flags 0, version 2 with flags != 0. Responses are version 1.
//
// kFlagEndPut (kWrite only): after the bytes have landed and the range is committed, the node
// ends the put itself (MasterStore::PutEnd on behalf of the client id that follows the key) and
// answers with that outcome: OK then means the bytes are written AND the object is COMPLETE.
// The writer's PutEnd round trip to the master is saved.
//
// kFlagByKey (kRead or kWrite, alone; served only by a standalone daemon, whose master is in
// the same process): the request names a key, not a range, and the server does the master's
// part itself, so an op is one exchange instead of a master round trip plus a data exchange.
// generation and offset are 0 (the server finds them); tier is MEMORY.
//   - kRead: `length` is the most bytes the reader takes. The server reads the key as
//     GetReplicaList does (lease, recency, promotion trigger) and answers with the whole value
//     from its first replica that reads (MEMORY first), naming that replica's tier in the
//     response (served_from), or the master's refusal (NotFound, NotReady), or
//     InvalidArgument when the value is longer than `length`.
//   - kWrite: the client id follows the key; the server starts the put for that client,
//     writes the payload into the range, and ends the put: OK means the object is COMPLETE.
//     A refusal (AlreadyExists, NoSpace, ...) comes after the payload has been sent, so a
//     writer uses it for small values only and the two-step put for large ones.
//
// kFlagMore (kRead or kWrite, beside the others): the request is not its window's last (see
// the constant). It changes when an answer is sent, never what it says.
//
// This file is pure (no I/O) so the codec can be fuzzed: Parse* accepts any bytes and either
// returns a header that passed every structural check or a Status saying what was wrong.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "core/base/status.h"
#include "core/base/types.h"

namespace mooncake::data {

inline constexpr uint32_t kRequestMagic = 0x5444434D;   // "MCDT" in memory order
inline constexpr uint32_t kResponseMagic = 0x5244434D;  // "MCDR"
inline constexpr uint16_t kVersion = 1;         // headers without flags, and every response
inline constexpr uint16_t kVersionFlags = 2;    // requests with flags (the highest we speak)
inline constexpr size_t kClientIdBytes = 8;     // after the key, with kFlagEndPut

// Request flags (RequestHeader::flags).
inline constexpr uint32_t kFlagEndPut = 1u << 0;  // kWrite: the node ends the put (see above)
inline constexpr uint32_t kFlagByKey = 1u << 1;   // kRead, kWrite: one exchange (see above)
// kRead, kWrite, beside any other flag: another request follows right behind this one on the
// connection (a pipelined batch), so the server may hold this answer and send it with the
// next ones in one write. The last request of a window goes without it, so the server flushes
// its held answers there; the client waits for answers only after such a request.
inline constexpr uint32_t kFlagMore = 1u << 2;
inline constexpr uint32_t kKnownFlags = kFlagEndPut | kFlagByKey | kFlagMore;
inline constexpr size_t kRequestHeaderSize = 40;
inline constexpr size_t kResponseHeaderSize = 24;
inline constexpr uint32_t kMaxTokenBytes = 4096;
inline constexpr uint32_t kMaxMessageBytes = 4096;  // error text in a response

enum class Op : uint8_t {
    kHello = 1,  // payload: auth token; key empty
    kWrite = 2,  // MEMORY only: payload lands at `offset` in the segment
    kRead = 3,   // MEMORY: `length` bytes at segment `offset`;
                 // LOCAL_DISK: `length` bytes at `offset` inside the object
    kPing = 4,   // no key, no payload: liveness
};

struct RequestHeader {
    Op op = Op::kPing;
    Tier tier = Tier::kMemory;
    uint32_t key_length = 0;
    uint32_t flags = 0;  // kFlag* bits; 0 for kHello and kPing
    Generation generation = kNoGeneration;
    uint64_t offset = 0;
    uint64_t length = 0;
};

struct ResponseHeader {
    StatusCode status = StatusCode::kOk;
    uint32_t message_length = 0;
    uint64_t length = 0;  // payload bytes that follow the message
    // OK answers to by-key reads: the tier of the replica served (byte 12: 0 none, 1 + Tier).
    std::optional<Tier> served_from;
};

using RequestBytes = std::array<std::byte, kRequestHeaderSize>;
using ResponseBytes = std::array<std::byte, kResponseHeaderSize>;

// Writes version 1 when flags == 0, else version 2.
RequestBytes SerializeRequest(const RequestHeader& header);
// Bytes that follow the key of a request before its payload (the writer's client id).
inline uint64_t ExtraRequestBytes(const RequestHeader& h) {
    const bool names_client =
        (h.flags & kFlagEndPut) || (h.op == Op::kWrite && (h.flags & kFlagByKey));
    return names_client ? kClientIdBytes : 0;
}
// `bytes` must be exactly kRequestHeaderSize long. Checks magic, version (1 with flags 0, 2
// with known flags: kFlagEndPut on kWrite, kFlagByKey on kRead or kWrite with no flag but
// kFlagMore beside it, kFlagMore on kRead or kWrite), op, tier,
// flags, key length (1..kMaxKeyBytes for kRead/kWrite, 0 otherwise), generation (non-zero for
// kRead and kWrite; 0 with kFlagByKey, and offset 0 and length >= 1), offset + length
// overflow, token size. Size limits that depend on the server's
// configuration (segment size, max_value_size) are the server's to check.
Result<RequestHeader> ParseRequest(std::span<const std::byte> bytes);

ResponseBytes SerializeResponse(const ResponseHeader& header);
// Checks magic, version, status range, message length, the served tier (known, OK answers
// only) and that the reserved bytes are 0.
Result<ResponseHeader> ParseResponse(std::span<const std::byte> bytes);

}  // namespace mooncake::data
