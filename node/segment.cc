#include "node/segment.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace mooncake {

struct Segment::Record {
    Record(std::string_view k, Generation g, uint64_t o, uint64_t l)
        : key(k), generation(g), offset(o), length(l) {}
    const std::string key;
    const Generation generation;
    const uint64_t offset;
    const uint64_t length;
    SharedMutex mu;
    bool alive MC_GUARDED_BY(mu) = true;       // false once replaced, released or abandoned
    bool committed MC_GUARDED_BY(mu) = false;  // the bytes are all there

    // For the holder of a lease, which keeps `mu` locked across calls where the analysis
    // cannot see it held.
    bool ReadableUnderLease() const MC_NO_THREAD_SAFETY_ANALYSIS { return alive && committed; }
    void CommitUnderLease() MC_NO_THREAD_SAFETY_ANALYSIS { committed = true; }
};

Result<std::unique_ptr<Segment>> Segment::Create(uint64_t capacity, bool prefault) {
    if (capacity == 0) return std::unique_ptr<Segment>(new Segment(nullptr, 0));
    void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        return Status::NoSpace("cannot map a DRAM segment of " + FormatSize(capacity) + ": " +
                               std::strerror(errno));
    }
    // Fewer TLB misses when bytes stream through the segment; advisory, so errors are ignored.
    (void)::madvise(p, capacity, MADV_HUGEPAGE);
    std::unique_ptr<Segment> segment(new Segment(static_cast<std::byte*>(p), capacity));
    if (prefault) segment->prefault_thread_ = std::thread([s = segment.get()] { s->Prefault(); });
    return segment;
}

void Segment::Prefault() {
#ifdef MADV_POPULATE_WRITE
    // Faults pages in without changing their contents, so it may run while ranges are being
    // written. In chunks, so a shutdown does not wait for a whole large segment.
    constexpr uint64_t kChunk = 64ull << 20;
    for (uint64_t off = 0; off < capacity_ && !closing_.load(); off += kChunk) {
        if (::madvise(base_ + off, std::min(kChunk, capacity_ - off), MADV_POPULATE_WRITE) != 0) {
            return;  // older kernel or no memory to spare: pages fault in on first use instead
        }
    }
#endif
}

Segment::~Segment() {
    closing_.store(true);
    if (prefault_thread_.joinable()) prefault_thread_.join();
    if (base_ != nullptr) ::munmap(base_, capacity_);
}

size_t Segment::records() const {
    MutexLock lock(mu_);
    return records_.size();
}

// ---------------- leases ----------------

Segment::WriteLease::WriteLease(Segment* segment, std::shared_ptr<Record> record, std::byte* data,
                                uint64_t size)
    : segment_(segment),
      record_(std::move(record)),
      lock_(record_->mu),
      data_(data),
      size_(size) {}

Segment::WriteLease::WriteLease(WriteLease&& other) noexcept
    : segment_(other.segment_),
      record_(std::move(other.record_)),
      lock_(std::move(other.lock_)),
      data_(other.data_),
      size_(other.size_),
      committed_(other.committed_) {
    other.committed_ = true;  // the moved-from lease must not abandon the range
}

Segment::WriteLease::~WriteLease() {
    if (record_ == nullptr || committed_) return;
    record_->alive = false;
    lock_.unlock();
    segment_->Forget(record_);
}

void Segment::WriteLease::Commit() {
    record_->CommitUnderLease();
    committed_ = true;
    lock_.unlock();
}

Segment::ReadLease::ReadLease(std::shared_ptr<Record> record, const std::byte* data,
                              uint64_t size)
    : record_(std::move(record)), lock_(record_->mu), data_(data), size_(size) {}

// ---------------- records ----------------

void Segment::Kill(const std::shared_ptr<Record>& record) {
    WriterLock lock(record->mu);  // waits for the record's readers (or its writer)
    record->alive = false;
}

void Segment::Forget(const std::shared_ptr<Record>& record) {
    MutexLock lock(mu_);
    auto it = records_.find(record->offset);
    if (it != records_.end() && it->second == record) {
        bytes_held_.fetch_sub(record->length, std::memory_order_relaxed);
        records_.erase(it);
    }
}

