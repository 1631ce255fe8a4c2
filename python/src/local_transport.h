// The data transport of a Python store: the data channel (TCP) for every node but this
// process's own embedded node, whose MEMORY ranges are read and written with memcpy (a value in
// pieces, one memcpy per piece); and the count of reads served from a LOCAL_DISK replica
// (get_offload_rpc_read_count).
//
// Thread-safety: safe from many threads at once, like the transport it wraps.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "net/data_transport.h"

namespace mooncake {

class Segment;

class LocalFirstTransport final : public DataTransport {
public:
    // `local` (may be null: a pure client) is the embedded node's segment, served to others at
    // `local_address`; it must outlive this transport.
    LocalFirstTransport(std::unique_ptr<DataTransport> remote, Segment* local,
                        std::string local_address);

    Status WriteMemory(std::string_view address, std::string_view key, Generation generation,
                       uint64_t offset, std::span<const std::byte> data) override;
    Status WriteMemoryPieces(std::string_view address, std::string_view key, Generation generation,
                             uint64_t offset, ConstPieces data) override;
    // A local range is a memcpy, with no node to end the put (*ended false: the client sends
    // PutEnd itself); a remote one asks its node (net/data_transport.h).
    Status WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                Generation generation, uint64_t offset,
                                std::span<const std::byte> data, ClientId client,
                                bool* ended) override;
    Status WriteMemoryPiecesEndingPut(std::string_view address, std::string_view key,
                                      Generation generation, uint64_t offset, ConstPieces data,
                                      ClientId client, bool* ended) override;
    Status Read(std::string_view address, Tier tier, std::string_view key,
                Generation generation, uint64_t offset, std::span<std::byte> out) override;
    Status ReadPieces(std::string_view address, Tier tier, std::string_view key,
                      Generation generation, uint64_t offset, MutablePieces out) override;

    bool IsNear(std::string_view address) override {
        return IsLocal(address) || remote_->IsNear(address);
    }

    uint64_t local_disk_reads() const { return local_disk_reads_.load(); }

private:
    bool IsLocal(std::string_view address) const {
        return local_ != nullptr && address == local_address_;
    }

    std::unique_ptr<DataTransport> remote_;
    Segment* const local_;
    const std::string local_address_;
    std::atomic<uint64_t> local_disk_reads_{0};
};

}  // namespace mooncake
