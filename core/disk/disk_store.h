// DiskStore: the LOCAL_DISK tier of one node. Whole objects, named by (key, generation), kept
// on a local SSD through libaio + O_DIRECT, evicted least-recently-used when room is needed.
//
// ---- On-disk layout (one preallocated file, <dir>/mooncake-disk.img, `capacity` bytes) ----
//
//   [0, 4K)  [4K, 8K)   superblock, two copies: magic "MCTIERDK", format version, the region
//                       offsets below, a random store id; XXH3-hashed
//   [8K, 1M)            reserved
//   [1M, 1M + J)        index journal, two halves of J/2 (J = capacity/8, 2 MiB..2 GiB)
//   [1M + J, capacity)  data region: objects as extents of whole 4 KiB blocks
//
// An object's bytes sit alone in its extents (usually one; up to 128 when free space is
// fragmented), padded to a block, with no header: reads and writes are exactly the object's
// blocks, straight into or out of the caller's buffer when it is 4 KiB aligned. Everything
// else lives in the journal: Put{object id, key, generation, size, XXH3 of the bytes,
// extents} and Del{object id}. Appends are batches with a seeded header and payload hash; when
// a half fills, the live index is written as a checkpoint into the other half under a new
// lap. See journal.h.
//
// Why this shape:
//  - Eviction is LRU per object (the tier above relies on it), so space must be reusable one
//    object at a time: an extent allocator does that without the compaction a log-structured
//    store would need to evict from the middle of its log.
//  - Recovery reads only the journal (bounded by J), never the data region: opening a large
//    disk takes as long as reading its index, not the disk.
//  - No per-object header in the data region keeps I/O aligned to the object (fio parity).
//  - Space is reused only after the Del (or eviction) that frees it is durable and no reader
//    holds it, so a journal entry never names bytes that belong to someone else. Commits are
//    serialized (one flush finishes before the next commit starts), so only the newest commit
//    can have a journal batch on disk without its data (power lost during its flush); recovery
//    re-reads and verifies that commit's objects only. Any other corruption is caught by the
//    checksum on Read, and such an object is dropped, never returned.
//
// ---- Durability ----
// Write: the object's blocks and a journal batch naming them (one submission, data first,
// when the journal is idle; otherwise the data goes out at once and the entry joins the next
// group), then one fdatasync; OK means both are on disk.
// Remove and eviction: a Del entry, durable before the call returns (or the space is reused).
// Concurrent callers share journal batches and flushes (group commit).
// Recovery: torn or corrupt journal batches, entries with impossible extents, overlapping
// entries (the newer wins), older generations of one key, and objects of the newest commit
// whose bytes fail their checksum are skipped and then deleted. After a restart recency is
// the write order; pins are not persistent.
//
// ---- Thread-safety and lock rules ----
// Every method may be called from any thread. One mutex guards the in-memory index, the LRU
// list, the extent allocator and pins; it is held only for in-memory work, never across I/O,
// the journal or the drop listener. The journal has its own lock (group commit). Reads go
// straight to the device once the index lookup is done, so a foreground Read never waits for
// a Write's I/O or flush. Background I/O (offload writes, scrubs) passes a token bucket of
// background_bytes_per_sec, and at most queue_depth/4 background operations run at once, so
// foreground reads keep finding device slots; promotion reads have queue_depth/4 slots of
// their own (IoPriority), so a burst of offload writes never holds a hot object off DRAM.
//
// The drop listener runs on the thread whose call dropped the object, without locks held; it
// may call back into the store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/clock.h"
#include "core/disk/device.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace mooncake {

// What a corruption event found (DiskStoreOptions::on_corruption; the metric label
// mooncake_disk_corruption_total{kind=...}).
enum class CorruptionKind {
    kChecksum,    // an object's bytes failed their hash (a read, a scrub, or recovery's check)
    kJournal,     // a journal batch recovery could not use (torn, damaged, or missing)
    kSuperblock,  // a damaged superblock copy (repaired from the good one)
    kRecord,      // a journal record naming impossible extents or overlapping a newer one
};
inline constexpr CorruptionKind kCorruptionKinds[] = {
    CorruptionKind::kChecksum, CorruptionKind::kJournal, CorruptionKind::kSuperblock,
    CorruptionKind::kRecord};
