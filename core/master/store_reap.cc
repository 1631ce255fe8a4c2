// Expiry of what a client or node started and never finished: Puts not ended within
// put_timeout_sec (the client is gone: their DRAM is freed), offload and promotion tasks past
// their timeouts (cancelled, sources unpinned, staging freed).
//
// A shard is walked only when something in it may be due: each walk records the earliest
// deadline left in the shard (Shard::reap_due), capped at now + the shortest timeout, since
// anything started after the walk is due no sooner than that. So under load, where Puts and
// tasks come and go in milliseconds, a shard is walked about once per shortest timeout, not
// every tick. (Was: every shard walked every 100 ms while anything was in flight, ~13% of the
// standalone daemon's CPU at 38 k objects under bench/engine's load, and linear in the objects.)
#include <algorithm>

#include "core/master/master_store.h"

namespace mooncake {

size_t MasterStore::ReapExpired() {
    if (puts_in_progress_.load() == 0 && promotion_.tasks_in_flight() == 0 &&
        dram_.offloads_in_flight() == 0) {
        return 0;
    }
    const Nanos now = clock_.Now();
    const Nanos shortest = std::chrono::seconds(std::min(
        {config_.put_timeout_sec(), config_.offload_task_timeout_sec(),
         config_.promotion_task_timeout_sec()}));
    // A timeout shortened at runtime: what starts now may be due before a shard's reap_due.
    const bool shortened = shortest < reap_shortest_timeout_;
    reap_shortest_timeout_ = shortest;
    size_t reaped = 0;
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        if (!shortened && now < shard.reap_due) continue;
        Nanos next = now + shortest;
        std::vector<ObjectMeta*> stale_puts;
        for (auto& [key, meta] : shard.objects) {
            if (meta.PutExpired(now)) {
                stale_puts.push_back(&meta);
                continue;
            }
            if (promotion_.ExpireIfDue(meta, now)) ++reaped;
            if (offload_.ExpireIfDue(meta, now)) ++reaped;
            if (meta.phase() == Phase::kWriting) next = std::min(next, meta.put_deadline);
            if (meta.offload) next = std::min(next, meta.offload->deadline);
            if (meta.promotion) next = std::min(next, meta.promotion->deadline);
        }
        for (ObjectMeta* meta : stale_puts) DestroyObject(shard, *meta);
        reaped += stale_puts.size();
        shard.reap_due = next;
    }
    return reaped;
}

}  // namespace mooncake
