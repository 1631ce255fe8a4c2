// StoreMetrics: registration of the store's counters, gauges and histograms.
#include "core/master/store_metrics.h"

namespace mooncake {

namespace {

Counter& Failed(MetricsRegistry& r, const char* reason) {
    return r.GetCounter("promotion_failed_total",
                        "promotion attempts refused, and queued promotions failed, by reason "
                        "(the RFC's names; no_room, victims_hotter, gate_refused and stale are "
                        "refusals it has no name for)",
                        {{"reason", reason}});
}

}  // namespace

StoreMetrics::StoreMetrics(MetricsRegistry& r)
    : promotion_attempts(r.GetCounter(
          "promotion_attempts_total",
          "promotion attempts (a Get of a LOCAL_DISK-only object, a retry of a refused one, the "
          "proactive scan, a manual promote): = queued + deduplicated + failed by an attempt's "
          "reasons")),
      promotion_queued(r.GetCounter("promotion_queued_total", "promotion tasks admitted")),
      promotion_completed(r.GetCounter("promotion_completed_total",
                                       "promotions committed to MEMORY")),
      promotion_failed_admission(Failed(r, "admission_gated")),
      promotion_failed_watermark(Failed(r, "watermark_gated")),
      promotion_failed_queue_full(Failed(r, "queue_full")),
      promotion_failed_alloc(Failed(r, "alloc_failed")),
      promotion_failed_io(Failed(r, "io_failed")),
      promotion_failed_no_room(Failed(r, "no_room")),
      promotion_failed_victims_hotter(Failed(r, "victims_hotter")),
      promotion_failed_gate_refused(Failed(r, "gate_refused")),
      promotion_failed_stale(Failed(r, "stale")),
      promotion_deduplicated(r.GetCounter("promotion_deduplicated_total",
                                          "promotion triggers for a key that had a task")),
      promotion_cancelled(r.GetCounter(
          "promotion_cancelled_total",
          "promotion tasks ended by Remove, node expiry, eviction or a new generation")),
      promotion_expired(r.GetCounter("promotion_expired_total",
                                     "promotion tasks expired by the reaper")),
      promotion_retried(r.GetCounter("promotion_retried_total",
                                     "refused candidates queued on retry")),
      promotion_proactive(r.GetCounter("promotion_proactive_total",
                                       "promotions queued by the proactive scan")),
      promotion_in_flight(r.GetGauge("promotion_in_flight", "promotion tasks in flight")),
      promotion_latency(r.GetHistogram("promotion_latency_seconds",
                                       "promotion trigger to COMPLETE", LatencyBucketsSeconds())),
      offload_queued(r.GetCounter("offload_queued_total", "offload tasks queued")),
      offload_completed(r.GetCounter("offload_completed_total",
                                     "offloads whose LOCAL_DISK copy was committed")),
      offload_failed(r.GetCounter("offload_failed_total", "offloads the node reported failed")),
      offload_cancelled(r.GetCounter("offload_cancelled_total",
                                     "offload tasks ended by Remove, expiry or timeout")),
      offload_bytes(r.GetCounter("offload_bytes_total", "bytes committed to LOCAL_DISK")),
      offload_in_flight(r.GetGauge("offload_in_flight", "offload tasks in flight")),
      hard_pinned_bytes(r.GetGauge("hard_pinned_bytes",
                                   "DRAM bytes of hard-pinned objects (never evicted; capped by "
                                   "hard_pin_max_ratio)")),
      evictions(r.GetCounter("evictions_total", "MEMORY replicas evicted (dropped or offloaded)")),
      evicted_bytes(r.GetCounter("evicted_bytes_total", "DRAM bytes evicted")),
      group_evictions(r.GetCounter("group_evictions_total",
                                   "MEMORY replicas evicted with another member of their "
                                   "group (ReplicateConfig.group_ids)")),
      gets_memory(r.GetCounter("gets_total", "GetReplicaList answers by best tier served",
                               {{"tier", "MEMORY"}})),
      gets_disk(r.GetCounter("gets_total", "GetReplicaList answers by best tier served",
                             {{"tier", "LOCAL_DISK"}})),
      get_misses(r.GetCounter("get_misses_total", "GetReplicaList of a missing key")),
      puts(r.GetCounter("puts_total", "Puts completed")),
      put_no_space(r.GetCounter("put_no_space_total", "PutStarts refused for lack of DRAM")),
      put_cold_inserted(r.GetCounter(
          "put_cold_inserted_total",
          "Puts listed at the cold end of the LRU order when they ended: a batch's partial tail "
          "(partial_tail_cold)")),
      put_copies_short(r.GetCounter(
          "put_copies_short_total",
          "Puts placed with fewer MEMORY copies than they asked for (ReplicateConfig.replica_num): "
          "fewer nodes, or no room on them")),
      removes(r.GetCounter("removes_total", "objects removed")),
      removals_unrecorded(r.GetCounter(
          "removals_unrecorded_total",
          "removals refused because they could not be made durable (HA: etcd) first")),
      superseded_at_rejoin(r.GetCounter(
          "rejoin_superseded_total",
          "older incarnations dropped when a registering node reported a newer one")),
      prefetch_on_exist(r.GetCounter("prefetch_on_exist_total",
                                     "Exists of a LOCAL_DISK-only key that requested its promotion (prefetch)")),
      nodes_expired(r.GetCounter("nodes_expired_total", "nodes expired by missed heartbeats")),
      node_expiries_forgiven(r.GetCounter(
          "node_expiries_forgiven_total",
          "node leases kept because the master itself did not run (stopped, paused) past them")),
      nodes_replaced(r.GetCounter("nodes_replaced_total",
                                  "registrations replaced by a restarted node of the same name")) {}

Counter& StoreMetrics::PromotionOutcomeCounter(PromotionOutcome outcome) {
    switch (outcome) {
        case PromotionOutcome::kQueued: return promotion_queued;
        case PromotionOutcome::kDeduplicated: return promotion_deduplicated;
        case PromotionOutcome::kAdmissionGated: return promotion_failed_admission;
        case PromotionOutcome::kWatermarkGated: return promotion_failed_watermark;
        case PromotionOutcome::kNoRoom: return promotion_failed_no_room;
        case PromotionOutcome::kVictimsHotter: return promotion_failed_victims_hotter;
        case PromotionOutcome::kGateRefused: return promotion_failed_gate_refused;
        case PromotionOutcome::kQueueFull: return promotion_failed_queue_full;
        case PromotionOutcome::kStale: return promotion_failed_stale;
        case PromotionOutcome::kCompleted: return promotion_completed;
        case PromotionOutcome::kAllocFailed: return promotion_failed_alloc;
        case PromotionOutcome::kIoFailed: return promotion_failed_io;
        case PromotionOutcome::kExpired: return promotion_expired;
        case PromotionOutcome::kCancelled: return promotion_cancelled;
    }
    return promotion_failed_stale;
}

}  // namespace mooncake
