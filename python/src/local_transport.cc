#include "python/src/local_transport.h"

#include "node/segment.h"

namespace mooncake {

LocalFirstTransport::LocalFirstTransport(std::unique_ptr<DataTransport> remote, Segment* local,
                                         std::string local_address)
    : remote_(std::move(remote)), local_(local), local_address_(std::move(local_address)) {}

Status LocalFirstTransport::WriteMemory(std::string_view address, std::string_view key,
                                        Generation generation, uint64_t offset,
                                        std::span<const std::byte> data) {
    // The segment checks the range and records (key, generation) as the data server would.
    if (IsLocal(address)) return local_->Write(key, generation, offset, data);
    return remote_->WriteMemory(address, key, generation, offset, data);
}

Status LocalFirstTransport::WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                                 Generation generation, uint64_t offset,
                                                 std::span<const std::byte> data,
                                                 ClientId client, bool* ended) {
    // A local segment is a memcpy, with no node to end the put: the base writes only.
    if (IsLocal(address)) {
        return DataTransport::WriteMemoryEndingPut(address, key, generation, offset, data, client,
                                                   ended);
    }
    return remote_->WriteMemoryEndingPut(address, key, generation, offset, data, client, ended);
}

Status LocalFirstTransport::Read(std::string_view address, Tier tier, std::string_view key,
                                 Generation generation, uint64_t offset,
                                 std::span<std::byte> out) {
    Status st = tier == Tier::kMemory && IsLocal(address)
                    ? local_->Read(key, generation, offset, out)
                    : remote_->Read(address, tier, key, generation, offset, out);
    if (st.ok() && tier == Tier::kLocalDisk) local_disk_reads_.fetch_add(1);
    return st;
}

}  // namespace mooncake
