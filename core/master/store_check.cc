// MasterStore::CheckInvariants: the bookkeeping the store keeps incrementally, recomputed by a
// walk over every object and node. A fault test (or an operator, `mooncakectl check`) runs it
// after crashes and restarts: any drift here is a leak (DRAM that nobody can free, a pin that
// keeps a source on disk forever) or a lost task.
#include <map>

#include "core/master/master_store.h"
#include "core/master/master_store.h"

namespace mooncake {
namespace {

struct NodeTally {
    uint64_t segment_bytes = 0;  // MEMORY replicas and staging ranges in this node's segment
    uint64_t memory_objects = 0;
    uint64_t disk_objects = 0;
    uint64_t disk_bytes = 0;
};

std::string Num(double v) { return std::to_string(static_cast<long long>(v)); }

}  // namespace

MasterStore::Totals MasterStore::ComputeTotals() const {
    Totals totals;
    (void)Walk(totals);
    return totals;
}

InvariantReport MasterStore::CheckInvariants() const {
    Totals totals;
    return Walk(totals);
}

InvariantReport MasterStore::Walk(Totals& t) const {
    InvariantReport report;
    auto fail = [&report](std::string what) { report.violations.push_back(std::move(what)); };

    std::map<NodeId, NodeTally> tally;
    // Per tenant: MEMORY replicas in any state, COMPLETE LOCAL_DISK ones (TenantLedger's view).
    std::map<std::string, TenantRow, std::less<>> tenant_tally;
    uint64_t memory_objects = 0;
    uint64_t hard_pinned = 0;  // pins of live objects: every entry of the pin tables, no more
    size_t pinned_objects = 0, pin_entries = 0;
    // DRAM on its way out (offloads that drop MEMORY when done) and written ahead (cleaning).
    uint64_t evict_pending = 0, clean_pending = 0;
    t.dram_capacity = dram_.Capacity();
    t.dram_used = dram_.Used();
    for (Shard& shard : table_.shards()) {
        MutexLock lock(shard.mu);
        pin_entries += shard.eviction_lists.pins.size();
        for (auto& [key, meta] : shard.objects) {
            ++t.objects;
            if (const ObjectPin* pin = shard.eviction_lists.pins.Find(meta)) {
                ++pinned_objects;
                hard_pinned += pin->hard_bytes;
            }
            const uint64_t rounded = SegmentAllocator::RoundUp(meta.size);
            uint64_t pins = 0;
            TenantRow& owner = tenant_tally[std::string(TenantOfKey(key))];
            for (const Replica& r : meta.replicas()) {
                pins += meta.Pins(r);
                NodeTally& n = tally[r.node];
                if (r.tier == Tier::kMemory) {
                    t.dram_allocated += rounded;
                    n.segment_bytes += rounded;
                    if (r.state == ReplicaState::kComplete) ++n.memory_objects;
                    ++owner.memory_objects;
                    owner.memory_bytes += rounded;
                } else if (r.state == ReplicaState::kComplete) {
                    ++n.disk_objects;
                    n.disk_bytes += DiskFootprint(meta.size);
                    ++owner.disk_objects;
                    owner.disk_bytes += DiskFootprint(meta.size);
                }
            }
            memory_objects += meta.HasComplete(Tier::kMemory);
            t.pins += pins;
            // Each task in flight has its source (pins are derived from the tasks, so a task
            // with its source pins it, and nothing else pins).
            uint64_t expected_pins = 0;
            if (meta.promotion) {
                ++t.promotion_tasks;
                t.promotion_in_flight_bytes += meta.size;
                if (meta.promotion->staging) {
                    t.dram_allocated += rounded;
                    tally[meta.promotion->staging->node].segment_bytes += rounded;
                }
                if (meta.HasComplete(Tier::kLocalDisk)) {
                    ++expected_pins;
                } else {
                    fail("promotion of " + QuoteKey(key) + " has no LOCAL_DISK source");
                }
            }
            if (meta.offload) {
                ++t.offload_tasks;
                const uint64_t rounded_size = SegmentAllocator::RoundUp(meta.size);
                if (meta.offload->evict_after) evict_pending += rounded_size;
                if (meta.offload->cleaning) clean_pending += rounded_size;
                if (meta.HasComplete(Tier::kMemory)) {
                    ++expected_pins;
                } else {
                    fail("offload of " + QuoteKey(key) + " has no MEMORY source");
                }
            }
            report.source_pins_expected += expected_pins;
        }
    }

    if (pin_entries != pinned_objects) {
        fail(std::to_string(pin_entries) + " pins held but " + std::to_string(pinned_objects) +
             " live objects pinned");
    }
    if (hard_pinned != hard_pinned_bytes_.load()) {
        fail("hard-pinned bytes counted " + std::to_string(hard_pinned_bytes_.load()) +
             " != sum over hard-pinned objects " + std::to_string(hard_pinned));
    }
    if (t.dram_used != t.dram_allocated) {
        fail("DRAM used " + std::to_string(t.dram_used) + " != sum of live allocations " +
             std::to_string(t.dram_allocated));
    }
    for (const auto& node : nodes_.All()) {
        NodeTally n = tally[node->id];
        const uint64_t used = node->segment.used();
        const std::string who = "node " + std::to_string(node->id) + " ('" + node->spec.name + "')";
        if (used != n.segment_bytes) {
            fail(who + " segment used " + std::to_string(used) + " != its allocations " +
                 std::to_string(n.segment_bytes));
        }
        if (node->memory_objects.load() != n.memory_objects) {
            fail(who + " counts " + std::to_string(node->memory_objects.load()) +
                 " MEMORY objects, walk finds " + std::to_string(n.memory_objects));
        }
        if (node->disk_objects.load() != n.disk_objects || node->disk_used.load() != n.disk_bytes) {
            fail(who + " counts " + std::to_string(node->disk_objects.load()) + " disk objects / " +
                 std::to_string(node->disk_used.load()) + " bytes, walk finds " +
                 std::to_string(n.disk_objects) + " / " + std::to_string(n.disk_bytes));
        }
        // The node's own figures (its last ReportNodeHealth) against the master's, when they
        // can be compared: no disk deletes on their way to the node, and no change on the
        // master since the report (the node reports at every heartbeat).
        if (node->health_reported.load()) {
            const uint64_t own_used = node->reported_disk_used.load();
            const uint64_t own_objects = node->reported_disk_objects.load();
            const bool deletes_in_flight = node->DiskDeletesInFlight();
            const bool current = node->disk_used_at_report.load() == node->disk_used.load() &&
                                 node->disk_objects_at_report.load() == node->disk_objects.load();
            if (!deletes_in_flight && current &&
                (own_objects != node->disk_objects.load() || own_used != node->disk_used.load())) {
                fail(who + " LOCAL_DISK drift: the master counts " +
                     std::to_string(node->disk_objects.load()) + " objects / " +
                     std::to_string(node->disk_used.load()) + " bytes, the node holds " +
                     std::to_string(own_objects) + " / " + std::to_string(own_used));
            }
            if (const uint64_t bad = node->reported_corruptions.load(); bad > 0) {
                fail(who + " met " + std::to_string(bad) +
                     " disk corruption events since it started (its log names them; "
                     "mooncake_disk_corruption_total)");
            }
        }
        tally.erase(node->id);
    }
    for (const auto& [id, n] : tally) {
        if (n.segment_bytes + n.disk_objects + n.memory_objects > 0) {
            fail("replicas on node " + std::to_string(id) + ", which is not live");
        }
    }

    const StoreMetrics& m = metrics_;
    const double promotion_ended = m.promotion_completed.Value() + m.promotion_failed_alloc.Value() +
                                   m.promotion_failed_io.Value() + m.promotion_cancelled.Value() +
                                   m.promotion_expired.Value();
    if (m.promotion_queued.Value() != promotion_ended + m.promotion_in_flight.Value()) {
        fail("promotion funnel: queued " + Num(m.promotion_queued.Value()) + " != ended " +
             Num(promotion_ended) + " + in flight " + Num(m.promotion_in_flight.Value()));
    }
    // Each attempt adds to its outcome's counter, then to attempts: on a busy store a walk
    // may land between the two (run it quiet, as the rest of this check).
    double attempt_outcomes = 0;
    for (size_t o = 0; o < kAttemptOutcomes; ++o) {
        attempt_outcomes += m.PromotionOutcomeCounter(static_cast<PromotionOutcome>(o)).Value();
    }
    if (m.promotion_attempts.Value() != attempt_outcomes) {
        fail("promotion attempts " + Num(m.promotion_attempts.Value()) +
             " != the sum of their outcomes " + Num(attempt_outcomes));
    }
    if (m.promotion_in_flight.Value() != static_cast<double>(t.promotion_tasks)) {
        fail("promotion_in_flight " + Num(m.promotion_in_flight.Value()) + " != tasks " +
             std::to_string(t.promotion_tasks));
    }
    const double offload_ended = m.offload_completed.Value() + m.offload_failed.Value() +
                                 m.offload_cancelled.Value();
    if (m.offload_queued.Value() != offload_ended + m.offload_in_flight.Value()) {
        fail("offload funnel: queued " + Num(m.offload_queued.Value()) + " != ended " +
             Num(offload_ended) + " + in flight " + Num(m.offload_in_flight.Value()));
    }
    if (m.offload_in_flight.Value() != static_cast<double>(t.offload_tasks)) {
        fail("offload_in_flight " + Num(m.offload_in_flight.Value()) + " != tasks " +
             std::to_string(t.offload_tasks));
    }
    if (dram_.evict_pending_bytes() != evict_pending) {
        fail("evict pending bytes " + std::to_string(dram_.evict_pending_bytes()) +
             " != walk " + std::to_string(evict_pending));
    }
    if (offload_.clean_pending_bytes() != clean_pending) {
        fail("clean pending bytes " + std::to_string(offload_.clean_pending_bytes()) +
             " != walk " + std::to_string(clean_pending));
    }
    if (promotion_.bytes_in_flight() != t.promotion_in_flight_bytes) {
        fail("promotion bytes in flight " + std::to_string(promotion_.bytes_in_flight()) +
             " != walk " + std::to_string(t.promotion_in_flight_bytes));
    }
    if (table_.live() != t.objects) {
        fail("objects gauge " + std::to_string(table_.live()) + " != walk " +
             std::to_string(t.objects));
    }
    if (memory_objects_.load() != memory_objects) {
        fail("memory_objects gauge " + std::to_string(memory_objects_.load()) + " != walk " +
             std::to_string(memory_objects));
    }
    for (const TenantRow& row : tenants_.Rows()) {
        TenantRow walked;
        if (auto it = tenant_tally.find(row.tenant); it != tenant_tally.end()) walked = it->second;
        if (row.memory_objects != walked.memory_objects || row.memory_bytes != walked.memory_bytes ||
            row.disk_objects != walked.disk_objects || row.disk_bytes != walked.disk_bytes) {
            fail("tenant '" + row.tenant + "' counts " + std::to_string(row.memory_objects) +
                 " MEMORY replicas / " + std::to_string(row.memory_bytes) + " bytes and " +
                 std::to_string(row.disk_objects) + " LOCAL_DISK / " +
                 std::to_string(row.disk_bytes) + " bytes, walk finds " +
                 std::to_string(walked.memory_objects) + " / " +
                 std::to_string(walked.memory_bytes) + " and " +
                 std::to_string(walked.disk_objects) + " / " + std::to_string(walked.disk_bytes));
        }
        tenant_tally.erase(row.tenant);
    }
    for (const auto& [tenant, walked] : tenant_tally) {
        if (walked.memory_objects + walked.disk_objects > 0) {
            fail("tenant '" + tenant + "' holds replicas its ledger never counted");
        }
    }
    report.objects = t.objects;
    report.dram_used = t.dram_used;
    report.dram_allocated = t.dram_allocated;
    report.pins = t.pins;
    report.promotion_tasks = t.promotion_tasks;
    report.offload_tasks = t.offload_tasks;
    return report;
}

}  // namespace mooncake
