// The data channel's wire format: fixed-size little-endian headers for object bytes.
//
// Object bytes never travel in a Thrift frame; they go over this channel (TCP today, RDMA can
// sit beside it behind DataTransport). One request, one response, on a connection that may be
// reused for many:
//
//   request  = RequestHeader (40 bytes) | key (key_length bytes) | [client id, 8 bytes LE:
//              kWrite with kFlagEndPut only] | payload (length bytes, kWrite and kHello only)
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
// This file is pure (no I/O) so the codec can be fuzzed: Parse* accepts any bytes and either
// returns a header that passed every structural check or a Status saying what was wrong.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/types.h"

namespace mooncake::data {

inline constexpr uint32_t kRequestMagic = 0x5444434D;   // "MCDT" in memory order
inline constexpr uint32_t kResponseMagic = 0x5244434D;  // "MCDR"
inline constexpr uint16_t kVersion = 1;         // headers without flags, and every response
inline constexpr uint16_t kVersionFlags = 2;    // requests with flags (the highest we speak)
inline constexpr size_t kClientIdBytes = 8;     // after the key, with kFlagEndPut

// Request flags (RequestHeader::flags).
inline constexpr uint32_t kFlagEndPut = 1u << 0;  // kWrite: the node ends the put (see above)
inline constexpr uint32_t kKnownFlags = kFlagEndPut;
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
    uint32_t flags = 0;  // kFlag* bits; 0 for every op but kWrite
    Generation generation = kNoGeneration;
    uint64_t offset = 0;
    uint64_t length = 0;
};

struct ResponseHeader {
    StatusCode status = StatusCode::kOk;
    uint32_t message_length = 0;
    uint64_t length = 0;  // payload bytes that follow the message
};

using RequestBytes = std::array<std::byte, kRequestHeaderSize>;
using ResponseBytes = std::array<std::byte, kResponseHeaderSize>;

// Writes version 1 when flags == 0, else version 2.
RequestBytes SerializeRequest(const RequestHeader& header);
// Bytes that follow the key of a request before its payload (the end-put client id).
inline uint64_t ExtraRequestBytes(const RequestHeader& h) {
    return (h.flags & kFlagEndPut) ? kClientIdBytes : 0;
}
// `bytes` must be exactly kRequestHeaderSize long. Checks magic, version (1 with flags 0, 2
// with known flags on kWrite), op, tier, flags, key
// length (1..kMaxKeyBytes for kRead/kWrite, 0 otherwise), generation (non-zero for kRead and
// kWrite), offset + length overflow, token size. Size limits that depend on the server's
// configuration (segment size, max_value_size) are the server's to check.
Result<RequestHeader> ParseRequest(std::span<const std::byte> bytes);

ResponseBytes SerializeResponse(const ResponseHeader& header);
// Checks magic, version, status range, message length and that the reserved bytes are 0.
Result<ResponseHeader> ParseResponse(std::span<const std::byte> bytes);

}  // namespace mooncake::data