Result<Segment::WriteLease> Segment::BeginWrite(std::string_view key, Generation generation,
                                                uint64_t offset, uint64_t length) {
    if (length == 0 || offset >= capacity_ || length > capacity_ - offset) {
        return Status::InvalidArgument("range [" + std::to_string(offset) + ", +" +
                                       std::to_string(length) + ") is outside the " +
                                       FormatSize(capacity_) + " segment");
    }
    auto record = std::make_shared<Record>(key, generation, offset, length);
    WriteLease lease(this, record, base_ + offset, length);  // locks the fresh record
    std::vector<std::shared_ptr<Record>> replaced;
    {
        MutexLock lock(mu_);
        auto it = records_.lower_bound(offset);
        if (it != records_.begin()) {
            auto prev = std::prev(it);
            if (prev->first + prev->second->length > offset) it = prev;
        }
        // A write that reaches the node after a newer generation of the same key took the
        // range is stale (a put revoked, say, whose bytes were still on their way when the
        // key was put again): it must not replace the newer record. Generations only grow.
        for (auto scan = it; scan != records_.end() && scan->first < offset + length; ++scan) {
            if (scan->second->key == key && scan->second->generation > generation) {
                return Status::StaleGeneration(
                    "generation " + std::to_string(generation) + " of " + QuoteKey(key) +
                    " is older than generation " + std::to_string(scan->second->generation) +
                    " already at offset " + std::to_string(scan->first));
            }
        }
        while (it != records_.end() && it->first < offset + length) {
            bytes_held_.fetch_sub(it->second->length, std::memory_order_relaxed);
            replaced.push_back(std::move(it->second));
            it = records_.erase(it);
        }
        records_.emplace(offset, record);
        bytes_held_.fetch_add(length, std::memory_order_relaxed);
    }
    // Outside the table lock: wait for readers of what we replace before any byte lands.
    for (const auto& old : replaced) Kill(old);
    return lease;
}

Result<Segment::ReadLease> Segment::BeginRead(std::string_view key, Generation generation,
                                              uint64_t offset, uint64_t length) {
    if (length == 0) return Status::InvalidArgument("empty read");
    std::shared_ptr<Record> record;
    {
        MutexLock lock(mu_);
        auto it = records_.upper_bound(offset);
        if (it != records_.begin()) {
            --it;
            const Record& r = *it->second;
            if (offset >= r.offset && length <= r.length && offset - r.offset <= r.length - length) {
                record = it->second;
            }
        }
    }
    auto gone = [&] {
        return Status::NotFound("this node holds no bytes of " + QuoteKey(key) +
                                " (generation " + std::to_string(generation) + ") at offset " +
                                std::to_string(offset) + " (released or never written)");
    };
    if (record == nullptr) return gone();
    if (record->key != key) return gone();
    if (record->generation != generation) {
        return Status::StaleGeneration("the range at offset " + std::to_string(offset) +
                                       " holds generation " +
                                       std::to_string(record->generation) + " of " +
                                       QuoteKey(key) + ", not " + std::to_string(generation));
    }
    ReadLease lease(record, base_ + offset, length);  // waits for a writer still filling it
    if (!record->ReadableUnderLease()) return gone();
    return lease;
}

Status Segment::Write(std::string_view key, Generation generation, uint64_t offset,
                      std::span<const std::byte> data) {
    auto lease = BeginWrite(key, generation, offset, data.size());
    if (!lease.ok()) return lease.status();
    std::memcpy(lease->data(), data.data(), data.size());
    lease->Commit();
    return Status::Ok();
}

Status Segment::Read(std::string_view key, Generation generation, uint64_t offset,
                     std::span<std::byte> out) {
    auto lease = BeginRead(key, generation, offset, out.size());
    if (!lease.ok()) return lease.status();
    std::memcpy(out.data(), lease->data(), out.size());
    return Status::Ok();
}

void Segment::Release(std::string_view key, Generation generation, uint64_t offset) {
    std::shared_ptr<Record> record;
    {
        MutexLock lock(mu_);
        auto it = records_.find(offset);
        if (it == records_.end() || it->second->key != key ||
            it->second->generation != generation) {
            return;  // already reused by a newer write, or never written here
        }
        record = std::move(it->second);
        records_.erase(it);
        bytes_held_.fetch_sub(record->length, std::memory_order_relaxed);
    }
    Kill(record);
}

Status Segment::ReadRange(std::string_view key, Generation generation, uint64_t offset,
                          uint64_t length,
                          const std::function<Status(std::span<const std::byte>)>& use) {
    auto lease = BeginRead(key, generation, offset, length);
    if (!lease.ok()) return lease.status();
    return use({lease->data(), lease->size()});
}

std::vector<Segment::HeldRange> Segment::Held() const {
    std::vector<std::shared_ptr<Record>> records;
    {
        MutexLock lock(mu_);
        for (const auto& [offset, record] : records_) records.push_back(record);
    }
    std::vector<HeldRange> out;
    for (const auto& r : records) {
        // A writer holds the lock exclusively until it commits: not readable, not reported.
        if (!r->mu.try_lock_shared()) continue;
        if (r->alive && r->committed) out.push_back({r->key, r->generation, r->offset, r->length});
        r->mu.unlock_shared();
    }
    return out;
}

void Segment::ReleaseAll() {
    std::map<uint64_t, std::shared_ptr<Record>> all;
    {
        MutexLock lock(mu_);
        all.swap(records_);
        bytes_held_.store(0, std::memory_order_relaxed);
    }
    for (const auto& [offset, record] : all) Kill(record);
}

}  // namespace mooncake
