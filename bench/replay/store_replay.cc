#include "bench/replay/store_replay.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>

#include "core/clock.h"
#include "core/disk/disk_store.h"
#include "core/knobs.h"
#include "core/master_store.h"
#include "core/metrics.h"

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

// The node's byte work, synchronously, in the order the daemon's node does it
// (daemon/node.cc: DoOffload, DoPromotion, FlushDrops, the heartbeat's disk_deletes).
// disk == nullptr: LOCAL_DISK is bookkeeping only (no bytes).
class ReplayNode {
public:
    ReplayNode(MasterStore& store, NodeId id, DiskStore* disk, uint64_t max_object)
        : store_(store), id_(id), disk_(disk) {
        if (disk_ != nullptr) {
            buffer_ = AlignedBuffer((max_object + 4095) / 4096 * 4096);
            disk_->SetDropListener([this](const DiskObjectInfo& info, DropReason reason) {
                std::lock_guard lock(mu_);
                dropped_.push_back({info.key, info.generation});
                if (reason == DropReason::kEvicted) ++figures_.evictions;
            });
        }
    }
    ~ReplayNode() {
        if (disk_ != nullptr) disk_->SetDropListener(nullptr);
    }

    size_t RunOffloads() {
        size_t done = 0;
        for (const OffloadTask& t : store_.OffloadObjectHeartbeat(id_, 1 << 16)) {
            Status st;
            if (disk_ != nullptr) {
                // The segment's bytes of this incarnation, as the node would read them.
                std::span<std::byte> bytes = buffer_.span().first(t.size);
                FillPattern(bytes, Seed(t.key, t.generation));
                st = disk_->Write(t.key, t.generation, bytes, IoPriority::kBackground);
                FlushDrops();
            }
            if (st.ok()) {
                if (store_.NotifyOffloadSuccess(id_, t.key, t.generation).ok()) ++done;
            } else {
                (void)store_.NotifyOffloadFailure(id_, t.key, t.generation);
            }
        }
        return done;
    }

    // Until no work is left: offloads, then promotions (which may need offloads for room).
    void RunAll() {
        for (;;) {
            size_t progress = RunOffloads();
            for (const PromotionTask& t : store_.PromotionObjectHeartbeat(id_, 1 << 16)) {
                ++progress;
                if (disk_ != nullptr) {
                    disk_->Pin(t.key, t.generation);
                    if (!ReadChecked(t.key, t.generation, t.size, IoPriority::kBackground)) {
                        disk_->Unpin(t.key, t.generation);
                        (void)store_.NotifyPromotionFailure(id_, t.key, t.generation);
                        continue;
                    }
                }
                Result<ReplicaDesc> staged =
                    store_.PromotionAllocStart(id_, t.key, t.generation, t.size);
                while (!staged.ok() && staged.status().Is(StatusCode::kNotReady) &&
                       RunOffloads() > 0) {
                    staged = store_.PromotionAllocStart(id_, t.key, t.generation, t.size);
                }
                if (staged.ok()) {
                    (void)store_.NotifyPromotionSuccess(id_, t.key, t.generation);
                } else if (staged.status().Is(StatusCode::kNotReady)) {
                    (void)store_.NotifyPromotionFailure(id_, t.key, t.generation);
                }
                if (disk_ != nullptr) disk_->Unpin(t.key, t.generation);
            }
            if (progress == 0) return;
        }
    }

    // A reader's Get served from LOCAL_DISK: the bytes, read and checked.
    bool ReadForGet(std::string_view key, Generation generation, uint64_t size) {
        if (disk_ == nullptr) return true;
        bool ok = ReadChecked(key, generation, size, IoPriority::kForeground);
        if (!ok) ++figures_.read_failures;
        return ok;
    }

    void Heartbeat() {
        Result<HeartbeatReply> reply = store_.Heartbeat(id_);
        if (!reply.ok() || disk_ == nullptr) return;
        for (const DiskDelete& d : reply->disk_deletes) (void)disk_->Remove(d.key, d.generation);
    }

