// The disk store's record codecs (core/disk/format.h): journal entries (ParseEntries, the
// decoder recovery runs on every batch payload), batch headers and the superblock.
//
// Input: a journal batch payload. Properties:
//  - ParseEntries never reads outside the payload; on success re-encoding the entries it
//    reported, in order, gives back exactly the payload (one encoding per entry list), and a
//    prefix of the payload that cuts an entry is refused;
//  - the input's first 64 bytes read as header fields, encoded with EncodeBatch, decode to
//    the same fields (and not at another position, or under another seed);
//  - the first 64 bytes read as superblock fields encode and decode to the same fields when
//    the layout is sane, and to kDamaged otherwise; raw input bytes as a superblock block never
//    crash the decoder.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/disk/device.h"
#include "core/disk/format.h"
#include "fuzz/fuzz_check.h"

namespace df = mooncake::disk_format;
using mooncake::kDeviceBlockSize;

namespace {

uint64_t Word(const uint8_t* data, size_t size, size_t i) {
    uint64_t v = 0;
    for (size_t b = 0; b < 8; ++b) {
        size_t at = i * 8 + b;
        if (at < size) v |= uint64_t{data[at]} << (8 * b);
    }
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view payload(reinterpret_cast<const char*>(data), size);

    // ---- entries ----
    std::string reencoded;
    size_t entries = 0;
    bool ok = df::ParseEntries(
        payload,
        [&](df::PutEntry&& put) {
            FUZZ_CHECK(put.extents.size() <= df::kMaxExtentsPerObject);
            FUZZ_CHECK(put.key.size() <= 0xFFFF);
            const size_t before = reencoded.size();
            df::AppendPut(put, &reencoded);
            FUZZ_CHECK(df::EncodedPutSize(put.key.size(), put.extents.size()) ==
                       reencoded.size() - before);
            ++entries;
        },
        [&](uint64_t id) {
            const size_t before = reencoded.size();
            df::AppendDel(id, &reencoded);
            FUZZ_CHECK(df::kEncodedDelSize == reencoded.size() - before);
            ++entries;
        });
    if (ok) {
        FUZZ_CHECK(reencoded == payload);
        // Cutting the last byte of a non-empty entry list tears its last entry.
        if (!payload.empty()) {
            bool cut_ok = df::ParseEntries(payload.substr(0, payload.size() - 1),
                                           [](df::PutEntry&&) {}, [](uint64_t) {});
            FUZZ_CHECK(!cut_ok);
        }
    } else {
        FUZZ_CHECK(reencoded.size() < payload.size());
        FUZZ_CHECK(payload.substr(0, reencoded.size()) == reencoded);
    }

    // ---- batch header round trip ----
    df::BatchHeader h;
    h.flags = static_cast<uint32_t>(Word(data, size, 0));
    h.lap = Word(data, size, 1);
    h.seq = Word(data, size, 2);
    h.commit_seq = Word(data, size, 3);
    h.position = Word(data, size, 4) / kDeviceBlockSize * kDeviceBlockSize;
    const uint64_t seed = Word(data, size, 5);
    std::string_view body = payload.substr(0, std::min<size_t>(payload.size(), 3 * 4096));
    std::vector<std::byte> block(df::BatchBytes(body.size()));
    df::EncodeBatch(h, body, seed, block);
    auto back = df::DecodeBatchHeader(block, seed, h.position);
    FUZZ_CHECK(back.has_value());
    FUZZ_CHECK(back->flags == h.flags && back->lap == h.lap && back->seq == h.seq &&
               back->commit_seq == h.commit_seq && back->position == h.position &&
               back->payload_bytes == body.size());
    FUZZ_CHECK(back->payload_hash ==
               df::Hash({block.data() + df::kBatchHeaderBytes, body.size()}, seed));
    FUZZ_CHECK(!df::DecodeBatchHeader(block, seed, h.position + kDeviceBlockSize).has_value());
    FUZZ_CHECK(!df::DecodeBatchHeader(block, seed ^ 1, h.position).has_value());
    // Raw bytes as a header block: no crash, and a decoded header sits where it says.
    if (size >= kDeviceBlockSize) {
        std::span<const std::byte> raw(reinterpret_cast<const std::byte*>(data), kDeviceBlockSize);
        auto raw_h = df::DecodeBatchHeader(raw, 0, h.position);
        if (raw_h) FUZZ_CHECK(raw_h->position == h.position);
    }

    // ---- superblock ----
    df::Superblock sb;
    sb.format_version = static_cast<uint32_t>(Word(data, size, 0)) % (df::kFormatVersion + 1);
    sb.capacity = Word(data, size, 1);
    sb.journal_offset = Word(data, size, 2);
    sb.journal_size = Word(data, size, 3);
    sb.data_offset = Word(data, size, 4);
    sb.data_size = Word(data, size, 5);
    sb.store_id = Word(data, size, 6);
    std::vector<std::byte> sb_block(kDeviceBlockSize);
    df::EncodeSuperblock(sb, sb_block);
    df::Superblock decoded;
    df::SuperblockState state = df::DecodeSuperblock(sb_block, &decoded);
    FUZZ_CHECK(state == df::SuperblockState::kValid || state == df::SuperblockState::kDamaged);
    if (state == df::SuperblockState::kValid) {
        FUZZ_CHECK(decoded.format_version == sb.format_version &&
                   decoded.capacity == sb.capacity && decoded.journal_offset == sb.journal_offset &&
                   decoded.journal_size == sb.journal_size &&
                   decoded.data_offset == sb.data_offset && decoded.data_size == sb.data_size &&
                   decoded.store_id == sb.store_id);
        // A valid layout fits in its capacity (no wrap-around in the sanity check).
        FUZZ_CHECK(decoded.journal_offset <= decoded.capacity);
        FUZZ_CHECK(decoded.journal_size <= decoded.capacity);
        FUZZ_CHECK(decoded.data_offset <= decoded.capacity);
        FUZZ_CHECK(decoded.data_size <= decoded.capacity);
    }
    if (size >= kDeviceBlockSize) {
        std::span<const std::byte> raw(reinterpret_cast<const std::byte*>(data), kDeviceBlockSize);
        df::Superblock any;
        (void)df::DecodeSuperblock(raw, &any);
    }
    (void)entries;
    return 0;
}
