#include "net/data_protocol.h"

#include <cstdio>
#include <string>

namespace mooncake::data {
namespace {

// Explicit little-endian byte order, whatever the host's, so the format is the same everywhere.
template <typename T>
void Put(std::byte* at, T value) {
    for (size_t i = 0; i < sizeof(T); ++i) {
        at[i] = static_cast<std::byte>((static_cast<uint64_t>(value) >> (8 * i)) & 0xFF);
    }
}

template <typename T>
T Get(const std::byte* at) {
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
        v |= static_cast<uint64_t>(std::to_integer<uint8_t>(at[i])) << (8 * i);
    }
    return static_cast<T>(v);
}

constexpr int kLastStatusCode = static_cast<int>(StatusCode::kInternal);

}  // namespace

RequestBytes SerializeRequest(const RequestHeader& h) {
    RequestBytes out{};
    Put<uint32_t>(&out[0], kRequestMagic);
    Put<uint16_t>(&out[4], h.flags == 0 ? kVersion : kVersionFlags);
    Put<uint8_t>(&out[6], static_cast<uint8_t>(h.op));
    Put<uint8_t>(&out[7], static_cast<uint8_t>(h.tier));
    Put<uint32_t>(&out[8], h.key_length);
    Put<uint32_t>(&out[12], h.flags);
    Put<uint64_t>(&out[16], h.generation);
    Put<uint64_t>(&out[24], h.offset);
    Put<uint64_t>(&out[32], h.length);
    return out;
}

Result<RequestHeader> ParseRequest(std::span<const std::byte> bytes) {
    if (bytes.size() != kRequestHeaderSize) {
        return Status::InvalidArgument("data request header must be " +
                                       std::to_string(kRequestHeaderSize) + " bytes");
    }
    const std::byte* p = bytes.data();
    if (Get<uint32_t>(p) != kRequestMagic) {
        return Status::InvalidArgument("not a mooncake data channel request (bad magic)");
    }
    uint16_t version = Get<uint16_t>(p + 4);
    if (version != kVersion && version != kVersionFlags) {
        return Status::InvalidArgument("data channel version " + std::to_string(version) +
                                       " is not supported (this side speaks " +
                                       std::to_string(kVersion) + " and " +
                                       std::to_string(kVersionFlags) + ")");
    }
    RequestHeader h;
    uint8_t op = Get<uint8_t>(p + 6);
    if (op < static_cast<uint8_t>(Op::kHello) || op > static_cast<uint8_t>(Op::kPing)) {
        return Status::InvalidArgument("unknown data channel op " + std::to_string(op));
    }
    h.op = static_cast<Op>(op);
    uint8_t tier = Get<uint8_t>(p + 7);
    if (tier > static_cast<uint8_t>(Tier::kLocalDisk)) {
        return Status::InvalidArgument("unknown tier " + std::to_string(tier));
    }
    h.tier = static_cast<Tier>(tier);
    h.key_length = Get<uint32_t>(p + 8);
    h.flags = Get<uint32_t>(p + 12);
    h.generation = Get<uint64_t>(p + 16);
    h.offset = Get<uint64_t>(p + 24);
    h.length = Get<uint64_t>(p + 32);

    if (version == kVersion && h.flags != 0) {
        return Status::InvalidArgument("flags must be 0 in a version 1 header");
    }
    if (version == kVersionFlags) {
        if (h.flags == 0) {
            return Status::InvalidArgument("a version 2 header carries flags (without, it is "
                                           "version 1)");
        }
        if ((h.flags & ~kKnownFlags) != 0) {
            return Status::InvalidArgument("unknown request flags 0x" + [&] {
                char buf[16];
                std::snprintf(buf, sizeof buf, "%x", h.flags & ~kKnownFlags);
                return std::string(buf);
            }());
        }
        if ((h.flags & kFlagEndPut) && h.op != Op::kWrite) {
            return Status::InvalidArgument("the end-put flag is only valid on a write");
        }
        if ((h.flags & kFlagMore) && h.op != Op::kRead && h.op != Op::kWrite) {
            return Status::InvalidArgument("the more flag is only valid on a read or a write");
        }
        if (h.flags & kFlagByKey) {
            if ((h.flags & ~kFlagMore) != kFlagByKey) {
                return Status::InvalidArgument("the by-key flag goes alone (or with the more flag)");
            }
            if (h.op != Op::kRead && h.op != Op::kWrite) {
                return Status::InvalidArgument("the by-key flag is only valid on a read or a "
                                               "write");
            }
            if (h.generation != kNoGeneration || h.offset != 0 || h.tier != Tier::kMemory) {
                return Status::InvalidArgument("a by-key request names no generation, offset "
                                               "or tier (the server finds them)");
            }
            if (h.length == 0) return Status::InvalidArgument("a by-key request of 0 bytes");
        }
    }
    if (h.offset + h.length < h.offset) return Status::InvalidArgument("offset + length overflows");
    switch (h.op) {
        case Op::kHello:
            if (h.key_length != 0) return Status::InvalidArgument("hello carries no key");
            if (h.length > kMaxTokenBytes) return Status::InvalidArgument("auth token too long");
            break;
        case Op::kPing:
            if (h.key_length != 0 || h.length != 0) {
                return Status::InvalidArgument("ping carries no key and no payload");
            }
            break;
        case Op::kWrite:
        case Op::kRead:
            if (h.key_length == 0 || h.key_length > kMaxKeyBytes) {
                return Status::InvalidArgument("key length " + std::to_string(h.key_length) +
                                               " is outside 1..4096");
            }
            if (h.generation == kNoGeneration && !(h.flags & kFlagByKey)) {
                return Status::InvalidArgument("request names no generation");
            }
            if (h.op == Op::kWrite && h.tier != Tier::kMemory) {
                return Status::InvalidArgument("only MEMORY ranges are written over the data "
                                               "channel");
            }
            break;
    }
    return h;
}

