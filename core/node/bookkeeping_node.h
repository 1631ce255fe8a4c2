// Seams of a node that moves no bytes (segment, disk, peers): the trace replay's default LOCAL_DISK (bookkeeping
// only, unbounded) and the store tests' nodes drive the real NodeWorker over these, so only
// the master's metadata and the worker's protocol run. Every operation succeeds; reads leave
// the output untouched; nothing is held, so nothing is registered again.
#pragma once

#include "core/node/node_seams.h"

namespace mooncake {

class BookkeepingSegment final : public NodeSegment {
public:
    Status ReadRange(std::string_view, Generation, uint64_t, uint64_t,
                     const std::function<Status(std::span<const std::byte>)>& use) override {
        return use({});
    }
    Status Write(std::string_view, Generation, uint64_t, std::span<const std::byte>) override {
        return Status::Ok();
    }
    void Release(std::string_view, Generation, uint64_t) override {}
    std::vector<HeldRange> Held() const override { return {}; }
};

class BookkeepingDisk final : public NodeDisk {
public:
    Status Write(std::string_view, Generation, std::span<const std::byte>, IoPriority) override {
        return Status::Ok();
    }
    Status Read(std::string_view, Generation, std::span<std::byte>, IoPriority) override {
        return Status::Ok();
    }
    Status Remove(std::string_view, Generation) override { return Status::Ok(); }
    void Pin(std::string_view, Generation) override {}
    void Unpin(std::string_view, Generation) override {}
    std::vector<DiskObjectInfo> List() const override { return {}; }
    void SetDropListener(std::function<void(const DiskObjectInfo&, DropReason)>) override {}
};

class BookkeepingPeers final : public PeerWriter {
public:
    Status WriteMemory(std::string_view, std::string_view, Generation, uint64_t,
                       std::span<const std::byte>) override {
        return Status::Ok();
    }
};

}  // namespace mooncake
