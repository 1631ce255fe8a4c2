// DiskNodeDisk: core/disk's DiskStore as a NodeWorker's NodeDisk seam (core/node/node_seams.h).
#pragma once

#include "core/disk/disk_store.h"
#include "core/node/node_seams.h"

namespace mooncake {

class DiskNodeDisk final : public NodeDisk {
public:
    explicit DiskNodeDisk(DiskStore& disk) : disk_(disk) {}
    DiskStore& store() { return disk_; }

    Status Write(std::string_view key, Generation generation, std::span<const std::byte> data,
                 IoPriority priority) override {
        return disk_.Write(key, generation, data, priority);
    }
    std::vector<Status> WriteMany(std::span<const DiskWrite> items, IoPriority priority) override {
        return disk_.WriteMany(items, priority);
    }
    Status Read(std::string_view key, Generation generation, std::span<std::byte> out,
                IoPriority priority) override {
        return disk_.Read(key, generation, out, priority);
    }
    Status Remove(std::string_view key, Generation generation) override {
        return disk_.Remove(key, generation);
    }
    std::vector<Status> RemoveMany(std::span<const DiskRemoval> items) override {
        return disk_.RemoveMany(items);
    }
    void Pin(std::string_view key, Generation generation) override { disk_.Pin(key, generation); }
    void Unpin(std::string_view key, Generation generation) override {
        disk_.Unpin(key, generation);
    }
    std::vector<DiskObjectInfo> List() const override { return disk_.List(); }
    void SetDropListener(std::function<void(const DiskObjectInfo&, DropReason)> l) override {
        disk_.SetDropListener(std::move(l));
    }

private:
    DiskStore& disk_;
};

}  // namespace mooncake
