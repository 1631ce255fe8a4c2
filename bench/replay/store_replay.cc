#include "bench/replay/store_replay.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/base/clock.h"
#include "core/node/bookkeeping_node.h"
#include "core/disk/disk_store.h"
#include "core/node/disk_node_disk.h"
#include "core/base/knobs.h"
#include "core/master/local_master_link.h"
#include "core/master/master_store.h"
#include "core/base/metrics.h"
#include "core/node/node_worker.h"

namespace mooncake::replay {
namespace {

constexpr ClientId kClient = 1;

// Deterministic bytes of one object incarnation, so a read can be checked without keeping
// the value: 8-byte words of a splitmix sequence seeded by (key, generation).
uint64_t Seed(std::string_view key, Generation generation) {
    return std::hash<std::string_view>{}(key) ^ (generation * 0x9E3779B97F4A7C15ULL);
}
uint64_t Mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}
void FillPattern(std::span<std::byte> out, uint64_t seed) {
    for (size_t i = 0; i < out.size(); i += 8) {
        uint64_t w = Mix(seed + i);
        std::memcpy(out.data() + i, &w, std::min<size_t>(8, out.size() - i));
    }
}
bool CheckPattern(std::span<const std::byte> in, uint64_t seed) {
    for (size_t i = 0; i < in.size(); i += 8) {
        uint64_t w = Mix(seed + i);
        if (std::memcmp(in.data() + i, &w, std::min<size_t>(8, in.size() - i)) != 0) return false;
    }
    return true;
}

// The node's segment as the replay sees it: every range holds its incarnation's pattern
// (no bytes are kept; an offload writes the pattern to disk).
class PatternSegment final : public NodeSegment {
public:
    Status ReadRange(std::string_view key, Generation generation, uint64_t, uint64_t length,
                     const std::function<Status(std::span<const std::byte>)>& use) override {
        if (buffer_.size() < length) buffer_ = AlignedBuffer(AlignUp(length));
        std::span<std::byte> bytes = buffer_.span().first(length);
        FillPattern(bytes, Seed(key, generation));
        return use(bytes);
    }
    Status Write(std::string_view, Generation, uint64_t, std::span<const std::byte>) override {
        return Status::Ok();
    }
    void Release(std::string_view, Generation, uint64_t) override {}
    std::vector<HeldRange> Held() const override { return {}; }

private:
    AlignedBuffer buffer_;
};

// The real DiskStore, every read checked against the pattern its incarnation was written with.
class CheckedDisk final : public NodeDisk {
public:
    explicit CheckedDisk(DiskStore& disk) : disk_(disk), inner_(disk) {}
    Status Write(std::string_view key, Generation generation, std::span<const std::byte> data,
                 IoPriority priority) override {
        return inner_.Write(key, generation, data, priority);
    }
    Status Read(std::string_view key, Generation generation, std::span<std::byte> out,
                IoPriority priority) override {
        MC_RETURN_IF_ERROR(inner_.Read(key, generation, out, priority));
        if (!CheckPattern(out, Seed(key, generation))) {
            ++content_mismatches_;
            return Status::Corruption("bytes read back differ from what was written");
        }
        return Status::Ok();
    }
    Status Remove(std::string_view key, Generation generation) override {
        return inner_.Remove(key, generation);
    }
    void Pin(std::string_view key, Generation generation) override { inner_.Pin(key, generation); }
    void Unpin(std::string_view key, Generation generation) override {
        inner_.Unpin(key, generation);
    }
    std::vector<DiskObjectInfo> List() const override { return inner_.List(); }
    void SetDropListener(std::function<void(const DiskObjectInfo&, DropReason)> l) override {
        inner_.SetDropListener(std::move(l));
    }

