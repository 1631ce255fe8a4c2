// Segment: a node's DRAM segment and the record of which (key, generation) each range holds.
//
// The master allocates ranges; the node only sees the bytes arrive. So the record is filled by
// writes (a write names its key and generation) and cleared when the master says a range was
// released (heartbeat) -- and a read must name the (key, generation) the range holds, or it is
// refused. That is what keeps a reader from ever getting another object's bytes when a range
// is reused.
//
// A range that is written while it overlaps older records replaces them: the master hands a
// range out again only after freeing it, and its release notice may lag the new write. The
// release of the old occupant then finds the range renamed and leaves it alone.
//
// Locking: each record has its own reader/writer lock. A ReadLease holds it shared while the
// caller copies or sends the bytes; a write into a range first takes every overlapped record's
// lock exclusively (waiting for their readers to finish), marks them dead, and only then lets
// bytes land -- so a reused range never tears a concurrent read. The table itself is guarded
// by one mutex held only for lookups and swaps, never while bytes move.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/base/mutex.h"
#include "core/node/node_seams.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace mooncake {

// The NodeWorker reaches it through core/node/node_seams.h (NodeSegment).
class Segment final : public NodeSegment {
    struct Record;

public:
    // Maps `capacity` bytes of anonymous memory (page aligned, so 4 KiB aligned; huge pages
    // where the kernel allows). With `prefault`, a background thread then faults every page in,
    // so the first Put into a range does not pay for zeroing fresh pages (the segment is
    // dedicated DRAM, committed either way once the cache fills). Capacity 0: empty segment.
    static Result<std::unique_ptr<Segment>> Create(uint64_t capacity, bool prefault = true);
    ~Segment();
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;

    uint64_t capacity() const { return capacity_; }
    uint64_t bytes_held() const { return bytes_held_.load(std::memory_order_relaxed); }
    size_t records() const;

    // Exclusive access to a range being written. Commit() makes it readable; destroying an
    // uncommitted lease forgets the range (a failed write leaves nothing readable).
    class WriteLease {
    public:
        WriteLease(WriteLease&&) noexcept;
        WriteLease& operator=(WriteLease&&) = delete;
        ~WriteLease();
        std::byte* data() const { return data_; }
        uint64_t size() const { return size_; }
        void Commit();

    private:
        friend class Segment;
        WriteLease(Segment* segment, std::shared_ptr<Record> record, std::byte* data,
                   uint64_t size);
        Segment* segment_;
        std::shared_ptr<Record> record_;
        // Held for the lease's life, beyond any one scope: a std owner over the annotated
        // mutex, since the analysis cannot follow a lock an object carries out of a function.
        std::unique_lock<SharedMutex> lock_;
        std::byte* data_;
        uint64_t size_;
        bool committed_ = false;
    };

    // Shared access to committed bytes of one (key, generation).
    class ReadLease {
    public:
        ReadLease(ReadLease&&) noexcept = default;
        const std::byte* data() const { return data_; }
        uint64_t size() const { return size_; }

    private:
        friend class Segment;
        ReadLease(std::shared_ptr<Record> record, const std::byte* data, uint64_t size);
        std::shared_ptr<Record> record_;
        std::shared_lock<SharedMutex> lock_;  // as WriteLease's
        const std::byte* data_;
        uint64_t size_;
    };

    // Claims [offset, offset + length) for (key, generation), replacing overlapping records
    // once their readers are done. InvalidArgument if the range is outside the segment.
    Result<WriteLease> BeginWrite(std::string_view key, Generation generation, uint64_t offset,
                                  uint64_t length);
    // [offset, offset + length) must lie inside one committed record of (key, generation).
    // NotFound if no record covers it (released, never written); StaleGeneration if the range
    // now holds another incarnation of the key; NotFound naming the difference otherwise.
    Result<ReadLease> BeginRead(std::string_view key, Generation generation, uint64_t offset,
                                uint64_t length);

    // Copies in and out (local writes and reads: standalone, promotions to self).
    Status Write(std::string_view key, Generation generation, uint64_t offset,
                 std::span<const std::byte> data) override;
    Status Read(std::string_view key, Generation generation, uint64_t offset,
                std::span<std::byte> out);

    // Forgets the record at `offset` if it still holds (key, generation); otherwise nothing.
    void Release(std::string_view key, Generation generation, uint64_t offset) override;
    // Forgets every record (the master no longer knows this node's ranges: it restarted or
    // expired the node).
    void ReleaseAll();

    // The committed records, for re-registering them with a master that forgot them.
    // Records being written right now are left out (they are not readable yet).
    using HeldRange = mooncake::HeldRange;
    std::vector<HeldRange> Held() const override;
    // BeginRead, then `use` on the bytes while the lease holds them.
    Status ReadRange(std::string_view key, Generation generation, uint64_t offset,
                     uint64_t length,
                     const std::function<Status(std::span<const std::byte>)>& use) override;

private:
    Segment(std::byte* base, uint64_t capacity) : base_(base), capacity_(capacity) {}
    void Prefault();  // runs on prefault_thread_
    // Drops `record` from the table if still there.
    void Forget(const std::shared_ptr<Record>& record) MC_EXCLUDES(mu_);
    static void Kill(const std::shared_ptr<Record>& record);

    std::byte* const base_;
    const uint64_t capacity_;
    std::atomic<uint64_t> bytes_held_{0};
    std::atomic<bool> closing_{false};
    std::thread prefault_thread_;
    mutable Mutex mu_;
    std::map<uint64_t, std::shared_ptr<Record>> records_ MC_GUARDED_BY(mu_);  // by offset
};

}  // namespace mooncake
