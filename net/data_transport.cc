// The DataTransport defaults: streamed transfers gather in memory, then the span call; by-key
// ops are absent.
#include "net/data_transport.h"

#include <memory>

namespace mooncake {

Status DataTransport::WriteMemoryFrom(std::string_view address, std::string_view key,
                                      Generation generation, uint64_t offset, uint64_t length,
                                      ByteSource& source) {
    auto value = std::make_unique_for_overwrite<std::byte[]>(length);
    uint64_t got = 0;
    while (got < length) {
        auto n = source.Read({value.get() + got, static_cast<size_t>(length - got)});
        if (!n.ok()) return n.status();
        if (*n == 0) {
            return Status::IoError("the value's source ended after " + std::to_string(got) +
                                   " of " + std::to_string(length) + " bytes");
        }
        got += *n;
    }
    return WriteMemory(address, key, generation, offset, {value.get(), length});
}

Status DataTransport::WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                           Generation generation, uint64_t offset,
                                           std::span<const std::byte> data, ClientId /*client*/,
                                           bool* ended) {
    *ended = false;  // the caller ends the put
    return WriteMemory(address, key, generation, offset, data);
}

Status DataTransport::WriteMemoryFromEndingPut(std::string_view address, std::string_view key,
                                               Generation generation, uint64_t offset,
                                               uint64_t length, ByteSource& source,
                                               ClientId /*client*/, bool* ended) {
    *ended = false;
    return WriteMemoryFrom(address, key, generation, offset, length, source);
}

Status DataTransport::ReadTo(std::string_view address, Tier tier, std::string_view key,
                             Generation generation, uint64_t offset, uint64_t length,
                             ByteSink& sink) {
    auto value = std::make_unique_for_overwrite<std::byte[]>(length);
    MC_RETURN_IF_ERROR(Read(address, tier, key, generation, offset, {value.get(), length}));
    return sink.Take({value.get(), length});
}

Result<uint64_t> DataTransport::ReadByKey(
    std::string_view /*address*/, std::string_view /*key*/, uint64_t /*max_size*/,
    const std::function<std::span<std::byte>(uint64_t)>& /*buffer_for*/, Tier* /*served_from*/) {
    return Status::Unavailable("this data transport has no by-key reads");
}

Result<uint64_t> DataTransport::ReadByKeyInto(std::string_view address, std::string_view key,
                                              std::span<std::byte> out, Tier* served_from) {
    return ReadByKey(
        address, key, out.size(), [out](uint64_t size) { return out.first(size); },
        served_from);
}

Status DataTransport::PutByKey(std::string_view /*address*/, std::string_view /*key*/,
                               ClientId /*client*/, std::span<const std::byte> /*value*/,
                               bool* sent) {
    if (sent != nullptr) *sent = false;
    return Status::Unavailable("this data transport has no by-key writes");
}

}  // namespace mooncake
