#include "core/disk/disk_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <semaphore>
#include <thread>
#include <unordered_map>

#include "core/disk/extent_allocator.h"
#include "core/disk/format.h"
#include "core/disk/journal.h"
#include "core/disk/rate_limiter.h"
#include "core/base/mutex.h"
#include "spdlog/spdlog.h"

namespace mooncake {

using disk_format::Extent;
using disk_format::PutEntry;

namespace {

constexpr char kImageFile[] = "mooncake-disk.img";
constexpr char kLockFile[] = "LOCK";
constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kMaxIoBytes = 1 << 20;  // one libaio request at most

// Device slots of each of the two limited classes (background, promotion): a quarter of the
// queue each, so foreground reads always find half of it.
int BackgroundSlots(int queue_depth) { return std::max(1, queue_depth / 4); }

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::string ErrnoText(int err) { return std::strerror(err); }

std::string Describe(std::string_view key, Generation gen) {
    return QuoteKey(key) + " generation " + std::to_string(gen);
}

// One object as the index holds it.
struct Object {
    std::string key;
    Generation gen = kNoGeneration;
    uint64_t size = 0;
    uint64_t hash = 0;
    uint64_t id = 0;
    std::vector<Extent> extents;
    uint64_t index_bytes = 0;  // its Put entry in the journal
    int pins = 0;
    int readers = 0;
    bool in_index = false;
    bool del_durable = false;  // dropped, and its Del is on disk
    bool freed = false;        // extents returned to the allocator
    std::list<Object*>::iterator lru;

    uint64_t allocated() const {
        uint64_t n = 0;
        for (const Extent& e : extents) n += e.length;
        return n;
    }
    DiskObjectInfo Info() const { return {key, gen, size}; }
};
using ObjectPtr = std::shared_ptr<Object>;

// Maps an object's logical blocks [0, AlignUp(size)) onto its extents as device requests of
// at most kMaxIoBytes. Logical bytes below `split` use `main + pos`, the rest `tail + pos - split`.
std::vector<IoRequest> PlanIo(const std::vector<Extent>& extents, uint64_t split, std::byte* main,
                              std::byte* tail) {
    std::vector<IoRequest> reqs;
    uint64_t logical = 0;
    for (const Extent& e : extents) {
        uint64_t done = 0;
        while (done < e.length) {
            uint64_t len = std::min(kMaxIoBytes, e.length - done);
            std::byte* buf;
            if (logical < split) {
                len = std::min(len, split - logical);
                buf = main + logical;
            } else {
                buf = tail + (logical - split);
            }
            reqs.push_back({e.offset + done, buf, len});
            done += len;
            logical += len;
        }
    }
    return reqs;
}

}  // namespace

const char* CorruptionKindName(CorruptionKind kind) {
    switch (kind) {
        case CorruptionKind::kChecksum: return "checksum";
        case CorruptionKind::kJournal: return "journal";
        case CorruptionKind::kSuperblock: return "superblock";
        case CorruptionKind::kRecord: return "record";
    }
    return "unknown";
}

struct DiskStore::Impl {
    DiskStoreOptions options;
    std::unique_ptr<Device> device;
    disk_format::Superblock sb;
    std::unique_ptr<Journal> journal;
    int lock_fd = -1;
    SteadyClock steady_clock;
    const Clock* clock = nullptr;
    std::unique_ptr<RateLimiter> limiter;
    std::unique_ptr<std::counting_semaphore<>> background_slots;
    std::unique_ptr<std::counting_semaphore<>> promotion_slots;
    uint64_t index_budget = 0;

    mutable Mutex mu;
    CondVar cv;  // space released, a write finished
    std::unordered_map<std::string, ObjectPtr, StringHash, std::equal_to<>> index MC_GUARDED_BY(mu);
    std::list<Object*> lru MC_GUARDED_BY(mu);  // front = least recently used
    // Set once at open; its size without mu: DataSize().
    std::unique_ptr<ExtentAllocator> allocator MC_PT_GUARDED_BY(mu);
    std::unordered_multimap<std::string, Generation, StringHash, std::equal_to<>> writing
        MC_GUARDED_BY(mu);
    // Put entries of live, in-flight and not-yet-deleted objects.
    uint64_t index_bytes MC_GUARDED_BY(mu) = 0;
    uint64_t pending_bytes MC_GUARDED_BY(mu) = 0;  // extents of dropped objects not yet freed
    // Index bytes of dropped objects whose Del is not durable.
    uint64_t pending_index MC_GUARDED_BY(mu) = 0;
    uint64_t next_object_id MC_GUARDED_BY(mu) = 1;
    // Records recently dropped because they failed their checksum (key -> generation), oldest
    // first in `corrupt_order`. A read that comes after the drop -- a promotion's or a scrub's
    // read found the damage first, racing the client's -- is told CORRUPTION, as the first
    // read was, not NotFound (docs/BAD_INPUT.md).
    static constexpr size_t kCorruptRemembered = 4096;
    std::unordered_map<std::string, Generation, StringHash, std::equal_to<>> corrupt_recent
        MC_GUARDED_BY(mu);
    std::deque<std::pair<std::string, Generation>> corrupt_order MC_GUARDED_BY(mu);

    // The allocator spans the data area, whose size is fixed when the store opens.
    uint64_t DataSize() const { return sb.data_size; }

    void RememberCorruptLocked(const std::string& key, Generation gen) MC_REQUIRES(mu) {
        corrupt_recent[key] = gen;
        corrupt_order.emplace_back(key, gen);
        while (corrupt_order.size() > kCorruptRemembered) {
            auto& [old_key, old_gen] = corrupt_order.front();
            auto it = corrupt_recent.find(old_key);
            if (it != corrupt_recent.end() && it->second == old_gen) corrupt_recent.erase(it);
            corrupt_order.pop_front();
        }
    }
    // The answer for `key` at `gen` when the index does not hold that incarnation: CORRUPTION
    // if that is why it went, else `otherwise`.
    Status MissingLocked(std::string_view key, Generation gen, Status otherwise) const
        MC_REQUIRES(mu) {
        auto it = corrupt_recent.find(key);
        if (it != corrupt_recent.end() && it->second == gen) {
            return Status::Corruption(Describe(key, gen) +
                                      " is corrupt on disk (checksum mismatch); the copy was "
                                      "dropped");
        }
        return otherwise;
    }

