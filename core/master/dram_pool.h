// The DRAM tier as one pool: allocation across the live nodes' segments, and the "room"
// accounting that lets an allocation wait for offloads in flight instead of failing.
//
// Room on its way: evict_pending_bytes (MEMORY copies queued for offload-then-drop) and the
// offloads in flight (each one, done, makes its pinned MEMORY copy droppable). room_mu_ with
// room_events_ orders "DRAM freed" against "an offload ended" (see Allocate).
//
// Lock order: room_mu_ is a leaf; Allocate takes no lock while calling the evictor.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "core/base/knobs.h"
#include "core/base/mutex.h"
#include "core/master/node_table.h"
#include "core/base/status.h"

namespace mooncake {

class DramPool {
public:
    DramPool(const NodeTable& nodes, const Config& config) : nodes_(nodes), config_(config) {}

    struct Allocation {
        NodeId node;
        uint64_t offset;
    };
    // One attempt, no eviction: `preferred` first, then the node with the most free room;
    // never on a node of `avoid` (those holding the object's other copies), nor on a node
    // whose segment is draining or drained, or still being reported (NodeState::Placeable).
    std::optional<Allocation> TryAllocate(uint64_t size, NodeId preferred,
                                          std::span<const NodeId> avoid = {});
    // Makes room for `bytes`: returns the DRAM freed now (the eviction engine).
    using Evictor = std::function<uint64_t(uint64_t bytes)>;
    // Allocates, calling `evict` for room; waits up to `wait` (real time) for offloads in
    // flight. NoSpace when room cannot be had.
    Result<Allocation> Allocate(uint64_t size, NodeId preferred, Nanos wait, const Evictor& evict);
    void Free(NodeId node, uint64_t offset, uint64_t size);  // and NotifyRoom
    // DRAM may have freed (a node came or went, an offload failed): waiting allocations look.
    void NotifyRoom();

    uint64_t Capacity() const;
    uint64_t Used() const;
    uint64_t LargestFreeExtent() const;
    // Bytes allocated since start (never decreases): how much DRAM new data has taken.
    uint64_t allocated_bytes() const { return allocated_bytes_.load(std::memory_order_relaxed); }

    // ---- room on its way (the offload pipeline reports) ----
    void OffloadQueued(uint64_t evict_bytes);  // evict_bytes: its MEMORY drops when done (or 0)
    void AddEvictPending(uint64_t bytes);      // a queued offload becomes offload-then-drop
    void OffloadEnded(uint64_t evict_bytes);   // after any DRAM it frees is free
    uint64_t evict_pending_bytes() const { return evict_pending_bytes_.load(); }
    int64_t offloads_in_flight() const { return offloads_in_flight_.load(); }

private:
    // Waits until a room event after `seen_events`, or `give_up_at`; false when none came.
    bool WaitForRoomEvent(uint64_t seen_events, std::chrono::steady_clock::time_point give_up_at)
        MC_EXCLUDES(room_mu_);

    const NodeTable& nodes_;
    const Config& config_;
    Mutex room_mu_;  // with room_cv_: allocations waiting for offloads to free DRAM
    CondVar room_cv_;
    uint64_t room_events_ MC_GUARDED_BY(room_mu_) = 0;  // bumped whenever DRAM may have freed
    std::atomic<uint64_t> evict_pending_bytes_{0};
    std::atomic<uint64_t> allocated_bytes_{0};
    std::atomic<int64_t> offloads_in_flight_{0};
    // Bytes the allocations waiting in Allocate need: eviction queues no more offload-then-
    // drop bytes than that, so racing waiters do not over-evict.
    std::atomic<uint64_t> waiting_bytes_{0};
};

}  // namespace mooncake
