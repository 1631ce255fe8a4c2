// The data channel's header codec (thrift/data_protocol.h). The first byte picks request or
// response; the rest is the header bytes (any length, so the length check is fuzzed too).
//
// Properties: a header that parses serializes back to exactly the input bytes (every byte
// of a header is a checked field or a reserved zero, so there is one encoding per header), and
// parsing that again gives the same fields; a parsed request obeys the documented rules.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz/fuzz_check.h"
#include "net/data_protocol.h"

namespace data = mooncake::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    if (size == 0) return 0;
    const bool request = (bytes[0] & 1) == 0;
    std::span<const std::byte> in(reinterpret_cast<const std::byte*>(bytes + 1), size - 1);
    if (request) {
        auto parsed = data::ParseRequest(in);
        if (!parsed.ok()) return 0;
        const data::RequestHeader h = *parsed;
        FUZZ_CHECK(in.size() == data::kRequestHeaderSize);
        // Only known flags: end-put on a write; by-key (with at most the more flag beside it)
        // on a read or a write, naming no range; more on a read or a write. A writer's client id follows the key of an end-put or by-key write.
        const bool by_key = (h.flags & data::kFlagByKey) != 0;
        FUZZ_CHECK((h.flags & ~data::kKnownFlags) == 0);
        FUZZ_CHECK(!(h.flags & data::kFlagEndPut) || h.op == data::Op::kWrite);
        FUZZ_CHECK(!(h.flags & data::kFlagMore) || h.op == data::Op::kRead ||
                   h.op == data::Op::kWrite);
        if (by_key) {
            FUZZ_CHECK((h.flags & ~data::kFlagMore) == data::kFlagByKey);
            FUZZ_CHECK(h.op == data::Op::kRead || h.op == data::Op::kWrite);
            FUZZ_CHECK(h.generation == mooncake::kNoGeneration && h.offset == 0 &&
                       h.length > 0 && h.tier == mooncake::Tier::kMemory);
        }
        const bool names_writer = (h.flags & data::kFlagEndPut) ||
                                  (by_key && h.op == data::Op::kWrite);
        FUZZ_CHECK(data::ExtraRequestBytes(h) == (names_writer ? data::kClientIdBytes : 0));
        FUZZ_CHECK(h.offset + h.length >= h.offset);
        if (h.op == data::Op::kRead || h.op == data::Op::kWrite) {
            FUZZ_CHECK(h.key_length >= 1 && h.key_length <= mooncake::kMaxKeyBytes);
            FUZZ_CHECK(by_key || h.generation != mooncake::kNoGeneration);
        } else {
            FUZZ_CHECK(h.key_length == 0);
        }
        if (h.op == data::Op::kHello) FUZZ_CHECK(h.length <= data::kMaxTokenBytes);
        if (h.op == data::Op::kWrite) FUZZ_CHECK(h.tier == mooncake::Tier::kMemory);
        data::RequestBytes out = data::SerializeRequest(h);
        FUZZ_CHECK(std::memcmp(out.data(), in.data(), out.size()) == 0);
        auto again = data::ParseRequest(out);
        FUZZ_CHECK(again.ok());
        FUZZ_CHECK(again->op == h.op && again->tier == h.tier &&
                   again->key_length == h.key_length && again->flags == h.flags &&
                   again->generation == h.generation && again->offset == h.offset &&
                   again->length == h.length);
    } else {
        auto parsed = data::ParseResponse(in);
        if (!parsed.ok()) return 0;
        const data::ResponseHeader h = *parsed;
        FUZZ_CHECK(in.size() == data::kResponseHeaderSize);
        FUZZ_CHECK(h.message_length <= data::kMaxMessageBytes);
        if (h.status != mooncake::StatusCode::kOk) {
            FUZZ_CHECK(h.length == 0 && !h.served_from.has_value());
        }
        data::ResponseBytes out = data::SerializeResponse(h);
        FUZZ_CHECK(std::memcmp(out.data(), in.data(), out.size()) == 0);
        auto again = data::ParseResponse(out);
        FUZZ_CHECK(again.ok());
        FUZZ_CHECK(again->status == h.status && again->message_length == h.message_length &&
                   again->length == h.length && again->served_from == h.served_from);
    }
    return 0;
}
