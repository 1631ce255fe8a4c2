// Vocabulary shared by every layer: tiers, replica states, ids, generations, key rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace mooncake {

enum class Tier : uint8_t { kMemory = 0, kLocalDisk = 1 };
enum class ReplicaState : uint8_t { kProcessing = 0, kComplete = 1 };

std::string_view TierName(Tier tier);                 // "MEMORY" | "LOCAL_DISK"
std::optional<Tier> ParseTier(std::string_view name);  // exact names only
std::string_view ReplicaStateName(ReplicaState state);  // "PROCESSING" | "COMPLETE"

// A node is a process that contributes a DRAM segment and/or a local disk. Ids are handed out
// by the master at registration and never reused within one master incarnation.
using NodeId = uint64_t;
inline constexpr NodeId kNoNode = 0;

// A client is whoever started a Put (a node, the CLI, a bench). Only it may end or revoke it.
using ClientId = uint64_t;

// One incarnation of a key. Unique across master restarts: the high 32 bits are the master's
// epoch (chosen at start-up, larger than any earlier epoch), the low 32 bits a counter. When
// the counter wraps the epoch moves on, so values only grow within one master's life.
using Generation = uint64_t;
inline constexpr Generation kNoGeneration = 0;

inline constexpr size_t kMaxKeyBytes = 4096;
// DRAM ranges are 4 KiB aligned so an O_DIRECT read can land in a segment directly.
inline constexpr uint64_t kSegmentAlignment = 4096;

// A caller's key: 1..4096 bytes without NUL.
Status ValidateUserKey(std::string_view key);
// An object's key as the store holds it: a default-tenant key (a caller's key) or a tenant's
// scoped key, "\0" tenant "\0" key (core/base/tenant.h), at most 4096 bytes in all.
Status ValidateKey(std::string_view key);

// For messages: the key printably quoted and, if long, shortened.
std::string QuoteKey(std::string_view key);

// "64MiB", "1GiB", "4096", "512K" (binary units; B, K/KiB, M/MiB, G/GiB, T/TiB; case-insensitive).
Result<uint64_t> ParseSize(std::string_view text);

// Bytes a node's disk store allocates for an object of `size` bytes: whole 4 KiB blocks.
// The one definition of LOCAL_DISK use, shared by the node (DiskStore::allocated_bytes) and
// the master's per-node accounting, so both report the same figure.
inline constexpr uint64_t kDiskFootprintBlock = 4096;
inline constexpr uint64_t DiskFootprint(uint64_t size) {
    return (size + kDiskFootprintBlock - 1) / kDiskFootprintBlock * kDiskFootprintBlock;
}
std::string FormatSize(uint64_t bytes);  // "64MiB" when exact, else bytes

}  // namespace mooncake
