// The seams a NodeWorker (core/node/node_worker.h) does its byte work through, besides the master
// link (core/base/master_link.h). Each is small so a test can fake it and an embedding process can
// supply its own:
//  - NodeSegment: this node's DRAM segment (node/segment.h; core/node/bookkeeping_node.h holds
//    no bytes for simulations);
//  - NodeDisk: this node's LOCAL_DISK store (core/node/disk_node_disk.h adapts core/disk's
//    DiskStore);
//  - PeerWriter: writes staged bytes into another node's segment (the daemon adapts its TCP
//    data transport, thrift/data_transport.h).
//
// Thread-safety: implementations are called from many threads at once.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// DiskObjectInfo, DiskRemoval, DiskWrite, IoPriority, DropReason (types only)
#include "core/disk/disk_store.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace mooncake {

// A range of the segment holding one object's committed bytes.
struct HeldRange {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t offset = 0;
    uint64_t length = 0;
};

class NodeSegment {
public:
    virtual ~NodeSegment() = default;
    // Calls `use` with the committed bytes of (key, generation) at [offset, offset + length),
    // held steady (no reuse of the range) until it returns; its status is returned. NotFound /
    // StaleGeneration when the range does not hold that incarnation (then `use` is not called).
    virtual Status ReadRange(std::string_view key, Generation generation, uint64_t offset,
                             uint64_t length,
                             const std::function<Status(std::span<const std::byte>)>& use) = 0;
    // Copies `data` in at `offset`, recording the range as holding (key, generation).
    virtual Status Write(std::string_view key, Generation generation, uint64_t offset,
                         std::span<const std::byte> data) = 0;
    // Forgets the record at `offset` if it still holds (key, generation).
    virtual void Release(std::string_view key, Generation generation, uint64_t offset) = 0;
    // The committed records, for registering them again with a master that forgot them.
    virtual std::vector<HeldRange> Held() const = 0;
};

class NodeDisk {
public:
    virtual ~NodeDisk() = default;
    virtual Status Write(std::string_view key, Generation generation,
                         std::span<const std::byte> data, IoPriority priority) = 0;
    // Write of each, answers in order; a real disk makes them durable together.
    virtual std::vector<Status> WriteMany(std::span<const DiskWrite> items, IoPriority priority) {
        std::vector<Status> out;
        out.reserve(items.size());
        for (const DiskWrite& item : items) {
            out.push_back(Write(item.key, item.generation, item.data, priority));
        }
        return out;
    }
    // out.size() is the stored size.
    virtual Status Read(std::string_view key, Generation generation, std::span<std::byte> out,
                        IoPriority priority) = 0;
    // NotFound when the record is not there.
    virtual Status Remove(std::string_view key, Generation generation) = 0;
    // Remove of each, answers in order; a real disk makes them durable together.
    virtual std::vector<Status> RemoveMany(std::span<const DiskRemoval> items) {
        std::vector<Status> out;
        out.reserve(items.size());
        for (const DiskRemoval& item : items) out.push_back(Remove(item.key, item.generation));
        return out;
    }
    // Counted; a pinned record is never evicted.
    virtual void Pin(std::string_view key, Generation generation) = 0;
    virtual void Unpin(std::string_view key, Generation generation) = 0;
    virtual std::vector<DiskObjectInfo> List() const = 0;
    // Told of every record the disk drops by itself (eviction, failed checksum), on whichever
    // thread dropped it. nullptr: nobody.
    virtual void SetDropListener(std::function<void(const DiskObjectInfo&, DropReason)> l) = 0;
};

class PeerWriter {
public:
    virtual ~PeerWriter() = default;
    // Writes `data` into the MEMORY range at `offset` of the segment whose data channel is
    // `address`, recording the range as holding (key, generation).
    virtual Status WriteMemory(std::string_view address, std::string_view key,
                               Generation generation, uint64_t offset,
                               std::span<const std::byte> data) = 0;
};

}  // namespace mooncake
