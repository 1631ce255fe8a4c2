// One object's state in the master: its replicas, its tasks, and the named phase they add up to.
//
// Phases (derived from the COMPLETE replicas, so they can never disagree with them):
//   kWriting     a Put is in progress: a PROCESSING MEMORY replica (one per copy it asked
//                for, each on its own node), nothing readable yet
//   kMemoryOnly  COMPLETE MEMORY, no disk copy
//   kBothTiers   COMPLETE MEMORY and COMPLETE LOCAL_DISK
//   kDiskOnly    COMPLETE LOCAL_DISK only (evicted after offload, or reported by a rejoining
//                node); the phase a promotion starts from
//   kEmpty       nothing at all: created by a rejoin claim before its replica is added, or
//                every replica dropped; the store erases such an object
//
// Transitions, each one method below (it keeps the per-node and store tallies it affects):
//   (new)        -- StartPut ------------> kWriting
//   kWriting     -- EndPut --------------> kMemoryOnly
//   kMemoryOnly  -- AddDisk (offload) ---> kBothTiers
//   kBothTiers   -- TakeReplica(MEMORY) (evicted; the last of its copies) -> kDiskOnly
//   kDiskOnly    -- AddMemory (promotion commit) -> kBothTiers
//   kBothTiers   -- TakeReplica(LOCAL_DISK) (promotion_drop_source, record lost) -> kMemoryOnly
//   kMemoryOnly  -- TakeReplica(MEMORY) (evicted without offload) -> kEmpty
//   any          -- TakeReplica, each replica (Remove, node gone, Put revoked) -> kEmpty
//   kEmpty       -- AddDisk / AddMemory (a rejoining node's report) -> kDiskOnly / kMemoryOnly
// Pins: a task's source replica is pinned for exactly as long as the task lives. The pin is
// not a count kept beside the task but derived from it (SourcePinned), so no exit path of a
// task can leave a pin behind or release one it did not take.
//
// Every method is called with the object's shard lock held (core/master/object_table.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/master/access_count.h"
#include "core/base/compact.h"

#include "core/base/clock.h"
#include "core/base/master_types.h"
#include "core/base/types.h"

namespace mooncake {

// 24 bytes: the wide fields first, the two enums in the last word.
struct Replica {
    Replica() = default;
    Replica(Tier t, ReplicaState s, NodeId n, uint64_t off)
        : node(n), offset(off), tier(t), state(s) {}
    // A readable MEMORY copy.
    bool IsCompleteMemory() const { return tier == Tier::kMemory && state == ReplicaState::kComplete; }

