#include "core/disk/format.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace mooncake::disk_format {

static_assert(std::endian::native == std::endian::little,
              "the on-disk format is written with memcpy of little-endian integers");

namespace {

template <typename T>
void Store(std::span<std::byte> out, size_t at, T v) {
    std::memcpy(out.data() + at, &v, sizeof v);
}
template <typename T>
T Load(std::span<const std::byte> in, size_t at) {
    T v;
    std::memcpy(&v, in.data() + at, sizeof v);
    return v;
}

// Superblock field offsets.
constexpr size_t kSbVersion = 8, kSbCapacity = 16, kSbJournalOffset = 24, kSbJournalSize = 32,
                 kSbDataOffset = 40, kSbDataSize = 48, kSbStoreId = 56, kSbHash = 64;

// Batch header field offsets.
constexpr size_t kBhMagic = 0, kBhFlags = 4, kBhLap = 8, kBhSeq = 16, kBhCommit = 24,
                 kBhPosition = 32, kBhPayloadBytes = 40, kBhPayloadHash = 48, kBhHash = 56;

}  // namespace

uint64_t Hash(std::span<const std::byte> bytes, uint64_t seed) {
    return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
}

Superblock Superblock::ForCapacity(uint64_t capacity, uint64_t store_id) {
    Superblock sb;
    sb.capacity = capacity;
    uint64_t journal = capacity / kJournalShare / (1 << 20) * (1 << 20);
    journal = std::clamp(journal, kMinJournalBytes, kMaxJournalBytes);
    sb.journal_offset = kMetaAreaBytes;
    sb.journal_size = journal;
    sb.data_offset = kMetaAreaBytes + journal;
    sb.data_size = capacity - sb.data_offset;
    sb.store_id = store_id;
    return sb;
}

void EncodeSuperblock(const Superblock& sb, std::span<std::byte> block) {
    std::fill(block.begin(), block.end(), std::byte{0});
    std::memcpy(block.data(), kSuperblockMagic, sizeof kSuperblockMagic);
    Store<uint32_t>(block, kSbVersion, sb.format_version);
    Store<uint64_t>(block, kSbCapacity, sb.capacity);
    Store<uint64_t>(block, kSbJournalOffset, sb.journal_offset);
    Store<uint64_t>(block, kSbJournalSize, sb.journal_size);
    Store<uint64_t>(block, kSbDataOffset, sb.data_offset);
    Store<uint64_t>(block, kSbDataSize, sb.data_size);
    Store<uint64_t>(block, kSbStoreId, sb.store_id);
    Store<uint64_t>(block, kSbHash, Hash(block.first(kSbHash)));
}

SuperblockState DecodeSuperblock(std::span<const std::byte> block, Superblock* sb) {
    if (std::all_of(block.begin(), block.end(), [](std::byte b) { return b == std::byte{0}; })) {
        return SuperblockState::kBlank;
    }
    if (std::memcmp(block.data(), kSuperblockMagic, sizeof kSuperblockMagic) != 0) {
        return SuperblockState::kForeign;
    }
    uint32_t version = Load<uint32_t>(block, kSbVersion);
    if (version > kFormatVersion) {
        sb->format_version = version;
        return SuperblockState::kNewerVersion;
    }
    if (Load<uint64_t>(block, kSbHash) != Hash(block.first(kSbHash))) {
        return SuperblockState::kDamaged;
    }
    sb->format_version = version;
    sb->capacity = Load<uint64_t>(block, kSbCapacity);
    sb->journal_offset = Load<uint64_t>(block, kSbJournalOffset);
    sb->journal_size = Load<uint64_t>(block, kSbJournalSize);
    sb->data_offset = Load<uint64_t>(block, kSbDataOffset);
    sb->data_size = Load<uint64_t>(block, kSbDataSize);
    sb->store_id = Load<uint64_t>(block, kSbStoreId);
    // A hash that matches over nonsense is a bug, not damage; still refuse it.
    // Each sum is checked without wrapping around (fuzzing found offsets near 2^64 that
    // wrapped into a "sane" layout).
    bool sane = IsAligned(sb->journal_offset) && IsAligned(sb->journal_size) &&
                IsAligned(sb->data_offset) && sb->journal_size >= 2 * kDeviceBlockSize &&
                sb->data_offset <= sb->capacity && sb->data_size <= sb->capacity - sb->data_offset &&
                sb->journal_offset <= sb->data_offset &&
                sb->journal_size <= sb->data_offset - sb->journal_offset;
    return sane ? SuperblockState::kValid : SuperblockState::kDamaged;
}

uint64_t EncodedPutSize(size_t key_bytes, size_t extent_count) {
    return 1 + 8 * 5 + 2 + 2 + 16 * extent_count + key_bytes;
}

void AppendPut(const PutEntry& put, std::string* out) {
    out->push_back(static_cast<char>(1));
    PutU64(out, put.object_id);
    PutU64(out, put.generation);
    PutU64(out, put.size);
    PutU64(out, put.data_hash);
    PutU64(out, put.commit_seq);
    PutU16(out, static_cast<uint16_t>(put.extents.size()));
    PutU16(out, static_cast<uint16_t>(put.key.size()));
    for (const Extent& e : put.extents) {
        PutU64(out, e.offset);
        PutU64(out, e.length);
    }
    out->append(put.key);
}

void AppendDel(uint64_t object_id, std::string* out) {
    out->push_back(static_cast<char>(2));
    PutU64(out, object_id);
}

void EncodeBatch(const BatchHeader& header, std::string_view payload, uint64_t seed,
                 std::span<std::byte> out) {
    std::fill(out.begin(), out.end(), std::byte{0});
    Store<uint32_t>(out, kBhMagic, kBatchMagic);
    Store<uint32_t>(out, kBhFlags, header.flags);
    Store<uint64_t>(out, kBhLap, header.lap);
    Store<uint64_t>(out, kBhSeq, header.seq);
    Store<uint64_t>(out, kBhCommit, header.commit_seq);
    Store<uint64_t>(out, kBhPosition, header.position);
    Store<uint32_t>(out, kBhPayloadBytes, static_cast<uint32_t>(payload.size()));
    std::memcpy(out.data() + kBatchHeaderBytes, payload.data(), payload.size());
    Store<uint64_t>(out, kBhPayloadHash,
                    Hash(out.subspan(kBatchHeaderBytes, payload.size()), seed));
    Store<uint64_t>(out, kBhHash, Hash(out.first(kBhHash), seed));
}

std::optional<BatchHeader> DecodeBatchHeader(std::span<const std::byte> block, uint64_t seed,
                                             uint64_t position) {
    if (Load<uint32_t>(block, kBhMagic) != kBatchMagic) return std::nullopt;
    if (Load<uint64_t>(block, kBhHash) != Hash(block.first(kBhHash), seed)) return std::nullopt;
    BatchHeader h;
    h.flags = Load<uint32_t>(block, kBhFlags);
    h.lap = Load<uint64_t>(block, kBhLap);
    h.seq = Load<uint64_t>(block, kBhSeq);
    h.commit_seq = Load<uint64_t>(block, kBhCommit);
    h.position = Load<uint64_t>(block, kBhPosition);
    h.payload_bytes = Load<uint32_t>(block, kBhPayloadBytes);
    h.payload_hash = Load<uint64_t>(block, kBhPayloadHash);
    if (h.position != position) return std::nullopt;  // a copy of a header found elsewhere
    return h;
}

}  // namespace mooncake::disk_format