    DiskStore& store() { return disk_; }
    uint64_t content_mismatches() const { return content_mismatches_; }

private:
    DiskStore& disk_;
    DiskNodeDisk inner_;
    uint64_t content_mismatches_ = 0;
};

// Retention hints as an engine or a router might give them, derived from the trace's future:
// at a block's Put, "it will be read again within `window` references". The hint rides on the
// Put as Mooncake's soft pin (ReplicateConfig.with_soft_pin): its TTL is the trace time the
// window spans from there, so a block pinned by mistake lapses after the traffic it was meant
// to outlive. With accuracy a, each hint is the truth with probability a and its opposite
// otherwise (seeded per reference, so every policy sees the same hints). With
// ReplayOptions::hint_per_batch, At() of a request's first new block is the whole put batch's
// hint, as one config on an engine's batch put: "this request's new KV is read again soon",
// right or wrong for all of it.
class RetentionHints {
public:
    RetentionHints(const std::vector<TraceRequest>& trace, double accuracy, uint64_t window)
        : accuracy_(accuracy), window_(std::max<uint64_t>(window, 1)) {
        for (const TraceRequest& req : trace) {
            for (int64_t block : req.blocks) {
                blocks_.push_back(block);
                times_.push_back(req.timestamp_ms);
            }
        }
        next_use_.assign(blocks_.size(), kNever);
        std::unordered_map<int64_t, size_t> upcoming;
        for (size_t i = blocks_.size(); i-- > 0;) {
            auto [it, fresh] = upcoming.try_emplace(blocks_[i], i);
            if (!fresh) {
                next_use_[i] = it->second;
                it->second = i;
            }
        }
    }

    // The pin for the Put at reference `index` (none when the hint says "not soon").
    PutConfig At(size_t index) const {
        const bool soon = next_use_[index] != kNever && next_use_[index] - index <= window_;
        const bool told = Truthful(index) ? soon : !soon;
        PutConfig pin;
        if (!told) return pin;
        const size_t end = std::min(index + window_, times_.size() - 1);
        pin.soft = true;
        // At least 1 ms: a TTL of 0 would mean the store's default.
        pin.soft_ttl = std::chrono::milliseconds(std::max<int64_t>(times_[end] - times_[index], 1));
        return pin;
    }

private:
    static constexpr size_t kNever = std::numeric_limits<size_t>::max();

    bool Truthful(size_t index) const {
        uint64_t x = (index + 1) * 0x9E3779B97F4A7C15ULL;
        x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ULL;
        x ^= x >> 29;
        return static_cast<double>(x >> 11) * 0x1.0p-53 < accuracy_;
    }

    double accuracy_;
    uint64_t window_;
    std::vector<int64_t> blocks_;
    std::vector<int64_t> times_;
    std::vector<size_t> next_use_;
};

// The replay's node: the real NodeWorker (core/node/node_worker.h, as the daemon runs it) over an
// in-process link, its work done synchronously after every reference. disk == nullptr:
// LOCAL_DISK is bookkeeping only (no bytes).
class ReplayNode {
public:
    static constexpr size_t kBatch = size_t{1} << 16;

    ReplayNode(MasterStore& store, const Clock& clock, MetricsRegistry& metrics, NodeSpec spec,
               DiskStore* disk)
        : link_(store) {
        NodeSegment* segment = &bookkeeping_segment_;
        NodeDisk* node_disk = &bookkeeping_disk_;
        if (disk != nullptr) {
            checked_disk_ = std::make_unique<CheckedDisk>(*disk);
            segment = &pattern_segment_;
            node_disk = checked_disk_.get();
        }
        NodeWorkerOptions options;
        options.spec = std::move(spec);
        // No offload thread here: while staging waits for room, the node runs its offloads.
        options.room_wait = NodeWorkerOptions::RoomWait::kRunOffloads;
        options.inline_offload_batch = kBatch;
        worker_ = std::make_unique<NodeWorker>(std::move(options), link_, *segment, node_disk,
                                               /*peers=*/nullptr, clock, metrics);
    }

    Status Register() { return worker_->Register(); }

    size_t RunOffloads() {
        size_t done = worker_->RunOffloads(kBatch).done;
        worker_->FlushDrops();
        return done;
    }

    // Until no work is left: offloads, then promotions (which may need offloads for room).
    void RunAll() {
        for (;;) {
            size_t progress = RunOffloads();
            progress += worker_->RunPromotions(kBatch).tasks;
            worker_->FlushDrops();
            if (progress == 0) return;
        }
    }