    Mutex listener_mu;
    std::function<void(const DiskObjectInfo&, DropReason)> listener MC_GUARDED_BY(listener_mu);

    std::atomic<uint64_t> reads{0}, read_bytes{0}, writes{0}, write_bytes{0}, removes{0},
        evictions{0}, corruptions{0};
    uint64_t allocated MC_GUARDED_BY(mu) = 0;  // DiskFootprint of the indexed objects
    DiskStoreStats recovery;

    ~Impl() {
        if (lock_fd >= 0) close(lock_fd);  // releases the flock
    }

    // Corruption is an event: one warning line (the caller's), then the counter hook.
    void Corrupted(CorruptionKind kind) {
        if (options.on_corruption) options.on_corruption(kind);
    }
    // Recovery can find thousands of bad records at once: the first ones are logged one line
    // each, the rest in one summary line at the end of the open.
    static constexpr int kLoggedPerOpen = 100;
    int logged_this_open = 0;
    uint64_t unlogged_this_open = 0;
    template <typename... Args>
    void RecoveryWarn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
        if (logged_this_open++ < kLoggedPerOpen) {
            spdlog::warn(fmt, std::forward<Args>(args)...);
        } else {
            ++unlogged_this_open;
        }
    }

    // ---- open ----
    Status Init(uint64_t capacity);
    Status FormatDevice(uint64_t capacity);
    Status Recover();

    // ---- index helpers (mu held) ----
    // Takes `o` out of the index (if there) and counts its space as coming back.
    void DetachLocked(Object& o) MC_REQUIRES(mu) {
        if (o.in_index) {
            index.erase(index.find(std::string_view(o.key)));
            lru.erase(o.lru);
            o.in_index = false;
            allocated -= DiskFootprint(o.size);
        }
        pending_bytes += o.allocated();
        pending_index += o.index_bytes;
    }
    void ReleaseIfDoneLocked(Object& o) MC_REQUIRES(mu) {
        if (o.freed || !o.del_durable || o.readers > 0) return;
        for (const Extent& e : o.extents) allocator->Free(e);
        o.freed = true;
        pending_bytes -= o.allocated();
        cv.NotifyAll();
    }
    void InsertLocked(const ObjectPtr& o) MC_REQUIRES(mu) {
        o->in_index = true;
        o->lru = lru.insert(lru.end(), o.get());
        index.emplace(o->key, o);
        allocated += DiskFootprint(o->size);
    }

    // Makes the Dels of detached objects durable, then frees their space. Without mu.
    Status Drop(const std::vector<ObjectPtr>& victims, std::optional<DropReason> notify)
        MC_EXCLUDES(mu, listener_mu) {
        if (victims.empty()) return Status::Ok();
        std::vector<uint64_t> ids;
        for (const ObjectPtr& o : victims) ids.push_back(o->id);
        Status st = journal->Commit({}, std::move(ids));
        {
            MutexLock lock(mu);
            for (const ObjectPtr& o : victims) {
                if (!st.ok()) {
                    // Whether the Del reached the disk is unknown: the space stays unusable
                    // until a reopen sorts it out, and nobody waits for it.
                    pending_bytes -= o->allocated();
                    pending_index -= o->index_bytes;
                    o->freed = true;
                    continue;
                }
                o->del_durable = true;
                index_bytes -= o->index_bytes;
                pending_index -= o->index_bytes;
                ReleaseIfDoneLocked(*o);
            }
            cv.NotifyAll();
        }
        if (st.ok() && notify) {
            std::function<void(const DiskObjectInfo&, DropReason)> fn;
            {
                MutexLock lock(listener_mu);
                fn = listener;
            }
            if (fn) {
                for (const ObjectPtr& o : victims) fn(o->Info(), *notify);
            }
        }
        return st;
    }

    // Before and after the I/O of an operation of `priority` (see IoPriority).
    void Admit(IoPriority priority, uint64_t bytes) {
        if (priority == IoPriority::kPromotion) {
            promotion_slots->acquire();
        } else if (priority == IoPriority::kBackground) {
            Nanos wait = limiter->Reserve(bytes, clock->Now());
            if (wait.count() > 0) std::this_thread::sleep_for(wait);
            background_slots->acquire();
        }
    }
    void Done(IoPriority priority) {
        if (priority == IoPriority::kPromotion) promotion_slots->release();
        if (priority == IoPriority::kBackground) background_slots->release();
    }

    struct WritePlan {
        std::vector<IoRequest> reqs;
        AlignedBuffer bounce;  // padding of the last block, or all of an unaligned source
    };
    static WritePlan PlanWrite(const std::vector<Extent>& extents, std::span<const std::byte> data);
    Status ReadData(const Object& o, std::span<std::byte> out);
    // Reserves space for a write (evicting as needed). Releases mu while it waits or drops
    // victims; holds it again on return.
    // `twin_in_flight` null: a write of the same (key, generation) in flight is waited for
    // (its outcome decides this one's). Non-null: set instead, nothing reserved, for a caller
    // that holds reservations of its own and so must not wait for another writer's.
    Status Reserve(std::string_view key, Generation gen, uint64_t size,
                   std::vector<Extent>* extents, uint64_t* index_cost, bool* already_stored,
                   bool* twin_in_flight = nullptr) MC_REQUIRES(mu);
    std::vector<Status> WriteBatch(std::span<const DiskWrite> items, IoPriority priority,
                                   bool wait_for_twins);
};

// ---------------------------------------------------------------------------------------------
// Open

