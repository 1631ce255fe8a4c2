#include "core/disk/device.h"

#include <cstdlib>
#include <utility>

namespace mooncake {

Status Device::Read(uint64_t offset, std::byte* buffer, uint64_t length) {
    IoRequest req{offset, buffer, length};
    return ReadV({&req, 1});
}

Status Device::Write(uint64_t offset, const std::byte* buffer, uint64_t length) {
    IoRequest req{offset, const_cast<std::byte*>(buffer), length};
    return WriteV({&req, 1});
}

Status Device::CheckRequests(std::span<IoRequest> reqs) const {
    const uint64_t device_size = size();
    for (const IoRequest& req : reqs) {
        if (!IsAligned(req.offset) || !IsAligned(req.length) || !IsAligned(req.buffer) ||
            req.length == 0) {
            return Status::InvalidArgument("I/O request not 4096-aligned (offset " +
                                           std::to_string(req.offset) + ", length " +
                                           std::to_string(req.length) + ")");
        }
        if (req.offset > device_size || req.length > device_size - req.offset) {
            return Status::InvalidArgument("I/O request [" + std::to_string(req.offset) + ", +" +
                                           std::to_string(req.length) + ") beyond device of " +
                                           std::to_string(device_size) + " bytes");
        }
    }
    return Status::Ok();
}

AlignedBuffer::AlignedBuffer(uint64_t size) : size_(size) {
    if (size > 0) {
        data_ = static_cast<std::byte*>(std::aligned_alloc(kDeviceBlockSize, AlignUp(size)));
        if (data_ == nullptr) size_ = 0;
    }
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
        std::free(data_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

}  // namespace mooncake
