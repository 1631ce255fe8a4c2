#include "python/src/local_transport.h"

#include <cstring>

#include "node/segment.h"

namespace mooncake {

LocalFirstTransport::LocalFirstTransport(std::unique_ptr<DataTransport> remote, Segment* local,
                                         std::string local_address)
    : remote_(std::move(remote)), local_(local), local_address_(std::move(local_address)) {}

Status LocalFirstTransport::WriteMemory(std::string_view address, std::string_view key,
                                        Generation generation, uint64_t offset,
                                        std::span<const std::byte> data) {
    return WriteMemoryPieces(address, key, generation, offset, ConstPieces(&data, 1));
}

Status LocalFirstTransport::WriteMemoryPieces(std::string_view address, std::string_view key,
                                              Generation generation, uint64_t offset,
                                              ConstPieces data) {
    if (!IsLocal(address))
        return remote_->WriteMemoryPieces(address, key, generation, offset, data);
    // The segment checks the range and records (key, generation) as the data server would;
    // each piece is copied once, straight into the range.
    auto lease = local_->BeginWrite(key, generation, offset, PiecesSize(data));
    if (!lease.ok()) return lease.status();
    std::byte* at = lease->data();
    for (const auto& piece : data) {
        if (!piece.empty()) std::memcpy(at, piece.data(), piece.size());
        at += piece.size();
    }
    lease->Commit();
    return Status::Ok();
}

Status LocalFirstTransport::WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                                 Generation generation, uint64_t offset,
                                                 std::span<const std::byte> data,
                                                 ClientId client, bool* ended) {
    return WriteMemoryPiecesEndingPut(address, key, generation, offset, ConstPieces(&data, 1),
                                      client, ended);
}

Status LocalFirstTransport::WriteMemoryPiecesEndingPut(std::string_view address,
                                                       std::string_view key, Generation generation,
                                                       uint64_t offset, ConstPieces data,
                                                       ClientId client, bool* ended) {
    // A local segment is a memcpy, with no node to end the put: the client sends PutEnd.
    if (IsLocal(address)) {
        *ended = false;
        return WriteMemoryPieces(address, key, generation, offset, data);
    }
    return remote_->WriteMemoryPiecesEndingPut(address, key, generation, offset, data, client,
                                               ended);
}

Status LocalFirstTransport::Read(std::string_view address, Tier tier, std::string_view key,
                                 Generation generation, uint64_t offset,
                                 std::span<std::byte> out) {
    return ReadPieces(address, tier, key, generation, offset, MutablePieces(&out, 1));
}

Status LocalFirstTransport::ReadPieces(std::string_view address, Tier tier, std::string_view key,
                                       Generation generation, uint64_t offset, MutablePieces out) {
    Status st;
    if (tier == Tier::kMemory && IsLocal(address)) {
        // Each piece copied once, straight out of the range, under the segment's read lease.
        auto lease = local_->BeginRead(key, generation, offset, PiecesSize(out));
        if (!lease.ok()) return lease.status();
        const std::byte* at = lease->data();
        for (const auto& piece : out) {
            if (!piece.empty()) std::memcpy(piece.data(), at, piece.size());
            at += piece.size();
        }
    } else {
        st = remote_->ReadPieces(address, tier, key, generation, offset, out);
    }
    if (st.ok() && tier == Tier::kLocalDisk) local_disk_reads_.fetch_add(1);
    return st;
}

}  // namespace mooncake
