// The shared-pool channel: how an engine process on the same host as a node hands that node
// its host KV pool (a sealed memfd, python/src/host_mem_allocator.h) and then asks it to copy
// object bytes between its segment or disk and the pool, so no byte crosses a socket
// (SGLang's standalone-storage mode; docs/PYTHON.md "Standalone storage").
//
// Transport: a Unix domain socket of type SOCK_SEQPACKET (one message per request and per
// answer, descriptors passed with SCM_RIGHTS) in the abstract namespace, named after the
// node's data channel port: "@mooncake-tier-shm.<data port>". Abstract names belong to the
// network namespace, as TCP ports do, so the name is as unique as the data port and needs no
// file to clean up. Only a process on this host (and in this network namespace) can reach it.
//
// Messages: a fixed header, then (requests) the key and the pieces. Both ends run on one
// host, but not necessarily from one build: the header carries a magic and a version and
// every field is checked.
//
//   kHello    key = the auth token (possibly empty); must come first.
//   kAddPool  one descriptor (the pool's memfd) rides along; `pool` is the id the client will
//             name it by (its own base address), `length` its size. The node maps it; the
//             mapping belongs to this connection and is dropped when the connection closes
//             (a pool is usable only on connections that handed its descriptor themselves).
//   kWrite    MEMORY range (key, generation, offset, length) <- the pieces, in order.
//   kRead     (tier, key, generation, offset, length) -> the pieces, in order.
// A piece is (pool id, offset in the pool, length); the pieces add up to `length`.
//
// Thread-safety: pure functions and plain socket calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/base/types.h"
#include "net/net.h"

namespace mooncake::shm {

inline constexpr uint32_t kMagic = 0x4D48534D;  // "MSHM" in memory order
inline constexpr uint16_t kVersion = 1;
// Bounds one message: a value in more pieces than this goes over the data channel.
inline constexpr uint32_t kMaxPieces = 4096;

enum class Op : uint8_t { kHello = 1, kAddPool = 2, kWrite = 3, kRead = 4 };

struct Piece {
    uint64_t pool = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
};

struct RequestHeader {
    uint32_t magic = kMagic;
    uint16_t version = kVersion;
    uint8_t op = 0;
    uint8_t tier = 0;
    uint32_t key_length = 0;
    uint32_t piece_count = 0;
    uint64_t generation = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t pool = 0;  // kAddPool: the id the pool is named by
};
static_assert(sizeof(RequestHeader) == 48);
static_assert(sizeof(Piece) == 24);

struct ResponseHeader {
    uint32_t magic = kMagic;
    uint16_t version = kVersion;
    uint16_t status = 0;  // StatusCode
    uint32_t message_length = 0;
    uint32_t reserved = 0;
};
static_assert(sizeof(ResponseHeader) == 16);

inline constexpr size_t kMaxRequestBytes =
    sizeof(RequestHeader) + kMaxKeyBytes + kMaxPieces * sizeof(Piece);
inline constexpr size_t kMaxResponseBytes = sizeof(ResponseHeader) + 4096;

// A request as received: the header checked (magic, version, op, lengths against the message).
struct Request {
    RequestHeader header;
    std::string key;
    std::vector<Piece> pieces;
};
Result<Request> ParseRequest(std::span<const std::byte> message);

// The abstract socket name served beside the data channel on `data_port` (without the
// leading NUL), e.g. "mooncake-tier-shm.50052".
std::string SocketName(uint16_t data_port);

Result<net::Fd> Listen(uint16_t data_port);
// kUnavailable when nothing listens there (an older node, another network namespace).
Result<net::Fd> Connect(uint16_t data_port, std::chrono::milliseconds timeout);

// One message of the buffers joined, with `pass_fd` attached when >= 0.
Status SendMessage(int fd, std::span<const iovec> parts, int pass_fd = -1);
// One message into `buffer` (resized to what came); a descriptor that rode along is put in
// *received (closed if the caller passes null). A closed peer -> kUnavailable.
Status RecvMessage(int fd, std::vector<std::byte>& buffer, size_t max_bytes,
                   net::Fd* received = nullptr);

// An answer: the status, with its message if not OK.
Status SendAnswer(int fd, const Status& status);
Status RecvAnswer(int fd);

}  // namespace mooncake::shm