ResponseBytes SerializeResponse(const ResponseHeader& h) {
    ResponseBytes out{};
    Put<uint32_t>(&out[0], kResponseMagic);
    Put<uint16_t>(&out[4], kVersion);
    Put<uint16_t>(&out[6], static_cast<uint16_t>(h.status));
    Put<uint32_t>(&out[8], h.message_length);
    Put<uint8_t>(&out[12], h.served_from ? static_cast<uint8_t>(*h.served_from) + 1 : 0);
    Put<uint64_t>(&out[16], h.length);
    return out;
}

Result<ResponseHeader> ParseResponse(std::span<const std::byte> bytes) {
    if (bytes.size() != kResponseHeaderSize) {
        return Status::InvalidArgument("data response header must be " +
                                       std::to_string(kResponseHeaderSize) + " bytes");
    }
    const std::byte* p = bytes.data();
    if (Get<uint32_t>(p) != kResponseMagic) {
        return Status::InvalidArgument("not a mooncake data channel response (bad magic)");
    }
    if (Get<uint16_t>(p + 4) != kVersion) {
        return Status::InvalidArgument("data channel response version mismatch");
    }
    ResponseHeader h;
    uint16_t status = Get<uint16_t>(p + 6);
    if (status > kLastStatusCode) {
        return Status::InvalidArgument("unknown status code " + std::to_string(status));
    }
    h.status = static_cast<StatusCode>(status);
    h.message_length = Get<uint32_t>(p + 8);
    if (h.message_length > kMaxMessageBytes) {
        return Status::InvalidArgument("error message too long");
    }
    // Like a request's flags: reserved, so one header has one encoding (found by fuzzing).
    if (Get<uint8_t>(p + 13) != 0 || Get<uint16_t>(p + 14) != 0) {
        return Status::InvalidArgument("reserved response bytes must be 0");
    }
    const uint8_t served = Get<uint8_t>(p + 12);
    if (served > static_cast<uint8_t>(Tier::kLocalDisk) + 1) {
        return Status::InvalidArgument("unknown served tier " + std::to_string(served));
    }
    if (served != 0) {
        if (h.status != StatusCode::kOk) {
            return Status::InvalidArgument("an error response names no served tier");
        }
        h.served_from = static_cast<Tier>(served - 1);
    }
    h.length = Get<uint64_t>(p + 16);
    if (h.status != StatusCode::kOk && h.length != 0) {
        return Status::InvalidArgument("an error response carries no payload");
    }
    return h;
}

}  // namespace mooncake::data