Status DiskStore::Impl::FormatDevice(uint64_t capacity) {
    std::random_device rd;
    uint64_t store_id =
        (uint64_t{rd()} << 32) ^ rd() ^
        static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    sb = disk_format::Superblock::ForCapacity(capacity, store_id);
    MC_RETURN_IF_ERROR(
        Journal::Format(device.get(), sb.journal_offset, sb.journal_size, sb.store_id));
    // The superblock goes last: a store without one is blank and formatted again.
    AlignedBuffer blocks(kDeviceBlockSize * disk_format::kSuperblockCopies);
    for (uint64_t i = 0; i < disk_format::kSuperblockCopies; ++i) {
        disk_format::EncodeSuperblock(sb, {blocks.data() + i * kDeviceBlockSize, kDeviceBlockSize});
    }
    MC_RETURN_IF_ERROR(device->Write(0, blocks.data(), blocks.size()));
    return device->Flush();
}

Status DiskStore::Impl::Init(uint64_t capacity) {
    AlignedBuffer blocks(kDeviceBlockSize * disk_format::kSuperblockCopies);
    MC_RETURN_IF_ERROR(device->Read(0, blocks.data(), blocks.size()));
    disk_format::Superblock copies[2];
    disk_format::SuperblockState states[2];
    for (int i = 0; i < 2; ++i) {
        states[i] = disk_format::DecodeSuperblock(
            {blocks.data() + i * kDeviceBlockSize, kDeviceBlockSize}, &copies[i]);
    }
    using S = disk_format::SuperblockState;
    for (int i = 0; i < 2; ++i) {
        if (states[i] == S::kNewerVersion) {
            return Status::InvalidArgument(
                "disk store format version " + std::to_string(copies[i].format_version) +
                " is newer than this build supports (" +
                std::to_string(disk_format::kFormatVersion) +
                "); run a newer mooncake-tier or point disk_dir elsewhere");
        }
    }
    if (states[0] == S::kValid || states[1] == S::kValid) {
        const int good = states[0] == S::kValid ? 0 : 1;
        sb = copies[good];
        const int other = 1 - good;
        if (states[other] != S::kValid) {
            // One copy is enough to open; the damaged one is rewritten from it, so the next
            // damage does not find the store with no good copy at all.
            spdlog::warn("disk store: superblock copy {} at offset {} is damaged; repairing it "
                         "from copy {}",
                         other, other * kDeviceBlockSize, good);
            recovery.damaged_superblocks += 1;
            Corrupted(CorruptionKind::kSuperblock);
            std::memcpy(blocks.data() + other * kDeviceBlockSize,
                        blocks.data() + good * kDeviceBlockSize, kDeviceBlockSize);
            Status st = device->Write(other * kDeviceBlockSize,
                                      blocks.data() + other * kDeviceBlockSize, kDeviceBlockSize);
            if (st.ok()) st = device->Flush();
            if (!st.ok()) spdlog::warn("disk store: repairing the superblock: {}", st.ToString());
        }
        if (sb.capacity != capacity) {
            return Status::InvalidArgument("the disk store was created with capacity " +
                                           FormatSize(sb.capacity) + ", not " +
                                           FormatSize(capacity) + "; resizing is not supported");
        }
        if (sb.capacity > device->size()) {
            return Status::Corruption("superblock names " + std::to_string(sb.capacity) +
                                      " bytes but the device has " +
                                      std::to_string(device->size()));
        }
    } else if (states[0] == S::kBlank && states[1] == S::kBlank) {
        MC_RETURN_IF_ERROR(FormatDevice(capacity));
    } else if (states[0] == S::kForeign || states[1] == S::kForeign) {
        return Status::InvalidArgument("not a mooncake-tier disk store (bad magic)");
    } else {
        return Status::Corruption("both superblock copies of the disk store are damaged");
    }
    allocator = std::make_unique<ExtentAllocator>(sb.data_offset, sb.data_size);
    return Recover();
}

