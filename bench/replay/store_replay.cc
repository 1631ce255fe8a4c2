#include "bench/replay/store_replay.h"

#include <cstdio>

#include "core/clock.h"
#include "core/knobs.h"
#include "core/master_store.h"
#include "core/metrics.h"

namespace mooncake::replay {
namespace {

constexpr ClientId kClient = 1;

class ReplayNode {
public:
    ReplayNode(MasterStore& store, NodeId id) : store_(store), id_(id) {}

    size_t RunOffloads() {
        size_t done = 0;
        for (const OffloadTask& t : store_.OffloadObjectHeartbeat(id_, 1 << 16)) {
            if (store_.NotifyOffloadSuccess(id_, t.key, t.generation).ok()) ++done;
        }
        return done;
    }

    // Until no work is left: offloads, then promotions (which may need offloads for room).
    void RunAll() {
        for (;;) {
            size_t progress = RunOffloads();
            for (const PromotionTask& t : store_.PromotionObjectHeartbeat(id_, 1 << 16)) {
                ++progress;
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
            }
            if (progress == 0) return;
        }
    }

private:
    MasterStore& store_;
    NodeId id_;
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
    Result<NodeId> node_id = store.RegisterNode({"replay-node", "", capacity, uint64_t{1} << 60});
    if (!node_id.ok()) return node_id.status();
    ReplayNode node(store, *node_id);

    ReplayResult result;
    const Nanos origin = clock.Now();
    double fill_sum = 0;
    uint64_t fill_samples = 0;
    bool full = false;
    for (const TraceRequest& req : trace) {
        clock.Set(origin + std::chrono::milliseconds(req.timestamp_ms));
        (void)store.Heartbeat(*node_id);
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
    return result;
}

}  // namespace mooncake::replay
