// Device: the seam between the disk store and a block device.
//
// A Device is a flat array of bytes addressed in kDeviceBlockSize units: every offset, length
// and buffer address handed to it is a multiple of kDeviceBlockSize (what O_DIRECT needs).
// Two implementations: an in-memory device for tests (with fault injection, see
// memory_device.h) and a libaio + O_DIRECT file for real use.
//
// Thread-safety: every method may be called from any number of threads at once. Requests of
// concurrent calls are independent; ordering between overlapping requests in flight at the
// same time is undefined (the caller must not do that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/base/status.h"

namespace mooncake {

inline constexpr uint64_t kDeviceBlockSize = 4096;

inline constexpr uint64_t AlignUp(uint64_t n, uint64_t a = kDeviceBlockSize) {
    return (n + a - 1) / a * a;
}
inline constexpr bool IsAligned(uint64_t n, uint64_t a = kDeviceBlockSize) { return n % a == 0; }
inline bool IsAligned(const void* p, uint64_t a = kDeviceBlockSize) {
    return reinterpret_cast<uintptr_t>(p) % a == 0;
}

// One transfer: `length` bytes between `buffer` and the device at `offset`. All three aligned.
// For a write the buffer is only read.
struct IoRequest {
    uint64_t offset = 0;
    std::byte* buffer = nullptr;
    uint64_t length = 0;
};

class Device {
  public:
    virtual ~Device() = default;

    // Bytes addressable; a multiple of kDeviceBlockSize.
    virtual uint64_t size() const = 0;

    // Batched I/O: submits every request (as many in flight as the device allows) and returns
    // once all have finished. Any failed request fails the batch (kIoError, naming it); the
    // other requests still ran. Misaligned or out-of-range requests -> kInvalidArgument,
    // nothing is done.
    virtual Status ReadV(std::span<IoRequest> reqs) = 0;
    virtual Status WriteV(std::span<IoRequest> reqs) = 0;

    // Makes every write that finished before the call durable (fdatasync).
    virtual Status Flush() = 0;

    // Convenience for a single request.
    Status Read(uint64_t offset, std::byte* buffer, uint64_t length);
    Status Write(uint64_t offset, const std::byte* buffer, uint64_t length);

  protected:
    // Shared argument check for implementations.
    Status CheckRequests(std::span<IoRequest> reqs) const;
};

// A zero-filled in-memory device of `size` bytes (rounded up to kDeviceBlockSize). For fault
// injection use MemoryDevice (memory_device.h) directly.
std::unique_ptr<Device> NewMemoryDevice(uint64_t size);

// Opens (creating if missing) `path` with O_DIRECT and serves it through one libaio context of
// `queue_depth` slots. The file is sized to `size` (fallocate; existing data is kept). The
// file is not locked here: the disk store locks its directory.
Result<std::unique_ptr<Device>> OpenAioDevice(const std::string& path, uint64_t size,
                                              int queue_depth);

// Memory aligned for O_DIRECT, freed on destruction. Contents are not initialised.
class AlignedBuffer {
  public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(uint64_t size);
    ~AlignedBuffer();
    AlignedBuffer(AlignedBuffer&& other) noexcept;
    AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;

    std::byte* data() const { return data_; }
    uint64_t size() const { return size_; }
    std::span<std::byte> span() const { return {data_, size_}; }

  private:
    std::byte* data_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace mooncake