Status DiskStore::Impl::Recover() {
    // Nothing else sees the store while it opens; held so the index's rules are checked here
    // as everywhere else.
    MutexLock lock(mu);
    Journal::Recovered rec;
    auto j = Journal::Recover(device.get(), sb.journal_offset, sb.journal_size, sb.store_id, &rec);
    if (!j.ok()) return j.status();
    journal = std::move(*j);
    index_budget = journal->index_budget();
    next_object_id = rec.max_object_id + 1;
    if (rec.reset) {
        spdlog::warn("disk store: the journal at offset {} has no usable checkpoint; starting "
                     "empty (every record it held is lost)",
                     sb.journal_offset);
        recovery.recovery_damaged_batches += 1;
        Corrupted(CorruptionKind::kJournal);
    }
    for (const Journal::Recovered::Damage& d : rec.damaged) {
        RecoveryWarn("disk store: {}; the records it held are lost", d.what);
        recovery.recovery_damaged_batches += 1;
        Corrupted(CorruptionKind::kJournal);
    }
    auto first_offset = [](const PutEntry& put) -> uint64_t {
        return put.extents.empty() ? 0 : put.extents.front().offset;
    };
    // A dropped record: one warning naming it, counted as recovery_dropped (and, when the
    // reason is damage rather than an interrupted write, as corruption of `kind`).
    auto dropped = [&](const PutEntry& put, std::string_view why,
                       std::optional<CorruptionKind> kind) {
        RecoveryWarn("disk store: recovery drops record {} ({} generation {}, {} bytes at "
                     "offset {}): {}",
                     put.object_id, QuoteKey(put.key), put.generation, put.size,
                     first_offset(put), why);
        if (!kind) return;
        if (*kind == CorruptionKind::kChecksum) recovery.recovery_checksum_failures += 1;
        if (*kind == CorruptionKind::kRecord) recovery.recovery_bad_records += 1;
        Corrupted(*kind);
    };

    std::vector<uint64_t> drop;
    // 1. Structural checks, and one entry per key: the newest generation (then the newest id).
    std::unordered_map<std::string_view, const PutEntry*> best;
    for (auto& [id, put] : rec.puts) {
        uint64_t total = 0;
        bool aligned = true;
        for (const Extent& e : put.extents) {
            total += e.length;
            aligned = aligned && IsAligned(e.offset) && IsAligned(e.length) && e.length > 0;
        }
        if (!ValidateKey(put.key).ok() || put.generation == kNoGeneration || !aligned ||
            total != AlignUp(put.size)) {
            dropped(put, "it names an impossible key, generation or extents",
                    CorruptionKind::kRecord);
            drop.push_back(id);
            continue;
        }
        auto [it, inserted] = best.emplace(put.key, &put);
        if (!inserted) {
            const PutEntry* other = it->second;
            bool newer = put.generation > other->generation ||
                         (put.generation == other->generation && put.object_id > other->object_id);
            // Left behind by a replacement whose Del did not reach the disk: not damage.
            dropped(newer ? *other : put, "a newer record of the key replaces it", std::nullopt);
            drop.push_back(newer ? other->object_id : id);
            if (newer) it->second = &put;
        }
    }
    // 2. Claim space, newest first: of two overlapping entries the older lost its bytes.
    std::vector<const PutEntry*> keep;
    for (auto& [key, put] : best) keep.push_back(put);
    std::sort(keep.begin(), keep.end(),
              [](const PutEntry* a, const PutEntry* b) { return a->object_id > b->object_id; });
    std::vector<const PutEntry*> claimed;
    for (const PutEntry* put : keep) {
        size_t n = 0;
        while (n < put->extents.size() && allocator->Claim(put->extents[n])) ++n;
        if (n < put->extents.size()) {
            for (size_t i = 0; i < n; ++i) allocator->Free(put->extents[i]);
            dropped(*put, "its extents overlap a newer record's", CorruptionKind::kRecord);
            drop.push_back(put->object_id);
            continue;
        }
        claimed.push_back(put);
    }
    // 3. The newest commit's objects may have lost their bytes to a power cut: verify them.
    std::vector<const PutEntry*> live;
    for (const PutEntry* put : claimed) {
        if (put->commit_seq == rec.last_commit_seq && put->size > 0) {
            Object probe;
            probe.size = put->size;
            probe.hash = put->data_hash;
            probe.extents = put->extents;
            std::vector<std::byte> buf(put->size);
            Status st = ReadData(probe, buf);
            if (!st.ok() || disk_format::Hash(buf) != put->data_hash) {
                for (const Extent& e : put->extents) allocator->Free(e);
                // The newest commit: its bytes may not have reached the disk before a power
                // cut. Still a checksum failure the operator should see.
                dropped(*put,
                        st.ok() ? "its bytes fail their checksum (newest commit: interrupted "
                                  "write or damage)"
                                : "its bytes cannot be read: " + st.ToString(),
                        CorruptionKind::kChecksum);
                drop.push_back(put->object_id);
                continue;
            }
        }
        live.push_back(put);
    }
    std::sort(live.begin(), live.end(),
              [](const PutEntry* a, const PutEntry* b) { return a->object_id < b->object_id; });
    for (const PutEntry* put : live) {
        auto o = std::make_shared<Object>();
        o->key = put->key;
        o->gen = put->generation;
        o->size = put->size;
        o->hash = put->data_hash;
        o->id = put->object_id;
        o->extents = put->extents;
        o->index_bytes = disk_format::EncodedPutSize(o->key.size(), o->extents.size());
        index_bytes += o->index_bytes;
        InsertLocked(o);
    }
    recovery.recovered_objects = live.size();
    recovery.recovery_dropped = drop.size();
    recovery.recovery_skipped_batches = rec.skipped_batches;
    if (unlogged_this_open > 0) {
        spdlog::warn("disk store: {} more recovery warnings not shown", unlogged_this_open);
    }
    if (!drop.empty() || !rec.damaged.empty()) {
        spdlog::warn("disk store: recovery kept {} records, dropped {}, lost {} journal batches",
                     live.size(), drop.size(), rec.damaged.size());
    }
    if (!drop.empty()) MC_RETURN_IF_ERROR(journal->Commit({}, std::move(drop)));
    return Status::Ok();
}

DiskStore::DiskStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DiskStore::~DiskStore() = default;

Result<std::unique_ptr<DiskStore>> DiskStore::OpenOnDevice(std::unique_ptr<Device> device,
                                                           const DiskStoreOptions& options) {
    if (!device) return Status::InvalidArgument("no device");
    uint64_t capacity = options.capacity != 0 ? options.capacity : device->size() / kMiB * kMiB;
    if (capacity % kMiB != 0 || capacity < disk_format::kMinCapacity) {
        return Status::InvalidArgument("disk store capacity " + std::to_string(capacity) +
                                       " must be a multiple of 1 MiB and at least 4 MiB");
    }
    if (capacity > device->size()) {
        return Status::InvalidArgument("disk store capacity " + FormatSize(capacity) +
                                       " exceeds the device (" + FormatSize(device->size()) + ")");
    }
    if (options.queue_depth < 1 || options.queue_depth > 1024) {
        return Status::InvalidArgument("disk queue depth " + std::to_string(options.queue_depth) +
                                       " is out of range 1..1024");
    }
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->device = std::move(device);
    impl->clock = options.clock ? options.clock : &impl->steady_clock;
    impl->limiter = std::make_unique<RateLimiter>(options.background_bytes_per_sec);
    impl->background_slots =
        std::make_unique<std::counting_semaphore<>>(BackgroundSlots(options.queue_depth));
    impl->promotion_slots =
        std::make_unique<std::counting_semaphore<>>(BackgroundSlots(options.queue_depth));
    MC_RETURN_IF_ERROR(impl->Init(capacity));
    return std::unique_ptr<DiskStore>(new DiskStore(std::move(impl)));
}

