// DramPool: allocation across the live nodes' segments, and waiting for room
// (core/master/dram_pool.h).
#include "core/master/dram_pool.h"

#include <algorithm>

namespace mooncake {

std::optional<DramPool::Allocation> DramPool::TryAllocate(uint64_t size, NodeId preferred,
                                                          std::span<const NodeId> avoid) {
    auto avoided = [&](NodeId id) {
        return std::find(avoid.begin(), avoid.end(), id) != avoid.end();
    };
    auto try_node = [&](NodeState& node) -> std::optional<Allocation> {
        if (!node.Placeable()) return std::nullopt;  // draining, or its ranges not reported
        auto offset = node.segment.Allocate(size);
        if (!offset) return std::nullopt;
        allocated_bytes_.fetch_add(SegmentAllocator::RoundUp(size), std::memory_order_relaxed);
        return Allocation{node.id, *offset};
    };
    // The preferred node by its id: a Put that fits there (the common case: a standalone
    // daemon prefers itself) copies no list of the nodes.
    if (preferred != kNoNode && !avoided(preferred)) {
        if (auto node = nodes_.Get(preferred)) {
            if (auto a = try_node(*node)) return a;
        }
    }
    auto all = nodes_.All();
    // Then the node with the most free room, so load spreads over the segments.
    std::vector<std::pair<uint64_t, NodeState*>> by_room;
    for (auto& node : all) {
        if (node->id == preferred || avoided(node->id) || !node->Placeable()) {
            continue;
        }
        if (node->segment.largest_free_extent() >= SegmentAllocator::RoundUp(size)) {
            by_room.emplace_back(node->segment.free_bytes(), node.get());
        }
    }
    std::sort(by_room.begin(), by_room.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [room, node] : by_room) {
        if (auto a = try_node(*node)) return a;
    }
    return std::nullopt;
}

void DramPool::Free(NodeId id, uint64_t offset, uint64_t size) {
    if (auto node = nodes_.Get(id)) node->segment.Free(offset, size);
    NotifyRoom();
}

void DramPool::NotifyRoom() {
    MutexLock lock(room_mu_);
    ++room_events_;
    room_cv_.NotifyAll();
}

Result<DramPool::Allocation> DramPool::Allocate(uint64_t size, NodeId preferred, Nanos wait,
                                               const Evictor& evict) {
    const auto give_up_at = std::chrono::steady_clock::now() + wait;
    const uint64_t need = SegmentAllocator::RoundUp(size);
    struct WaitingCount {  // this allocation's share of waiting_bytes_ while it waits
        std::atomic<uint64_t>& total;
        uint64_t bytes = 0;
        void Add(uint64_t b) {
            if (bytes == 0) total.fetch_add(bytes = b);
        }
        ~WaitingCount() {
            if (bytes != 0) total.fetch_sub(bytes);
        }
    } waiting{waiting_bytes_};
    for (;;) {
        uint64_t seen_events;
        {
            MutexLock lock(room_mu_);
            seen_events = room_events_;
        }
        if (auto a = TryAllocate(size, preferred)) return *a;
        // A node that registered again is still reporting what its segment holds: its room
        // opens at its next heartbeat (moments away). Wait for that rather than evict for
        // room, which could take the very objects it has just reported back.
        if (nodes_.AnyReporting()) {
            if (WaitForRoomEvent(seen_events, give_up_at)) continue;
            return nodes_.StillReporting();
        }
        // Evict only when the DRAM already on its way out does not cover what the waiting
        // allocations (this one included) need. (Was: Evict on every wake-up, so a waiter that
        // lost the freed room to another queued one more victim each time, and racing Puts
        // drained DRAM far below capacity; ConcurrencyTest.PutsUnderPressureWait...)
        uint64_t freed = 0;
        const uint64_t wanted = waiting_bytes_.load() + (waiting.bytes ? 0 : need);
        const uint64_t coming = evict_pending_bytes_.load();
        if (coming < wanted) freed = evict(wanted - coming);
        if (freed > 0) continue;
        // Room is on its way while any offload is in flight: an offload-on-evict drops its
        // MEMORY copy when done, and any other (at PutEnd, manual, watermark clean) makes its
        // pinned MEMORY copy droppable. Only with none in flight is waiting pointless.
        // (Was: evict_pending_bytes_ only, so with offload at PutEnd a Put into DRAM full of
        // objects pinned by their disk writes failed at once instead of waiting; see
        // OffloadTest.PutWaitsForPutEndOffloadsInFlightBeforeGivingUp.)
        // Checked under room_mu_, with the room events: OffloadPipeline::End ends an offload's accounting
        // under room_mu_ with an event, after the DRAM it frees is free. So an offload that
        // ended after seen_events makes us look again, and one that ended before had freed its
        // room before TryAllocate looked: DRAM freed by another thread (an offload done, a
        // Remove) is never missed. (Was: NoSpace with free DRAM under concurrency;
        // ConcurrencyTest.PutsUnderPressureWaitWhileANodeDrainsOffloads.)
        bool nothing_coming;
        {
            MutexLock lock(room_mu_);
            if (room_events_ != seen_events) continue;
            nothing_coming = evict_pending_bytes_.load() == 0 && offloads_in_flight_.load() == 0;
        }
        if (nothing_coming) {
            return Status::NoSpace("DRAM is full and nothing in it can be evicted now "
                                   "(pinned, being written, or leased under "
                                   "lease_blocks_eviction; " + FormatSize(Used()) + " of " +
                                   FormatSize(Capacity()) + " in use)");
        }
        // Offloads in flight will free room: wait for one to finish, within the budget.
        waiting.Add(need);
        if (!WaitForRoomEvent(seen_events, give_up_at)) {
            if (auto a = TryAllocate(size, preferred)) return *a;
            return Status::NoSpace("DRAM is full; offloads in flight did not free room within " +
                                   std::to_string(config_.put_wait_for_offload_ms()) + " ms");
        }
    }
}

bool DramPool::WaitForRoomEvent(uint64_t seen_events,
                                std::chrono::steady_clock::time_point give_up_at) {
    MutexLock lock(room_mu_);
    while (room_events_ == seen_events) {
        if (!room_cv_.WaitUntil(room_mu_, give_up_at)) return room_events_ != seen_events;
    }
    return true;
}

uint64_t DramPool::Capacity() const {
    uint64_t total = 0;
    for (auto& node : nodes_.All()) {
        total += node->segment.capacity();
    }
    return total;
}

uint64_t DramPool::Used() const {
    uint64_t total = 0;
    for (auto& node : nodes_.All()) {
        total += node->segment.used();
    }
    return total;
}

uint64_t DramPool::LargestFreeExtent() const {
    uint64_t best = 0;
    for (auto& node : nodes_.All()) {
        best = std::max(best, node->segment.largest_free_extent());
    }
    return best;
}

void DramPool::OffloadQueued(uint64_t evict_bytes) {
    if (evict_bytes) evict_pending_bytes_.fetch_add(evict_bytes);
    offloads_in_flight_.fetch_add(1, std::memory_order_relaxed);
}

void DramPool::AddEvictPending(uint64_t bytes) { evict_pending_bytes_.fetch_add(bytes); }

void DramPool::OffloadEnded(uint64_t evict_bytes) {
    // Under room_mu_ with a room event (see Allocate); callers that free the offload's DRAM
    // drop it before calling this, so a waiting allocation never sees "nothing in flight"
    // before it can see the room.
    MutexLock lock(room_mu_);
    if (evict_bytes) evict_pending_bytes_.fetch_sub(evict_bytes);
    offloads_in_flight_.fetch_sub(1, std::memory_order_relaxed);
    ++room_events_;
    room_cv_.NotifyAll();
}

}  // namespace mooncake