    NodeId node = kNoNode;
    uint64_t offset = 0;  // MEMORY: range start in the node's segment
    Tier tier = Tier::kMemory;
    ReplicaState state = ReplicaState::kProcessing;
};
static_assert(sizeof(Replica) == 24);

struct PromotionState {
    NodeId holder = kNoNode;
    Nanos start{0};       // admission time (latency histogram)
    Nanos deadline{0};    // reaper expires the task after this
    bool delivered = false;
    std::optional<Replica> staging;  // PROCESSING MEMORY range, once allocated
};

struct OffloadState {
    NodeId node = kNoNode;  // holder of the MEMORY source and of the disk it writes to
    Nanos start{0};
    Nanos deadline{0};
    bool delivered = false;
    bool evict_after = false;  // offload-on-evict: drop MEMORY once the disk copy exists
    uint64_t chosen_recency = 0;  // evict_after: the object's recency when eviction chose it
    bool cleaning = false;     // queued by the watermark round (counted in clean_pending_bytes)
};

// What an object's transitions count: implemented by the store over its node table
// (per-node MEMORY/LOCAL_DISK counts) and its Put counter.
class ObjectTallies {
public:
    virtual ~ObjectTallies() = default;
    virtual void PutsInProgress(int delta) = 0;
    virtual void NodeMemoryObjects(NodeId node, int delta) = 0;
    virtual void NodeDiskObjects(NodeId node, int delta, uint64_t bytes) = 0;
    // A replica of `key`'s object (`size` bytes) came (+1) or went (-1) in `tier`: its
    // tenant's usage (MEMORY: from the Put's start, so a quota counts puts in progress).
    virtual void TenantObjects(std::string_view key, Tier tier, int delta, uint64_t size) = 0;
    // `key`'s MEMORY copy (`bytes` of DRAM) is to drop once its offload lands (+), or that
    // offload ended (-): a tenant's quota counts it as gone, so eviction does not take more.
    virtual void TenantLeaving(std::string_view key, int64_t bytes) = 0;
};

struct ObjectMeta;
// The eviction order's per-object state (core/master/eviction_order.h), guarded by the shard lock.
// The list links live here (core/master/eviction_list.h is intrusive): no heap node per object.
struct EvictionHook {
    ObjectMeta* prev = nullptr;  // towards the list's most recent end
    ObjectMeta* next = nullptr;  // towards its least recent end
    // HitDensityOrder's statistics (LruOrder leaves them alone).
    Nanos last_access{0};
    uint8_t accesses = 0;   // the Put and every Get since, saturating (classes tell 1, 2, 3+)
    uint8_t cls = 0;        // class of the last access
    bool listed : 1 = false;  // in one of its shard's eviction lists (counted in memory_objects)
    // Put as a batch's partial tail (PutHint::last_partial, knob partial_tail_cold): its
    // PutEnd lists it at the cold end of an LRU order. Cleared there.
    bool cold_put : 1 = false;
    uint8_t list = 0;       // which one, while listed
    // Not the eviction order's: promotion admission's count of the object's reads
    // (core/master/access_count.h, ObjectMeta::reads), kept in bytes the hook would otherwise pad, so
    // an object's table node stays in the 224-byte allocation class.
    AccessCount reads;
};
static_assert(sizeof(EvictionHook) == 32);

enum class Phase { kEmpty, kWriting, kMemoryOnly, kBothTiers, kDiskOnly };
std::string_view PhaseName(Phase phase);

// Whether a read lease keeps an object's MEMORY copy from eviction (the lease_blocks_eviction
// knob). A read does not need it: the node checks (key, generation) before sending and holds
// the range's lock while bytes move, so a range is reused only after its reads end and is
// never read as another object's; a reader that finds it gone retries the next replica or
// tier. Leases always keep a key from Remove.
enum class LeaseRule {
    kReadsOnly,            // default: a lease does not keep the object in MEMORY
    kLeaseBlocksEviction,  // Mooncake's rule: not evicted until its lease ends
};

struct ObjectMeta {
    const std::string* key = nullptr;  // the map's key (stable: unordered_map nodes do not move)
    Generation generation = kNoGeneration;
    uint64_t size = 0;
    ClientId put_client = 0;
    Nanos put_deadline{0};  // while the MEMORY replica is PROCESSING
    Nanos lease_expiry{0};
    uint64_t recency = 0;
    uint64_t hash = 0;  // AdmissionSketch::Hash(key)
    EvictionHook eviction;  // listed while it has a COMPLETE MEMORY replica
    // Task state, boxed: 8 bytes per object, allocated only while a task is in flight.
    Boxed<OffloadState> offload;
    Boxed<PromotionState> promotion;

    // Promotion admission's count of its reads (core/master/access_count.h).
    AccessCount& reads() { return eviction.reads; }
    const AccessCount& reads() const { return eviction.reads; }