Result<std::unique_ptr<DiskStore>> DiskStore::Open(const DiskStoreOptions& options) {
    const std::string& dir = options.dir;
    if (dir.empty()) return Status::InvalidArgument("disk_dir is empty");
    if (options.capacity % kMiB != 0 || options.capacity < disk_format::kMinCapacity) {
        return Status::InvalidArgument("disk store capacity " + std::to_string(options.capacity) +
                                       " must be a multiple of 1 MiB and at least 4 MiB");
    }
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
        if (errno != ENOENT || mkdir(dir.c_str(), 0755) != 0) {
            return Status::InvalidArgument(
                "disk_dir " + dir + " does not exist and cannot be created: " + ErrnoText(errno));
        }
    } else if (!S_ISDIR(st.st_mode)) {
        return Status::InvalidArgument("disk_dir " + dir + " is not a directory");
    }
    if (access(dir.c_str(), W_OK | X_OK) != 0) {
        return Status::InvalidArgument("disk_dir " + dir + " is not writable: " + ErrnoText(errno));
    }
    // Refuse a directory that holds anything but our own files.
    if (DIR* d = opendir(dir.c_str())) {
        std::string foreign;
        while (dirent* e = readdir(d)) {
            std::string_view name = e->d_name;
            if (name == "." || name == ".." || name == kImageFile || name == kLockFile ||
                name == "lost+found") {
                continue;
            }
            foreign = name;
            break;
        }
        closedir(d);
        if (!foreign.empty()) {
            return Status::InvalidArgument(
                "disk_dir " + dir + " holds files that are not a mooncake-tier store (e.g. '" +
                foreign + "'); use an empty directory");
        }
    } else {
        return Status::InvalidArgument("cannot list disk_dir " + dir + ": " + ErrnoText(errno));
    }

    const std::string lock_path = dir + "/" + kLockFile;
    int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0) return Status::IoError("open " + lock_path + ": " + ErrnoText(errno));
    if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        char pid[32] = {};
        ssize_t n = pread(lock_fd, pid, sizeof pid - 1, 0);
        close(lock_fd);
        if (err == EWOULDBLOCK) {
            std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "unknown";
            while (!holder.empty() && (holder.back() == '\n')) holder.pop_back();
            return Status::Busy("disk_dir " + dir + " is in use by another disk store (pid " +
                                holder + ")");
        }
        return Status::IoError("flock " + lock_path + ": " + ErrnoText(err));
    }
    std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(lock_fd, 0) != 0 || pwrite(lock_fd, pid.data(), pid.size(), 0) < 0) {
        // The lock itself holds; the pid is only for messages.
    }

    const std::string image = dir + "/" + kImageFile;
    auto fail = [&](Status s) -> Result<std::unique_ptr<DiskStore>> {
        close(lock_fd);
        return s;
    };
    struct stat ist {};
    bool exists = stat(image.c_str(), &ist) == 0 && ist.st_size > 0;
    if (exists && static_cast<uint64_t>(ist.st_size) != options.capacity) {
        return fail(Status::InvalidArgument(
            image + " holds a store of " + FormatSize(static_cast<uint64_t>(ist.st_size)) +
            ", not " + FormatSize(options.capacity) + "; resizing is not supported"));
    }
    if (!exists) {
        struct statvfs vfs {};
        if (statvfs(dir.c_str(), &vfs) == 0) {
            uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
            if (options.capacity > avail) {
                return fail(Status::InvalidArgument("disk store capacity " +
                                                    FormatSize(options.capacity) +
                                                    " exceeds the free space of " + dir + " (" +
                                                    std::to_string(avail >> 20) + " MiB)"));
            }
        }
    }
    auto device = OpenAioDevice(image, options.capacity, options.queue_depth);
    if (!device.ok()) return fail(device.status());
    auto store = OpenOnDevice(std::move(*device), options);
    if (!store.ok()) return fail(store.status());
    (*store)->impl_->lock_fd = lock_fd;
    return store;
}

// ---------------------------------------------------------------------------------------------
// Data I/O

DiskStore::Impl::WritePlan DiskStore::Impl::PlanWrite(const std::vector<Extent>& extents,
                                                      std::span<const std::byte> data) {
    WritePlan plan;
    if (data.empty()) return plan;
    const uint64_t size = data.size();
    if (IsAligned(data.data())) {
        // Whole blocks straight from the caller; only the last partial block is copied.
        const uint64_t full = size / kDeviceBlockSize * kDeviceBlockSize;
        if (full < size) {
            plan.bounce = AlignedBuffer(kDeviceBlockSize);
            std::memset(plan.bounce.data(), 0, kDeviceBlockSize);
            std::memcpy(plan.bounce.data(), data.data() + full, size - full);
        }
        plan.reqs = PlanIo(extents, full, const_cast<std::byte*>(data.data()), plan.bounce.data());
    } else {
        plan.bounce = AlignedBuffer(AlignUp(size));
        std::memcpy(plan.bounce.data(), data.data(), size);
        std::memset(plan.bounce.data() + size, 0, AlignUp(size) - size);
        plan.reqs = PlanIo(extents, AlignUp(size), plan.bounce.data(), nullptr);
    }
    return plan;
}

