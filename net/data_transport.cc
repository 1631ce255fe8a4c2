// The DataTransport defaults: streamed transfers gather in memory, then the span call; by-key
// ops are absent; a value in several pieces is joined (or split) through one copy.
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

namespace {

// One contiguous copy of several pieces (the defaults' fallback; one piece needs none).
std::unique_ptr<std::byte[]> Joined(ConstPieces pieces, uint64_t size) {
    auto joined = std::make_unique_for_overwrite<std::byte[]>(size);
    GatherPieces(pieces, {joined.get(), size});
    return joined;
}

}  // namespace

Status DataTransport::WriteMemoryPieces(std::string_view address, std::string_view key,
                                        Generation generation, uint64_t offset, ConstPieces data) {
    if (data.size() == 1) return WriteMemory(address, key, generation, offset, data[0]);
    const uint64_t size = PiecesSize(data);
    auto joined = Joined(data, size);
    return WriteMemory(address, key, generation, offset, {joined.get(), size});
}

Status DataTransport::WriteMemoryPiecesEndingPut(std::string_view address, std::string_view key,
                                                 Generation generation, uint64_t offset,
                                                 ConstPieces data, ClientId client, bool* ended) {
    if (data.size() == 1) {
        return WriteMemoryEndingPut(address, key, generation, offset, data[0], client, ended);
    }
    const uint64_t size = PiecesSize(data);
    auto joined = Joined(data, size);
    return WriteMemoryEndingPut(address, key, generation, offset, {joined.get(), size}, client,
                                ended);
}

Status DataTransport::ReadPieces(std::string_view address, Tier tier, std::string_view key,
                                 Generation generation, uint64_t offset, MutablePieces out) {
    if (out.size() == 1) return Read(address, tier, key, generation, offset, out[0]);
    const uint64_t size = PiecesSize(out);
    auto value = std::make_unique_for_overwrite<std::byte[]>(size);
    MC_RETURN_IF_ERROR(Read(address, tier, key, generation, offset, {value.get(), size}));
    ScatterPieces({value.get(), size}, out);
    return Status::Ok();
}

Status DataTransport::PutPiecesByKey(std::string_view address, std::string_view key,
                                     ClientId client, ConstPieces value, bool* sent) {
    if (value.size() == 1) return PutByKey(address, key, client, value[0], sent);
    const uint64_t size = PiecesSize(value);
    auto joined = Joined(value, size);
    return PutByKey(address, key, client, {joined.get(), size}, sent);
}

Result<uint64_t> DataTransport::ReadByKeyIntoPieces(std::string_view address, std::string_view key,
                                                    MutablePieces out, Tier* served_from) {
    if (out.size() == 1) return ReadByKeyInto(address, key, out[0], served_from);
    std::unique_ptr<std::byte[]> value;
    auto size = ReadByKey(
        address, key, PiecesSize(out),
        [&value](uint64_t n) {
            value = std::make_unique_for_overwrite<std::byte[]>(n);
            return std::span<std::byte>(value.get(), n);
        },
        served_from);
    if (size.ok()) ScatterPieces({value.get(), *size}, out);
    return size;
}

void DataTransport::RunBatch(std::string_view address, std::span<BatchOp> ops) {
    for (BatchOp& op : ops) {
        switch (op.kind) {
            case BatchOp::Kind::kWrite:
                op.status = WriteMemoryPieces(address, op.key, op.generation, op.offset, op.send);
                break;
            case BatchOp::Kind::kRead:
                op.status =
                    ReadPieces(address, op.tier, op.key, op.generation, op.offset, op.receive);
                break;
            case BatchOp::Kind::kPutByKey:
                op.status = PutPiecesByKey(address, op.key, op.client, op.send, &op.sent);
                break;
            case BatchOp::Kind::kReadByKey: {
                auto size = ReadByKeyIntoPieces(address, op.key, op.receive, &op.served_from);
                op.status = size.status();
                if (size.ok()) op.size = *size;
                break;
            }
        }
    }
}

}  // namespace mooncake
