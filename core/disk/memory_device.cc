#include "core/disk/memory_device.h"

#include <cstring>

namespace mooncake {

MemoryDevice::MemoryDevice(uint64_t size) : state_(std::make_shared<State>()) {
    state_->bytes.resize(AlignUp(size));
}

std::unique_ptr<MemoryDevice> MemoryDevice::OpenHandle() const {
    return std::unique_ptr<MemoryDevice>(new MemoryDevice(state_));
}

uint64_t MemoryDevice::size() const {
    // Never resized after construction; the shared lock is for the analysis, and costs nothing.
    ReaderLock lock(state_->mu);
    return state_->bytes.size();
}

MemoryDevice::Fault MemoryDevice::Consult(Op op, const IoRequest& req) {
    FaultHook hook;
    {
        MutexLock lock(state_->hook_mu);
        hook = state_->hook;
    }
    return hook ? hook(op, req) : Fault{};
}

Status MemoryDevice::ReadV(std::span<IoRequest> reqs) {
    MC_RETURN_IF_ERROR(CheckRequests(reqs));
    Status first_error;
    for (IoRequest& req : reqs) {
        state_->reads.fetch_add(1, std::memory_order_relaxed);
        Fault fault = Consult(Op::kRead, req);
        if (fault.kind == Fault::kIoError || fault.kind == Fault::kTorn) {
            if (first_error.ok()) {
                first_error =
                    Status::IoError("injected read error at offset " + std::to_string(req.offset));
            }
            continue;
        }
        ReaderLock lock(state_->mu);
        std::memcpy(req.buffer, state_->bytes.data() + req.offset, req.length);
    }
    return first_error;
}

Status MemoryDevice::WriteV(std::span<IoRequest> reqs) {
    MC_RETURN_IF_ERROR(CheckRequests(reqs));
    Status first_error;
    for (IoRequest& req : reqs) {
        state_->writes.fetch_add(1, std::memory_order_relaxed);
        Fault fault = Consult(Op::kWrite, req);
        uint64_t length = req.length;
        if (fault.kind == Fault::kIoError) {
            length = 0;
        } else if (fault.kind == Fault::kTorn) {
            length = std::min(fault.torn_bytes, req.length);
        }
        if (fault.kind != Fault::kDropSilently && length > 0) {
            WriterLock lock(state_->mu);
            for (uint64_t block = req.offset / kDeviceBlockSize;
                 block * kDeviceBlockSize < req.offset + length; ++block) {
                if (!state_->preimages.contains(block)) {
                    const std::byte* at = state_->bytes.data() + block * kDeviceBlockSize;
                    state_->preimages.emplace(block,
                                              std::vector<std::byte>(at, at + kDeviceBlockSize));
                }
            }
            std::memcpy(state_->bytes.data() + req.offset, req.buffer, length);
        }
        if ((fault.kind == Fault::kIoError || fault.kind == Fault::kTorn) && first_error.ok()) {
            first_error =
                Status::IoError("injected write error at offset " + std::to_string(req.offset));
        }
    }
    return first_error;
}

Status MemoryDevice::Flush() {
    state_->flushes.fetch_add(1, std::memory_order_relaxed);
    WriterLock lock(state_->mu);
    state_->preimages.clear();
    return Status::Ok();
}

void MemoryDevice::SetFaultHook(FaultHook hook) {
    MutexLock lock(state_->hook_mu);
    state_->hook = std::move(hook);
}

void MemoryDevice::FlipBit(uint64_t offset, int bit) {
    WriterLock lock(state_->mu);
    state_->bytes.at(offset) ^= std::byte{static_cast<unsigned char>(1u << (bit & 7))};
}

void MemoryDevice::LoseUnflushedWrites() {
    WriterLock lock(state_->mu);
    for (auto& [block, image] : state_->preimages) {
        std::memcpy(state_->bytes.data() + block * kDeviceBlockSize, image.data(), image.size());
    }
    state_->preimages.clear();
}

void MemoryDevice::Peek(uint64_t offset, std::span<std::byte> out) const {
    ReaderLock lock(state_->mu);
    std::memcpy(out.data(), state_->bytes.data() + offset, out.size());
}

void MemoryDevice::Poke(uint64_t offset, std::span<const std::byte> data) {
    WriterLock lock(state_->mu);
    std::memcpy(state_->bytes.data() + offset, data.data(), data.size());
}

uint64_t MemoryDevice::reads() const { return state_->reads.load(); }
uint64_t MemoryDevice::writes() const { return state_->writes.load(); }
uint64_t MemoryDevice::flushes() const { return state_->flushes.load(); }

std::unique_ptr<Device> NewMemoryDevice(uint64_t size) {
    return std::make_unique<MemoryDevice>(size);
}

}  // namespace mooncake