    // ---- phase and predicates ----
    Phase phase() const;
    bool HasComplete(Tier tier) const { return Find(tier, ReplicaState::kComplete) != nullptr; }
    // A reader gets a replica: MEMORY or LOCAL_DISK is COMPLETE.
    bool Readable() const { return HasComplete(Tier::kMemory) || HasComplete(Tier::kLocalDisk); }
    bool DiskOnly() const { return phase() == Phase::kDiskOnly; }
    // A promotion may start: LOCAL_DISK only, no promotion task yet.
    bool Promotable() const { return DiskOnly() && !promotion; }
    bool Leased(Nanos now) const { return lease_expiry > now; }
    // Eviction may take its MEMORY copy: COMPLETE, (under kLeaseBlocksEviction) no read lease,
    // and either unpinned with no offload in flight (dropped or offloaded now), or its only pin
    // is the watermark round's copy written ahead (WrittenAhead), which eviction turns into an
    // offload on evict: MEMORY goes when that copy lands. (A copy asked for its own sake, at
    // PutEnd or by hand, keeps the object from eviction rounds until it is done; a manual
    // evict may still take it.) A read in progress does not keep an object from eviction:
    // the node's range lock keeps its range from reuse until the read ends.
    bool Evictable(Nanos now, LeaseRule rule) const;
    // Its disk copy is being written by a task that keeps MEMORY afterwards.
    bool CopyInFlight() const { return offload && !offload->evict_after; }
    // ... by the watermark round, so that eviction may drop it (core/master/store_eviction.cc Clean).
    bool WrittenAhead() const { return CopyInFlight() && offload->cleaning; }
    // Its offload on evict has landed and MEMORY may go now: not read since eviction chose it
    // (a read makes it hot again: it stays, and a waiting Put evicts another) and (under
    // kLeaseBlocksEviction) not leased.
    bool DropAfterCopy(Nanos now, LeaseRule rule) const {
        return offload && offload->evict_after && recency == offload->chosen_recency &&
               !LeaseBlocksEviction(now, rule);
    }
    // A lease keeps the MEMORY copy from eviction now.
    bool LeaseBlocksEviction(Nanos now, LeaseRule rule) const {
        return rule == LeaseRule::kLeaseBlocksEviction && Leased(now);
    }
    // A Put started and not ended before its deadline (the client is gone).
    bool PutExpired(Nanos now) const { return phase() == Phase::kWriting && put_deadline < now; }
    // Any replica (or a promotion staging range) of this object is on `node`.
    bool Touches(NodeId node) const;
    // A replica of `tier` on `node` (MEMORY: at `offset`), in any state, staging included.
    bool Holds(NodeId node, Tier tier, uint64_t offset) const;
    bool HasMemoryReplica() const;  // any state, staging included
    const Replica* Find(Tier tier, ReplicaState state) const;
    const Replica* CompleteMemory() const { return Find(Tier::kMemory, ReplicaState::kComplete); }
    // COMPLETE MEMORY replicas: 1 unless the Put asked for copies (PutConfig::replicas) or a
    // rejoining node brought one back. Eviction takes them one at a time.
    size_t MemoryCopies() const;
    const Replica* CompleteDisk() const { return Find(Tier::kLocalDisk, ReplicaState::kComplete); }
    const SmallVector<Replica, 2>& replicas() const { return replicas_; }
    bool NoReplicas() const { return replicas_.empty(); }

    // ---- transitions ----
    // (new) -> kWriting: the Put's PROCESSING MEMORY range; once more for each further copy
    // it writes (PutConfig::replicas), each on another node.
    void StartPut(ObjectTallies& t, NodeId node, uint64_t offset);
    // kWriting -> kMemoryOnly: every range of the Put COMPLETE. Returns the first, or nullptr
    // if ended already.
    const Replica* EndPut(ObjectTallies& t);
    // Adds a COMPLETE LOCAL_DISK replica on `node` (offload done, rejoin report).
    void AddDisk(ObjectTallies& t, NodeId node);
    // Adds a COMPLETE MEMORY replica (promotion commit: `first` puts it before the others;
    // rejoin report: after).
    void AddMemory(ObjectTallies& t, NodeId node, uint64_t offset, bool first);
    // Removes and returns replica `index` (its tallies undone). The caller frees its DRAM or
    // tells its node to delete the record.
    Replica TakeReplica(ObjectTallies& t, size_t index);
    // The index of the first replica `match` accepts, or -1.
    template <typename Match>
    int IndexOf(Match match) const {
        for (size_t i = 0; i < replicas_.size(); ++i) {
            if (match(replicas_[i])) return static_cast<int>(i);
        }
        return -1;
    }
    // Whether `r` (one of replicas()) is a task's source: the first COMPLETE MEMORY replica
    // while an offload copies it, the first COMPLETE LOCAL_DISK one while a promotion does.
    // A pinned replica is neither evicted nor dropped by promotion_drop_source.
    bool SourcePinned(const Replica& r) const {
        return (offload && &r == CompleteMemory()) || (promotion && &r == CompleteDisk());
    }
    // The same as a count (0 or 1: one task per kind, and each pins another tier).
    uint32_t Pins(const Replica& r) const { return SourcePinned(r) ? 1 : 0; }

private:
    // MEMORY and LOCAL_DISK fit inline; a rejoin reporting more spills to the heap.
    SmallVector<Replica, 2> replicas_;
};

}  // namespace mooncake