    // A reader's Get served from LOCAL_DISK: the bytes, read and checked.
    bool ReadForGet(std::string_view key, Generation generation, uint64_t size) {
        if (checked_disk_ == nullptr) return true;
        if (get_buffer_.size() < size) get_buffer_ = AlignedBuffer(AlignUp(size));
        Status st = checked_disk_->Read(key, generation, get_buffer_.span().first(size),
                                        IoPriority::kForeground);
        worker_->FlushDrops();
        if (!st.ok()) ++read_failures_;
        return st.ok();
    }

    void Heartbeat() { (void)worker_->Heartbeat(); }

    DiskFigures figures() const {
        DiskFigures f;
        f.read_failures = read_failures_;
        if (checked_disk_ != nullptr) {
            DiskStore& disk = checked_disk_->store();
            DiskStoreStats st = disk.stats();
            f.capacity = disk.capacity();
            f.bytes_written = st.write_bytes;
            f.writes = st.writes;
            f.bytes_read = st.read_bytes;
            f.reads = st.reads;
            f.evictions = st.evictions;
            f.corruptions = st.corruptions;
            f.content_mismatches = checked_disk_->content_mismatches();
        }
        return f;
    }

private:
    LocalMasterLink link_;
    BookkeepingSegment bookkeeping_segment_;
    BookkeepingDisk bookkeeping_disk_;
    PatternSegment pattern_segment_;
    std::unique_ptr<CheckedDisk> checked_disk_;
    std::unique_ptr<NodeWorker> worker_;
    AlignedBuffer get_buffer_;
    uint64_t read_failures_ = 0;
};

}  // namespace