const char* CorruptionKindName(CorruptionKind kind);

struct DiskStoreOptions {
    // Directory of the store; created if missing (its parent must exist). Must hold nothing
    // but the store's own files (lost+found is tolerated).
    std::string dir;
    // Bytes of disk the store takes, a multiple of 1 MiB, at least 4 MiB. Fixed at creation.
    // OpenOnDevice: 0 means the whole device.
    uint64_t capacity = 0;
    // libaio queue depth (device slots in flight), 1..1024. The default of the
    // disk_queue_depth knob (core/base/knobs.def); see there for why 128.
    int queue_depth = 128;
    // Bytes per second of background I/O; 0 = unlimited.
    uint64_t background_bytes_per_sec = 0;
    // Time source for the rate limiter; nullptr = a steady clock.
    const Clock* clock = nullptr;
    // Called once per corruption event (each is also logged as one warning line naming the
    // key or record and its offset), from the thread that found it: Open's during recovery,
    // a reader's or Scrub's later. Must be cheap; no store lock is held. May be empty.
    std::function<void(CorruptionKind)> on_corruption;
};


struct DiskObjectInfo {
    std::string key;
    Generation generation = kNoGeneration;
    uint64_t size = 0;
};

// One object to write (DiskStore::WriteMany).
struct DiskWrite {
    std::string_view key;
    Generation generation = kNoGeneration;
    std::span<const std::byte> data;
};

// One object to remove (DiskStore::RemoveMany).
struct DiskRemoval {
    std::string_view key;
    Generation generation = kNoGeneration;
};

// What Scrub found.
struct ScrubReport {
    uint64_t checked = 0;        // objects read
    uint64_t checked_bytes = 0;  // their bytes
    std::vector<DiskObjectInfo> corrupt;  // failed their checksum; dropped (listener: kCorrupt)
    uint64_t io_errors = 0;      // reads the device refused (the object is kept)
};

// Who waits for an I/O, and so how it is scheduled against the others:
//  - kForeground: a reader is waiting (a Get served from LOCAL_DISK): straight to the device;
//  - kPromotion: a promotion's read of its source (a hot object on its way to DRAM): its own
//    queue_depth/4 slots, so offload writes, which hold their slots through a journal flush,
//    never make it wait; not rate-limited;
//  - kBackground: offload writes, scrubs: the byte-rate limiter (background_bytes_per_sec)
//    and queue_depth/4 slots, so foreground reads keep finding device slots.
enum class IoPriority { kForeground, kPromotion, kBackground };
enum class DropReason { kEvicted, kCorrupt };

struct DiskStoreStats {
    uint64_t reads = 0, read_bytes = 0;
    uint64_t writes = 0, write_bytes = 0;
    uint64_t removes = 0;
    uint64_t evictions = 0;
    uint64_t corruptions = 0;        // objects dropped by a failed checksum (reads, scrubs)
    uint64_t recovered_objects = 0;  // found by the last open
    uint64_t recovery_dropped = 0;   // skipped by the last open (torn, overlapping, ...)
    uint64_t recovery_skipped_batches = 0;
    // Corruption the last open found, by kind (each also passed to on_corruption).
    uint64_t recovery_checksum_failures = 0;  // newest commit's objects whose bytes failed
    uint64_t recovery_damaged_batches = 0;    // journal batches of the replayed lap lost
    uint64_t recovery_bad_records = 0;        // impossible or overlapping journal records
    uint64_t damaged_superblocks = 0;         // superblock copies found damaged (repaired)
    uint64_t journal_commits = 0;
    uint64_t journal_checkpoints = 0;
};

static_assert(kDiskFootprintBlock == kDeviceBlockSize, "DiskFootprint must match the store");