Status DiskStore::Impl::ReadData(const Object& o, std::span<std::byte> out) {
    if (o.size == 0) return Status::Ok();
    std::vector<IoRequest> reqs;
    AlignedBuffer bounce;
    uint64_t full = 0;
    if (IsAligned(out.data())) {
        full = o.size / kDeviceBlockSize * kDeviceBlockSize;
        if (full < o.size) bounce = AlignedBuffer(kDeviceBlockSize);
        reqs = PlanIo(o.extents, full, out.data(), bounce.data());
    } else {
        bounce = AlignedBuffer(AlignUp(o.size));
        reqs = PlanIo(o.extents, 0, nullptr, bounce.data());
    }
    MC_RETURN_IF_ERROR(device->ReadV(reqs));
    if (full < o.size) std::memcpy(out.data() + full, bounce.data(), o.size - full);
    return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Space

Status DiskStore::Impl::Reserve(std::string_view key, Generation gen, uint64_t size,
                                std::vector<Extent>* extents, uint64_t* index_cost,
                                bool* already_stored, bool* twin_in_flight) {
    const uint64_t need = AlignUp(size);
    const uint64_t min_index = disk_format::EncodedPutSize(key.size(), size > 0 ? 1 : 0);
    for (;;) {
        if (auto it = index.find(key); it != index.end()) {
            if (it->second->gen == gen) {
                *already_stored = true;
                return Status::Ok();
            }
            if (it->second->gen > gen) {
                return Status::StaleGeneration("disk store holds " +
                                               Describe(key, it->second->gen) + ", newer than " +
                                               std::to_string(gen));
            }
        }
        bool wait_for_twin = false;
        auto [first, last] = writing.equal_range(key);
        for (auto w = first; w != last; ++w) {
            if (w->second == gen) wait_for_twin = true;
            if (w->second > gen) {
                return Status::StaleGeneration("a write of " + Describe(key, w->second) +
                                               " is in flight");
            }
        }
        if (wait_for_twin && twin_in_flight != nullptr) {
            *twin_in_flight = true;
            return Status::Ok();
        }
        if (wait_for_twin) {  // the same write is in flight: its outcome decides ours
            cv.Wait(mu);
            continue;
        }

        if (index_bytes + min_index <= index_budget) {
            if (auto got = allocator->Allocate(size, disk_format::kMaxExtentsPerObject)) {
                uint64_t cost = disk_format::EncodedPutSize(key.size(), got->size());
                if (index_bytes + cost <= index_budget) {
                    *extents = std::move(*got);
                    *index_cost = cost;
                    index_bytes += cost;
                    return Status::Ok();
                }
                for (const Extent& e : *got) allocator->Free(e);
            }
        }

        // Not enough room: count what is coming back anyway, then pick LRU victims.
        const uint64_t free_soon = allocator->free_bytes() + pending_bytes;
        uint64_t bytes_short = need > free_soon ? need - free_soon : 0;
        const uint64_t cost = disk_format::EncodedPutSize(key.size(), 1);
        const uint64_t index_soon = index_bytes - pending_index;
        uint64_t index_short =
            index_soon + cost > index_budget ? index_soon + cost - index_budget : 0;
        if (bytes_short == 0 && index_short == 0) {
            if (pending_bytes > 0 || pending_index > 0) {
                cv.Wait(mu);  // a Del in flight or a reader will give space back
                continue;
            }
            bytes_short = kDeviceBlockSize;  // free but too fragmented: evict one more
        }
        std::vector<ObjectPtr> victims;
        uint64_t got_bytes = 0, got_index = 0;
        for (Object* o : lru) {
            if (got_bytes >= bytes_short && got_index >= index_short) break;
            if (o->pins > 0) continue;
            victims.push_back(index.find(std::string_view(o->key))->second);
            got_bytes += o->allocated();
            got_index += o->index_bytes;
        }
        if (got_bytes < bytes_short || got_index < index_short) {
            return Status::NoSpace("disk store cannot make room for " + std::to_string(size) +
                                   " bytes: " + std::to_string(allocator->free_bytes()) +
                                   " free of " + std::to_string(allocator->size()) +
                                   ", the rest pinned or in flight");
        }
        for (const ObjectPtr& v : victims) DetachLocked(*v);
        mu.unlock();
        evictions.fetch_add(victims.size(), std::memory_order_relaxed);
        Status st = Drop(victims, DropReason::kEvicted);
        mu.lock();
        MC_RETURN_IF_ERROR(st);
    }
}

// ---------------------------------------------------------------------------------------------
// Operations

Status DiskStore::Write(std::string_view key, Generation gen, std::span<const std::byte> data,
                        IoPriority priority) {
    const DiskWrite item{key, gen, data};
    return impl_->WriteBatch({&item, 1}, priority, /*wait_for_twins=*/true).front();
}

std::vector<Status> DiskStore::WriteMany(std::span<const DiskWrite> items, IoPriority priority) {
    // One item holds no other reservation while it waits: it may wait as Write does.
    return impl_->WriteBatch(items, priority, /*wait_for_twins=*/items.size() == 1);
}

std::vector<Status> DiskStore::Impl::WriteBatch(std::span<const DiskWrite> items,
                                                IoPriority priority, bool wait_for_twins) {
    std::vector<Status> out(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
        const DiskWrite& w = items[i];
        if (Status st = ValidateKey(w.key); !st.ok()) {
            out[i] = st;
        } else if (w.generation == kNoGeneration) {
            out[i] = Status::InvalidArgument("generation 0 names no incarnation");
        } else if (AlignUp(w.data.size()) > DataSize()) {
            out[i] = Status::NoSpace("object of " + std::to_string(w.data.size()) +
                                     " bytes is larger than the disk store (" +
                                     std::to_string(DataSize()) + " bytes)");
        } else if (disk_format::EncodedPutSize(w.key.size(), 1) > index_budget) {
            out[i] = Status::NoSpace("disk store index is too small for a key of this size");
        }
    }

    // Space for each, in order. A write of the same (key, generation) in flight elsewhere
    // (or earlier in this batch) is not waited for while this batch holds reservations: two
    // batches could each wait for the other. Such an item is written alone afterwards, and so
    // is one refused for room while earlier items of the batch hold some (space in flight
    // cannot be evicted; alone, after the batch, it is as a single Write would find it).
    struct Reserved {
        size_t item;
        std::vector<Extent> extents;
        uint64_t index_cost = 0;
        uint64_t object_id = 0;
        uint64_t hash = 0;  // of the data, taken once the lock is released
    };
    std::vector<Reserved> reserved;
    std::vector<size_t> twins;  // and those refused room while the batch held some
    {
        MutexLock lock(mu);
        for (size_t i = 0; i < items.size(); ++i) {
            if (!out[i].ok()) continue;
            const DiskWrite& w = items[i];
            Reserved r{i, {}, 0, 0, 0};
            bool already = false, twin = false;
            out[i] = Reserve(w.key, w.generation, w.data.size(), &r.extents, &r.index_cost,
                             &already, wait_for_twins ? nullptr : &twin);
            if (out[i].Is(StatusCode::kNoSpace) && !reserved.empty()) twin = true;
            if (twin) {
                twins.push_back(i);
                continue;
            }
            if (!out[i].ok() || already) continue;
            r.object_id = next_object_id++;
            writing.emplace(std::string(w.key), w.generation);
            reserved.push_back(std::move(r));
        }
    }

    // Data and Puts go to the journal together, one commit for the batch: it writes the data
    // either alongside its batch (one round trip when idle) or at once, overlapping the commit
    // in flight.
    std::vector<WritePlan> plans;
    plans.reserve(reserved.size());  // the requests point into the plans' bounce buffers
    std::vector<IoRequest> reqs;
    std::vector<PutEntry> puts;
    uint64_t bytes = 0;
    for (Reserved& r : reserved) {
        const DiskWrite& w = items[r.item];
        r.hash = disk_format::Hash(w.data);
        plans.push_back(PlanWrite(r.extents, w.data));
        reqs.insert(reqs.end(), plans.back().reqs.begin(), plans.back().reqs.end());
        PutEntry put;
        put.object_id = r.object_id;
        put.generation = w.generation;
        put.size = w.data.size();
        put.data_hash = r.hash;
        put.extents = r.extents;
        put.key = std::string(w.key);
        puts.push_back(std::move(put));
        bytes += w.data.size();
    }
    Status st;
    bool data_failed = false;
    if (!reserved.empty()) {
        Admit(priority, bytes);
        st = journal->Commit(std::move(puts), {}, reqs, &data_failed);
        Done(priority);
    }

    std::vector<ObjectPtr> to_drop;
    std::vector<size_t> dropping;  // the items whose write replaced or lost to a record
    {
        MutexLock lock(mu);
        for (Reserved& r : reserved) {
            const DiskWrite& w = items[r.item];
            auto [first, last] = writing.equal_range(w.key);
            for (auto it = first; it != last; ++it) {
                if (it->second == w.generation) {
                    writing.erase(it);
                    break;
                }
            }
            if (!st.ok()) {
                out[r.item] = st;
                // The Puts may be on disk unless only the data write failed: then the space
                // is free again; otherwise it is left alone.
                if (data_failed) {
                    for (const Extent& e : r.extents) allocator->Free(e);
                    index_bytes -= r.index_cost;
                }
                continue;
            }
            writes.fetch_add(1, std::memory_order_relaxed);  // written, if perhaps stale
            write_bytes.fetch_add(w.data.size(), std::memory_order_relaxed);
            auto o = std::make_shared<Object>();
            o->key = std::string(w.key);
            o->gen = w.generation;
            o->size = w.data.size();
            o->hash = r.hash;
            o->id = r.object_id;
            o->extents = std::move(r.extents);
            o->index_bytes = r.index_cost;
            auto it = index.find(w.key);
            if (it != index.end() && it->second->gen > w.generation) {
                // A newer generation landed while this one was written: this one is stale.
                DetachLocked(*o);
                to_drop.push_back(o);
                dropping.push_back(r.item);
                out[r.item] =
                    Status::StaleGeneration("disk store holds " + Describe(w.key, it->second->gen) +
                                            ", newer than " + std::to_string(w.generation));
                continue;
            }
            if (it != index.end()) {
                ObjectPtr old = it->second;
                DetachLocked(*old);
                to_drop.push_back(old);
                dropping.push_back(r.item);
            }
            InsertLocked(o);
        }
        cv.NotifyAll();
    }
    if (!to_drop.empty()) {
        Status dropped = Drop(to_drop, std::nullopt);
        if (!dropped.ok()) {
            for (size_t i : dropping) {
                if (out[i].ok()) out[i] = dropped;
            }
        }
    }
    // Alone now, holding nothing: a twin's outcome decides each of these (or the room left).
    for (size_t i : twins) {
        out[i] = WriteBatch(items.subspan(i, 1), priority, /*wait_for_twins=*/true).front();
    }
    return out;
}

Status DiskStore::Read(std::string_view key, Generation gen, std::span<std::byte> out,
                       IoPriority priority) {
    Impl& s = *impl_;
    ObjectPtr o;
    {
        MutexLock lock(s.mu);
        auto it = s.index.find(key);
        if (it == s.index.end()) {
            return s.MissingLocked(key, gen,
                                   Status::NotFound("disk store has no " + QuoteKey(key)));
        }
        o = it->second;
        if (o->gen != gen) {
            return s.MissingLocked(
                key, gen,
                Status::StaleGeneration("disk store holds " + Describe(key, o->gen) +
                                        ", not generation " + std::to_string(gen)));
        }
        if (out.size() != o->size) {
            return Status::InvalidArgument("read of " + Describe(key, gen) + " into " +
                                           std::to_string(out.size()) + " bytes; it has " +
                                           std::to_string(o->size));
        }
        ++o->readers;
        s.lru.splice(s.lru.end(), s.lru, o->lru);
    }
    s.Admit(priority, o->size);
    Status st = s.ReadData(*o, out);
    s.Done(priority);
    bool corrupt = st.ok() && disk_format::Hash(out) != o->hash;
    std::vector<ObjectPtr> victims;
    {
        MutexLock lock(s.mu);
        --o->readers;
        s.ReleaseIfDoneLocked(*o);
        if (corrupt && o->in_index) {
            s.DetachLocked(*o);
            victims.push_back(o);
        }
        if (corrupt) s.RememberCorruptLocked(o->key, gen);
    }
    if (!st.ok()) return st;
    if (corrupt) {
        spdlog::warn("disk store: {} ({} bytes at offset {}) fails its checksum; the copy is "
                     "dropped",
                     Describe(key, gen), o->size,
                     o->extents.empty() ? 0 : o->extents.front().offset);
        s.corruptions.fetch_add(1, std::memory_order_relaxed);
        s.Corrupted(CorruptionKind::kChecksum);
        Status dropped = s.Drop(victims, DropReason::kCorrupt);
        (void)dropped;  // the object is out of the index either way
        return Status::Corruption(Describe(key, gen) +
                                  " is corrupt on disk (checksum mismatch); the copy was dropped");
    }
    s.reads.fetch_add(1, std::memory_order_relaxed);
    s.read_bytes.fetch_add(o->size, std::memory_order_relaxed);
    return Status::Ok();
}

Result<uint64_t> DiskStore::SizeOf(std::string_view key, Generation gen) const {
    MutexLock lock(impl_->mu);
    auto it = impl_->index.find(key);
    if (it == impl_->index.end()) {
        return impl_->MissingLocked(key, gen,
                                    Status::NotFound("disk store has no " + QuoteKey(key)));
    }
    if (it->second->gen != gen) {
        return impl_->MissingLocked(
            key, gen,
            Status::StaleGeneration("disk store holds " + Describe(key, it->second->gen) +
                                    ", not generation " + std::to_string(gen)));
    }
    return it->second->size;
}

Status DiskStore::Remove(std::string_view key, Generation gen) {
    const DiskRemoval item{key, gen};
    return RemoveMany(std::span(&item, 1)).front();
}

std::vector<Status> DiskStore::RemoveMany(std::span<const DiskRemoval> items) {
    Impl& s = *impl_;
    std::vector<Status> out(items.size());
    std::vector<ObjectPtr> victims;
    std::vector<size_t> removed;  // victims[j] is items[removed[j]]
    {
        MutexLock lock(s.mu);
        for (size_t i = 0; i < items.size(); ++i) {
            const DiskRemoval& item = items[i];
            auto it = s.index.find(item.key);
            if (it == s.index.end()) {
                out[i] = Status::NotFound("disk store has no " + QuoteKey(item.key));
                continue;
            }
            if (it->second->gen != item.generation) {
                out[i] = Status::StaleGeneration(
                    "disk store holds " + Describe(item.key, it->second->gen) +
                    ", not generation " + std::to_string(item.generation));
                continue;
            }
            victims.push_back(it->second);
            s.DetachLocked(*victims.back());
            removed.push_back(i);
        }
    }
    s.removes.fetch_add(victims.size(), std::memory_order_relaxed);
    const Status dropped = s.Drop(victims, std::nullopt);
    for (size_t i : removed) out[i] = dropped;
    return out;
}

void DiskStore::Pin(std::string_view key, Generation gen) {
    MutexLock lock(impl_->mu);
    auto it = impl_->index.find(key);
    if (it != impl_->index.end() && it->second->gen == gen) ++it->second->pins;
}

void DiskStore::Unpin(std::string_view key, Generation gen) {
    MutexLock lock(impl_->mu);
    auto it = impl_->index.find(key);
    if (it != impl_->index.end() && it->second->gen == gen && it->second->pins > 0) {
        --it->second->pins;
    }
}

std::vector<DiskObjectInfo> DiskStore::List() const {
    MutexLock lock(impl_->mu);
    std::vector<DiskObjectInfo> out;
    out.reserve(impl_->lru.size());
    for (const Object* o : impl_->lru) out.push_back(o->Info());
    return out;
}

void DiskStore::SetDropListener(std::function<void(const DiskObjectInfo&, DropReason)> listener) {
    MutexLock lock(impl_->listener_mu);
    impl_->listener = std::move(listener);
}

void DiskStore::SetBackgroundBytesPerSec(uint64_t bytes_per_sec) {
    impl_->limiter->SetRate(bytes_per_sec);
}

ScrubReport DiskStore::Scrub() {
    ScrubReport report;
    AlignedBuffer buffer;
    for (const DiskObjectInfo& info : List()) {
        if (buffer.size() < AlignUp(info.size)) buffer = AlignedBuffer(AlignUp(info.size));
        Status st = Read(info.key, info.generation, buffer.span().first(info.size),
                         IoPriority::kBackground);
        if (st.Is(StatusCode::kNotFound) || st.Is(StatusCode::kStaleGeneration)) continue;
        ++report.checked;
        report.checked_bytes += info.size;
        if (st.Is(StatusCode::kCorruption)) {
            report.corrupt.push_back(info);  // Read logged, counted and dropped it
        } else if (!st.ok()) {
            ++report.io_errors;
            spdlog::warn("disk store: scrub cannot read {}: {}",
                         Describe(info.key, info.generation), st.ToString());
        }
    }
    return report;
}

uint64_t DiskStore::allocated_bytes() const {
    MutexLock lock(impl_->mu);
    return impl_->allocated;
}

uint64_t DiskStore::capacity() const { return impl_->DataSize(); }

size_t DiskStore::background_slots() const {
    return static_cast<size_t>(BackgroundSlots(impl_->options.queue_depth));
}

uint64_t DiskStore::used() const {
    MutexLock lock(impl_->mu);
    return impl_->allocator->size() - impl_->allocator->free_bytes();
}

size_t DiskStore::object_count() const {
    MutexLock lock(impl_->mu);
    return impl_->index.size();
}

DiskStoreStats DiskStore::stats() const {
    const Impl& s = *impl_;
    DiskStoreStats st = s.recovery;
    st.reads = s.reads.load();
    st.read_bytes = s.read_bytes.load();
    st.writes = s.writes.load();
    st.write_bytes = s.write_bytes.load();
    st.removes = s.removes.load();
    st.evictions = s.evictions.load();
    st.corruptions = s.corruptions.load();
    st.journal_commits = s.journal->commits();
    st.journal_checkpoints = s.journal->checkpoints();
    return st;
}

}  // namespace mooncake