Result<ReplayResult> RunStoreReplay(const std::vector<TraceRequest>& trace,
                                    const ReplayOptions& options) {
    Config config;
    // Offloads and promotions are executed synchronously here, so a Put never waits.
    MC_RETURN_IF_ERROR(config.Set("put_wait_for_offload_ms", "0"));
    MC_RETURN_IF_ERROR(config.Set("client_live_ttl_sec", "86400"));
    MC_RETURN_IF_ERROR(config.Set("dram_size", std::to_string(options.capacity_bytes)));
    MC_RETURN_IF_ERROR(config.SetMany(options.knobs, SetMode::kStartup));
    ManualClock clock;
    MetricsRegistry metrics;
    MasterStore store(config, clock, metrics, /*epoch=*/1);
    uint64_t capacity = options.capacity_bytes / 4096 * 4096;
    std::unique_ptr<DiskStore> disk;
    uint64_t disk_capacity = uint64_t{1} << 60;
    if (!options.disk_dir.empty()) {
        DiskStoreOptions disk_options;
        disk_options.dir = options.disk_dir;
        disk_options.capacity = options.disk_capacity;
        disk_options.queue_depth = options.disk_queue_depth;
        Result<std::unique_ptr<DiskStore>> opened = DiskStore::Open(disk_options);
        if (!opened.ok()) {
            return Status(opened.status().code(),
                          "opening the disk store in " + options.disk_dir + ": " +
                              opened.status().message());
        }
        disk = std::move(opened).value();
        if (disk->object_count() != 0) {
            return Status::InvalidArgument("the disk store in " + options.disk_dir +
                                           " is not empty");
        }
        disk_capacity = disk->capacity();
    }
    ReplayNode node(store, clock, metrics, {"replay-node", "", capacity, disk_capacity},
                    disk.get());
    MC_RETURN_IF_ERROR(node.Register());
    const auto wall_start = std::chrono::steady_clock::now();

    ReplayResult result;
    const Nanos origin = clock.Now();
    double fill_sum = 0;
    uint64_t fill_samples = 0;
    bool full = false;
    RequestMeter meter(options.ttft);
    std::vector<BlockSource> sources;
    std::optional<RetentionHints> hints;
    if (options.hint_accuracy >= 0) {
        const uint64_t capacity_objects = capacity / std::max<uint64_t>(options.object_size, 1);
        hints.emplace(trace, options.hint_accuracy,
                      static_cast<uint64_t>(options.hint_window_capacities *
                                            static_cast<double>(capacity_objects)));
    }
    std::optional<PutConfig> batch_pin;  // the request's put batch's hint, once drawn
    size_t reference = 0;                // index of the current reference in the whole trace
    std::vector<std::string> read_keys;  // the request's blocks found (any tier), in order
    for (const TraceRequest& req : trace) {
        sources.clear();
        clock.Set(origin + std::chrono::milliseconds(req.timestamp_ms));
        node.Heartbeat();
        store.Tick();
        // The engine's view of the request: its leading blocks the store had (any tier) end
        // at the first miss.
        int32_t prefix_hit = -1;
        const int32_t request_blocks = static_cast<int32_t>(req.blocks.size());
        read_keys.clear();
        batch_pin.reset();
        // The request's put batch: its missed blocks, in order. Only the request's last block
        // can be smaller, so the batch's last is known a partial tail at that block.
        BatchShape batch;
        for (int32_t pos = 0; pos < request_blocks; ++pos) {
            int64_t block = req.blocks[static_cast<size_t>(pos)];
            std::string key = "block-" + std::to_string(block);
            const size_t index = reference++;
            ++result.counts.references;
            Result<ObjectView> got = store.GetReplicaList(key);
            if (got.ok() && got->replicas.front().tier != Tier::kMemory &&
                !node.ReadForGet(key, got->generation, got->size)) {
                // The disk could not give the bytes back: the reader misses and puts again.
                (void)store.Remove(key, /*force=*/true);
                got = Status::NotFound(key);
            }
            if (got.ok()) {
                read_keys.push_back(key);
                if (got->replicas.front().tier == Tier::kMemory) {
                    ++result.counts.mem_hits;
                    sources.push_back(BlockSource::kMemory);
                } else {
                    ++result.counts.disk_hits;
                    sources.push_back(BlockSource::kDisk);
                }
            } else if (got.status().Is(StatusCode::kNotFound)) {
                ++result.counts.misses;
                sources.push_back(BlockSource::kMiss);
                if (prefix_hit < 0) prefix_hit = pos;
                const uint64_t size = options.partial_sizes
                                          ? BlockBytes(req, static_cast<size_t>(pos),
                                                       options.block_tokens, options.object_size)
                                          : options.object_size;
                batch.Add(size);
                PutHint hint;
                if (options.put_hints) {
                    hint.position = pos;
                    hint.request_blocks = request_blocks;
                    hint.prefix_hit_blocks = prefix_hit;
                }
                hint.last_partial = pos + 1 == request_blocks && batch.LastIsPartialTail();
                const PutHint* hint_ptr = options.put_hints || hint.last_partial ? &hint : nullptr;
                PutConfig pin;
                if (hints && options.hint_per_batch) {
                    if (!batch_pin) batch_pin = hints->At(index);
                    pin = *batch_pin;
                } else if (hints) {
                    pin = hints->At(index);
                }
                Result<PutStartReply> put =
                    store.PutStart(kClient, key, size, kNoNode, hint_ptr, pin);
                while (!put.ok() && put.status().Is(StatusCode::kNoSpace) &&
                       node.RunOffloads() > 0) {
                    put = store.PutStart(kClient, key, size, kNoNode, hint_ptr, pin);
                }
                if (!put.ok()) {
                    return Status(put.status().code(),
                                  "replay Put of " + key + ": " + put.status().message());
                }
                MC_RETURN_IF_ERROR(store.PutEnd(kClient, key, put->generation));
            } else {
                return got.status();
            }
            node.RunAll();
        }
        // The engine reads the blocks it found as one batch, in prefix order: what
        // BatchGetReplicaList does after its reads.
        store.CoverPrefixWithSoftPins(read_keys);
        meter.Add(req, sources);
        double used = metrics.Value("dram_used_bytes").value_or(0);
        // Full once it had to evict: with smaller partial tails the holes they leave may keep
        // use a little under capacity minus one block.
        full = full ||
               used + static_cast<double>(options.object_size) > static_cast<double>(capacity) ||
               metrics.Value("evictions_total").value_or(0) > 0;
        if (full && capacity > 0) {
            fill_sum += used / static_cast<double>(capacity);
            ++fill_samples;
        }
    }
    if (options.dump_metrics) std::fputs(metrics.RenderPrometheus().c_str(), stderr);
    result.counts.promotions =
        static_cast<uint64_t>(metrics.Value("promotion_completed_total").value_or(0));
    result.mean_dram_fill = fill_samples ? fill_sum / static_cast<double>(fill_samples) : 0;
    result.disk = node.figures();
    result.requests = meter.Figures();
    result.disk.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return result;
}

}  // namespace mooncake::replay
