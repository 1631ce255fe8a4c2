// The store's metric handles, looked up once (names: DESIGN.md).
#pragma once

#include "core/base/metrics.h"
#include "core/base/promotion_decision.h"

namespace mooncake {

// Metric handles, looked up once.
struct StoreMetrics {
    explicit StoreMetrics(MetricsRegistry& registry);

    Counter& promotion_attempts;
    Counter& promotion_queued;
    Counter& promotion_completed;
    Counter& promotion_failed_admission;
    Counter& promotion_failed_watermark;
    Counter& promotion_failed_queue_full;
    Counter& promotion_failed_alloc;
    Counter& promotion_failed_io;
    Counter& promotion_failed_no_room;
    Counter& promotion_failed_victims_hotter;
    Counter& promotion_failed_gate_refused;
    Counter& promotion_failed_stale;
    Counter& promotion_deduplicated;
    Counter& promotion_cancelled;
    Counter& promotion_expired;
    Counter& promotion_retried;
    Counter& promotion_proactive;
    Gauge& promotion_in_flight;
    Histogram& promotion_latency;

    Counter& offload_queued;
    Counter& offload_completed;
    Counter& offload_failed;
    Counter& offload_cancelled;
    Counter& offload_bytes;
    Gauge& offload_in_flight;
    Gauge& hard_pinned_bytes;

    Counter& evictions;
    Counter& evicted_bytes;
    Counter& group_evictions;
    Counter& gets_memory;
    Counter& gets_disk;
    Counter& get_misses;
    Counter& puts;
    Counter& put_no_space;
    Counter& put_cold_inserted;
    Counter& put_copies_short;
    Counter& removes;
    Counter& removals_unrecorded;
    Counter& superseded_at_rejoin;
    Counter& prefetch_on_exist;
    Counter& nodes_expired;
    Counter& node_expiries_forgiven;
    Counter& nodes_replaced;

    // The counter of one promotion outcome: promotion_queued_total,
    // promotion_deduplicated_total, promotion_completed_total, promotion_expired_total,
    // promotion_cancelled_total, or promotion_failed_total{reason=<its name>}.
    Counter& PromotionOutcomeCounter(PromotionOutcome outcome);
    const Counter& PromotionOutcomeCounter(PromotionOutcome outcome) const {
        return const_cast<StoreMetrics*>(this)->PromotionOutcomeCounter(outcome);
    }
};

}  // namespace mooncake
