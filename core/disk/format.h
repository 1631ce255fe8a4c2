// On-disk encoding of the disk store: superblock, journal batches and journal entries.
// The layout itself (what goes where, and why) is described in disk_store.h.
//
// All integers are little-endian. Every structure carries an XXH3 hash, seeded with the
// store's random id where a forged copy could otherwise pass (journal headers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/disk/device.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace mooncake::disk_format {

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr char kSuperblockMagic[8] = {'M', 'C', 'T', 'I', 'E', 'R', 'D', 'K'};
inline constexpr uint64_t kSuperblockCopies = 2;     // blocks 0 and 1
inline constexpr uint64_t kMetaAreaBytes = 1 << 20;  // superblocks + reserved
inline constexpr uint64_t kMinJournalBytes = 2 << 20;
// The cap bounds what a large disk pays for its index: an open reads both halves of the
// journal (~1.5x it), and a checkpoint holds a few copies of the index (a quarter of it) in
// memory while it writes. At 2 GiB the index takes ~4 M objects of ~60-byte keys: 256 GiB of
// 64 KiB pages.
inline constexpr uint64_t kMaxJournalBytes = uint64_t{2} << 30;
// A new store's journal is this share of its capacity (Superblock::ForCapacity). The index
// may fill a quarter of the journal (Journal::index_budget), and an object's entry is ~60 B
// plus its key: at 1/8, a disk of up to 16 GiB (the cap) full of 4 KiB pages with keys of
// ~60 B fits its index. (Was 1/32 and at most 1 GiB: 4 KiB pages filled a fifth of an 85 MiB
// disk and then every offload evicted a record for index room, one journal flush each.)
inline constexpr uint64_t kJournalShare = 8;
inline constexpr uint64_t kMinCapacity = 4 << 20;
inline constexpr size_t kMaxExtentsPerObject = 128;

uint64_t Hash(std::span<const std::byte> bytes, uint64_t seed = 0);

struct Superblock {
    uint32_t format_version = kFormatVersion;
    uint64_t capacity = 0;  // bytes of the device the store uses
    uint64_t journal_offset = 0;
    uint64_t journal_size = 0;  // two halves of journal_size / 2
    uint64_t data_offset = 0;
    uint64_t data_size = 0;
    uint64_t store_id = 0;  // random, fixed at format time

    // The layout for a new store of `capacity` bytes (a multiple of 1 MiB, >= kMinCapacity).
    static Superblock ForCapacity(uint64_t capacity, uint64_t store_id);
};

// One kDeviceBlockSize block.
void EncodeSuperblock(const Superblock& sb, std::span<std::byte> block);
enum class SuperblockState { kValid, kBlank, kForeign, kNewerVersion, kDamaged };
SuperblockState DecodeSuperblock(std::span<const std::byte> block, Superblock* sb);

struct Extent {
    uint64_t offset = 0;  // device offset, block aligned
    uint64_t length = 0;  // block multiple
    bool operator==(const Extent&) const = default;
};

// A stored object as the journal records it.
struct PutEntry {
    uint64_t object_id = 0;  // unique per store, never reused
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    uint64_t data_hash = 0;   // XXH3 of the object's bytes
    uint64_t commit_seq = 0;  // commit that first made it durable (set by the journal)
    std::vector<Extent> extents;
    std::string key;
};

// Entry sizes, so the store can budget the journal.
uint64_t EncodedPutSize(size_t key_bytes, size_t extent_count);
inline constexpr uint64_t kEncodedDelSize = 9;

void AppendPut(const PutEntry& put, std::string* out);
void AppendDel(uint64_t object_id, std::string* out);

// Parses a payload; calls on_put / on_del per entry. False if the payload is malformed.
template <typename OnPut, typename OnDel>
bool ParseEntries(std::string_view payload, OnPut on_put, OnDel on_del);

// ---- journal batches ----
inline constexpr uint32_t kBatchMagic = 0x424a434d;  // "MCJB"
inline constexpr uint32_t kFlagCheckpointBegin = 1;
inline constexpr uint32_t kFlagCheckpointEnd = 2;
inline constexpr uint64_t kBatchHeaderBytes = 64;

struct BatchHeader {
    uint32_t flags = 0;
    uint64_t lap = 0;         // which use of a journal half this batch belongs to
    uint64_t seq = 0;         // batch number, increasing over the store's life
    uint64_t commit_seq = 0;  // group commit the batch belongs to
    uint64_t position = 0;    // device offset it was written at
    uint32_t payload_bytes = 0;
    uint64_t payload_hash = 0;
};

// Total bytes (block aligned) of a batch carrying `payload_bytes`.
inline uint64_t BatchBytes(uint64_t payload_bytes) {
    return AlignUp(kBatchHeaderBytes + payload_bytes);
}
// Writes header + payload into `out` (BatchBytes(payload.size()) bytes, zero padded).
void EncodeBatch(const BatchHeader& header, std::string_view payload, uint64_t seed,
                 std::span<std::byte> out);
// Validates the header at the start of `block` (its own hash, and that it sits at `position`).
std::optional<BatchHeader> DecodeBatchHeader(std::span<const std::byte> block, uint64_t seed,
                                             uint64_t position);

// ---- little-endian helpers ----
inline void PutU64(std::string* out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutU32(std::string* out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutU16(std::string* out, uint16_t v) {
    for (int i = 0; i < 2; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline uint64_t GetLE(const unsigned char* p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

template <typename OnPut, typename OnDel>
bool ParseEntries(std::string_view payload, OnPut on_put, OnDel on_del) {
    const auto* p = reinterpret_cast<const unsigned char*>(payload.data());
    size_t pos = 0;
    const size_t n = payload.size();
    while (pos < n) {
        uint8_t type = p[pos++];
        if (type == 2) {
            if (n - pos < 8) return false;
            on_del(GetLE(p + pos, 8));
            pos += 8;
        } else if (type == 1) {
            constexpr size_t kFixed = 8 * 5 + 2 + 2;
            if (n - pos < kFixed) return false;
            PutEntry put;
            put.object_id = GetLE(p + pos, 8);
            put.generation = GetLE(p + pos + 8, 8);
            put.size = GetLE(p + pos + 16, 8);
            put.data_hash = GetLE(p + pos + 24, 8);
            put.commit_seq = GetLE(p + pos + 32, 8);
            size_t extents = GetLE(p + pos + 40, 2);
            size_t key_bytes = GetLE(p + pos + 42, 2);
            pos += kFixed;
            if (extents > kMaxExtentsPerObject || n - pos < extents * 16 + key_bytes) return false;
            put.extents.resize(extents);
            for (size_t i = 0; i < extents; ++i) {
                put.extents[i].offset = GetLE(p + pos, 8);
                put.extents[i].length = GetLE(p + pos + 8, 8);
                pos += 16;
            }
            put.key.assign(payload.data() + pos, key_bytes);
            pos += key_bytes;
            on_put(std::move(put));
        } else {
            return false;
        }
    }
    return true;
}

}  // namespace mooncake::disk_format