class DiskStore {
  public:
    // The real store in options.dir: validates (or creates) the directory, locks it (a second
    // process, or a second open in this one, fails with kBusy; the lock dies with its holder),
    // reads or writes the superblock (a newer format version fails clearly) and recovers the
    // index from the journal.
    static Result<std::unique_ptr<DiskStore>> Open(const DiskStoreOptions& options);
    // The same on a given device (tests); options.dir is not used.
    static Result<std::unique_ptr<DiskStore>> OpenOnDevice(std::unique_ptr<Device> device,
                                                           const DiskStoreOptions& options);
    ~DiskStore();

    // Stores the object; durable when it returns OK. Makes room by evicting least recently
    // used unpinned objects (reported to the drop listener). If room cannot be had (everything
    // evictable is pinned, or the object is larger than the store) -> kNoSpace and nothing is
    // written or evicted. The same (key, generation) already stored -> OK. An older generation
    // of the key is replaced (silently: its owner asked for that); a newer one -> kStaleGeneration.
    Status Write(std::string_view key, Generation generation, std::span<const std::byte> data,
                 IoPriority priority);
    // Write of each item (answers in order, each as Write's), with one journal commit and one
    // submission of data for all of them: a node's offloads of small pages, each its own
    // commit, held puts waiting for DRAM behind one flush per page (bench/results/engine.md).
    std::vector<Status> WriteMany(std::span<const DiskWrite> items, IoPriority priority);

    // The whole object into `out` (out.size() == the stored size; any alignment, 4 KiB-aligned
    // buffers are read into directly). The checksum is verified: on a mismatch the object is
    // dropped (listener: kCorrupt) and kCorruption returned; `out` then holds garbage. Unknown
    // key -> kNotFound; a different generation -> kStaleGeneration. Refreshes recency.
    Status Read(std::string_view key, Generation generation, std::span<std::byte> out,
                IoPriority priority);

    Result<uint64_t> SizeOf(std::string_view key, Generation generation) const;

    // Reads every object stored when it starts (background priority: the rate limit and
    // slots of background I/O apply) and verifies its checksum; a corrupt one is dropped as
    // a failed Read drops it (listener kCorrupt, on_corruption, a warning line). Objects
    // removed meanwhile are skipped. Objects are read least recently used first, so the
    // relative recency of what it read is as before.
    ScrubReport Scrub();

    // Durable: a restart never brings it back. Pinned objects are removed too.
    Status Remove(std::string_view key, Generation generation);
    // Remove of each item (answers in order, each as Remove's), with one journal commit for
    // all of them: the master's deletes come in batches (a heartbeat's), and one flush per
    // object held writers waiting for the space behind hundreds of flushes in a row.
    std::vector<Status> RemoveMany(std::span<const DiskRemoval> items);

    // Counted pins; a pinned object is never evicted. Unknown (key, generation): no effect.
    void Pin(std::string_view key, Generation generation);
    void Unpin(std::string_view key, Generation generation);

    // Every stored object, least recently used first.
    std::vector<DiskObjectInfo> List() const;

    void SetDropListener(std::function<void(const DiskObjectInfo&, DropReason)> listener);

    // Runtime tuning of DiskStoreOptions::background_bytes_per_sec (0 = unlimited).
    void SetBackgroundBytesPerSec(uint64_t bytes_per_sec);

    // Bytes of the data region (capacity less superblock and journal).
    uint64_t capacity() const;
    // Background operations (offload writes, scrubs) the store runs at once: queue_depth/4.
    // A writer beyond them waits for a slot, so this many offload workers keep it busy.
    size_t background_slots() const;
    // Bytes of the data region in use (whole blocks), counting writes in flight and dropped
    // objects whose space is not yet reusable.
    uint64_t used() const;
    // Bytes allocated to the stored objects: each object's size rounded up to whole blocks
    // (DiskFootprint). The one definition of "disk used" that the node, the master, `nodes`,
    // the metrics and `check` all report; used() differs from it only by writes in flight
    // and space not yet reusable.
    uint64_t allocated_bytes() const;
    size_t object_count() const;
    DiskStoreStats stats() const;

  private:
    struct Impl;
    explicit DiskStore(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace mooncake