    DiskFigures figures() const {
        DiskFigures f = figures_;
        if (disk_ != nullptr) {
            DiskStoreStats st = disk_->stats();
            f.capacity = disk_->capacity();
            f.bytes_written = st.write_bytes;
            f.writes = st.writes;
            f.bytes_read = st.read_bytes;
            f.reads = st.reads;
            f.corruptions = st.corruptions;
        }
        return f;
    }

private:
    bool ReadChecked(std::string_view key, Generation generation, uint64_t size,
                     IoPriority priority) {
        std::span<std::byte> bytes = buffer_.span().first(size);
        Status st = disk_->Read(key, generation, bytes, priority);
        FlushDrops();
        if (!st.ok()) return false;
        if (!CheckPattern(bytes, Seed(key, generation))) {
            ++figures_.content_mismatches;
            return false;
        }
        return true;
    }

    // Records the disk dropped (its own LRU eviction, a failed checksum) are reported, as the
    // node's heartbeat loop does.
    void FlushDrops() {
        std::vector<DiskDelete> drops;
        {
            std::lock_guard lock(mu_);
            drops.swap(dropped_);
        }
        for (const DiskDelete& d : drops) {
            (void)store_.ReportDiskReplicaDropped(id_, d.key, d.generation);
        }
    }

    MasterStore& store_;
    NodeId id_;
    DiskStore* disk_;
    AlignedBuffer buffer_;
    std::mutex mu_;
    std::vector<DiskDelete> dropped_;
    DiskFigures figures_;
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
    Result<NodeId> node_id =
        store.RegisterNode({"replay-node", "", capacity, disk_capacity});
    if (!node_id.ok()) return node_id.status();
    ReplayNode node(store, *node_id, disk.get(), options.object_size);
    const auto wall_start = std::chrono::steady_clock::now();

    ReplayResult result;
    const Nanos origin = clock.Now();
    double fill_sum = 0;
    uint64_t fill_samples = 0;
    bool full = false;
    for (const TraceRequest& req : trace) {
        clock.Set(origin + std::chrono::milliseconds(req.timestamp_ms));
        node.Heartbeat();
        store.Tick();
        // The engine's view of the request: its leading blocks the store had (any tier) end
        // at the first miss.
        int32_t prefix_hit = -1;
        const int32_t request_blocks = static_cast<int32_t>(req.blocks.size());
        for (int32_t pos = 0; pos < request_blocks; ++pos) {
            int64_t block = req.blocks[static_cast<size_t>(pos)];
            std::string key = "block-" + std::to_string(block);
            ++result.counts.references;
            Result<ObjectView> got = store.GetReplicaList(key);
            if (got.ok() && got->replicas.front().tier != Tier::kMemory &&
                !node.ReadForGet(key, got->generation, got->size)) {
                // The disk could not give the bytes back: the reader misses and puts again.
                (void)store.Remove(key, /*force=*/true);
                got = Status::NotFound(key);
            }
            if (got.ok()) {
                if (got->replicas.front().tier == Tier::kMemory) {
                    ++result.counts.mem_hits;
                } else {
                    ++result.counts.disk_hits;
                }
            } else if (got.status().Is(StatusCode::kNotFound)) {
                ++result.counts.misses;
                if (prefix_hit < 0) prefix_hit = pos;
                PutHint hint;
                hint.position = pos;
                hint.request_blocks = request_blocks;
                hint.prefix_hit_blocks = prefix_hit;
                hint.last_partial = pos + 1 == request_blocks && req.input_length >= 0 &&
                                    req.input_length % options.block_tokens != 0;
                const PutHint* hint_ptr = options.put_hints ? &hint : nullptr;
                Result<PutStartReply> put =
                    store.PutStart(kClient, key, options.object_size, kNoNode, hint_ptr);
                while (!put.ok() && put.status().Is(StatusCode::kNoSpace) &&
                       node.RunOffloads() > 0) {
                    put = store.PutStart(kClient, key, options.object_size, kNoNode, hint_ptr);
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
        double used = metrics.Value("dram_used_bytes").value_or(0);
        full = full || used + static_cast<double>(options.object_size) > static_cast<double>(capacity);
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
    result.disk.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return result;
}

}  // namespace mooncake::replay
