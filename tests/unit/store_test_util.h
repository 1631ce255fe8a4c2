// Shared fixture pieces for MasterStore tests: a store on a ManualClock with nodes whose
// offload/promotion work the real NodeWorker does at once, and invariant checks.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/node/bookkeeping_node.h"
#include "core/base/clock.h"
#include "core/base/knobs.h"
#include "core/master/local_master_link.h"
#include "core/master/master_store.h"
#include "core/base/metrics.h"
#include "core/node/node_worker.h"

namespace mooncake::testing {

class StoreFixture : public ::testing::Test {
public:  // tests drive the fixture from helper functions too
    static constexpr uint64_t kObject = 4096;
    static constexpr size_t kNodeBatch = size_t{1} << 20;

    void SetUp() override {
        config_.Set("put_wait_for_offload_ms", "0").ok();
        config_.Set("default_kv_lease_ttl", "0").ok();
    }

    MasterStore& store() {
        if (!store_) store_ = std::make_unique<MasterStore>(config_, clock_, metrics_, 7);
        return *store_;
    }

    NodeId AddNode(const std::string& name, uint64_t dram, uint64_t disk = 1ull << 30) {
        Result<NodeId> id = store().RegisterNode({name, name + ":data", dram, disk});
        EXPECT_TRUE(id.ok()) << id.status().ToString();
        return id.ok() ? *id : kNoNode;
    }

    // PutStart + PutEnd; returns the generation.
    Generation Put(const std::string& key, uint64_t size = kObject, NodeId preferred = kNoNode) {
        Result<PutStartReply> start = store().PutStart(1, key, size, preferred);
        EXPECT_TRUE(start.ok()) << key << ": " << start.status().ToString();
        if (!start.ok()) return kNoGeneration;
        Status end = store().PutEnd(1, key, start->generation);
        EXPECT_TRUE(end.ok()) << end.ToString();
        return start->generation;
    }

    // The node's work, done at once by the real NodeWorker (core/node/node_worker.h) over seams
    // that hold no bytes (core/node/bookkeeping_node.h): offloads succeed, promotions stage and
    // commit; a staging the master answers NotReady runs the node's offloads and asks again.
    // A fresh worker per call, on whatever store() is now (tests restart the master).
    NodeWorker::Ran RunNodeWork(NodeId node, bool offloads) {
        LocalMasterLink::Hooks hooks;
        hooks.data_address_of = [this](NodeId id) {
            for (const NodeInfo& n : store().Nodes()) {
                if (n.id == id) return n.spec.data_address;
            }
            return std::string();
        };
        LocalMasterLink link(store(), std::move(hooks));
        BookkeepingSegment segment;
        BookkeepingDisk disk;
        BookkeepingPeers peers;
        NodeWorkerOptions options;
        options.room_wait = NodeWorkerOptions::RoomWait::kRunOffloads;
        options.inline_offload_batch = kNodeBatch;
        NodeWorker worker(std::move(options), link, segment, &disk, &peers, clock_,
                          metrics_);
        worker.Attach(node);
        return offloads ? worker.RunOffloads(kNodeBatch) : worker.RunPromotions(kNodeBatch);
    }
    // Offload tasks handed out (each must be taken by the master).
    size_t RunOffloads(NodeId node) {
        NodeWorker::Ran ran = RunNodeWork(node, /*offloads=*/true);
        EXPECT_EQ(ran.done, ran.tasks) << "offloads the master refused";
        return ran.tasks;
    }
    // Promotions committed.
    size_t RunPromotions(NodeId node) { return RunNodeWork(node, /*offloads=*/false).done; }

    // A LOCAL_DISK-only object on `node`'s disk, the way real ones get there: put into the
    // node's DRAM, evicted (offload on evict), the node writes it. Runs every offload the node
    // has queued. Needs enable_offload (the default).
    Generation PutOnDisk(const std::string& key, NodeId node, uint64_t size = kObject) {
        Generation generation = Put(key, size, node);
        Result<ManualOutcome> evicted = store().Evict(key);
        EXPECT_TRUE(evicted.ok() && *evicted == ManualOutcome::kQueued)
            << key << ": " << evicted.status().ToString();
        RunOffloads(node);
        EXPECT_EQ(TiersOf(key), std::vector<Tier>{Tier::kLocalDisk}) << key;
        return generation;
    }

    // A LOCAL_DISK-only object adopted from a node's disk report (no DRAM involved).
    void AdoptOnDisk(NodeId node, const std::string& key, Generation generation,
                     uint64_t size = kObject) {
        std::vector<DiskReplicaReport> reports{{key, generation, size}};
        Result<std::vector<Status>> out = store().RegisterDiskReplicas(node, reports);
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        ASSERT_TRUE((*out)[0].ok()) << (*out)[0].ToString();
    }

    // A reader's Get; the status code (kOk when found).
    StatusCode Get(const std::string& key) { return store().GetReplicaList(key).status().code(); }

    // Runs offloads and promotions until the node has none left.
    void Drain(NodeId node) {
        while (RunOffloads(node) + RunPromotions(node) > 0) {
        }
    }

    // Sum of the pins of the key's replicas (0 when the key is gone).
    uint64_t PinsOf(const std::string& key) {
        Result<ObjectView> view = store().Stat(key);
        uint64_t pins = 0;
        if (view.ok()) {
            for (const ReplicaDesc& r : view->replicas) pins += r.pins;
        }
        return pins;
    }

    double Failed(const std::string& reason) {
        return Metric("promotion_failed_total", {{"reason", reason}});
    }

    // The allocator's view, summed over live nodes (cheap: no walk over the objects).
    uint64_t DramUsed() {
        uint64_t used = 0;
        for (const NodeInfo& n : store().Nodes()) used += n.segment_used;
        return used;
    }

    // The nodes of the key's COMPLETE MEMORY replicas, in the master's order (Stat: not a
    // read, so nothing moves).
    std::vector<NodeId> MemoryNodes(const std::string& key) {
        std::vector<NodeId> out;
        Result<ObjectView> view = store().Stat(key);
        if (!view.ok()) return out;
        for (const ReplicaDesc& r : view->replicas) {
            if (r.tier == Tier::kMemory && r.state == ReplicaState::kComplete) {
                out.push_back(r.node);
            }
        }
        return out;
    }

    // A reader's Get of the metadata (lease, recency, promotion trigger); result not needed.
    void Read(const std::string& key) { (void)store().GetReplicaList(key); }

    std::vector<Tier> TiersOf(const std::string& key) {
        Result<ObjectView> view = store().Stat(key);
        return view.ok() ? view->CompleteTiers() : std::vector<Tier>{};
    }

    double Metric(const std::string& name, const Labels& labels = {}) {
        return metrics_.Value(name, labels).value_or(-1);
    }

    // DRAM used = sum of live allocations; pins and tasks as expected; the funnel holds.
    void ExpectInvariants(uint64_t expected_pins = 0, uint64_t expected_tasks = 0) {
        // The store's own check (what `mooncakectl check` runs) must agree with the walk here.
        InvariantReport report = store().CheckInvariants();
        std::string violations;
        for (const std::string& v : report.violations) violations += "\n  " + v;
        EXPECT_TRUE(report.ok()) << "CheckInvariants:" << violations;
        MasterStore::Totals t = store().ComputeTotals();
        EXPECT_EQ(t.dram_used, t.dram_allocated);
        EXPECT_EQ(t.pins, expected_pins);
        EXPECT_EQ(t.promotion_tasks + t.offload_tasks, expected_tasks);
        double queued = Metric("promotion_queued_total");
        double ended = Metric("promotion_completed_total") +
                       Metric("promotion_failed_total", {{"reason", "alloc_failed"}}) +
                       Metric("promotion_failed_total", {{"reason", "io_failed"}}) +
                       Metric("promotion_cancelled_total") + Metric("promotion_expired_total") +
                       Metric("promotion_in_flight");
        EXPECT_EQ(queued, ended) << "promotion funnel invariant";
        EXPECT_EQ(Metric("promotion_in_flight"), static_cast<double>(t.promotion_tasks));
        // The same funnel for offloads.
        EXPECT_EQ(Metric("offload_queued_total"),
                  Metric("offload_completed_total") + Metric("offload_failed_total") +
                      Metric("offload_cancelled_total") + Metric("offload_in_flight"))
            << "offload funnel invariant";
        EXPECT_EQ(Metric("offload_in_flight"), static_cast<double>(t.offload_tasks));
        // The gauges kept incrementally agree with a walk over everything.
        EXPECT_EQ(Metric("objects"), static_cast<double>(t.objects));
        EXPECT_EQ(Metric("dram_used_bytes"), static_cast<double>(t.dram_used));
        EXPECT_EQ(Metric("promotion_in_flight_bytes"),
                  static_cast<double>(t.promotion_in_flight_bytes));
        size_t reporting = 0;
        for (const NodeInfo& n : store().Nodes()) reporting += n.reporting;
        EXPECT_EQ(Metric("nodes_reporting"), static_cast<double>(reporting));
        ListOptions all;
        all.limit = size_t{1} << 30;
        // An object with copies (PutConfig::replicas) is one of the gauge's objects and one of
        // each holding node's.
        uint64_t memory_objects = 0, memory_copies = 0, disk_bytes = 0, disk_objects = 0;
        for (const ObjectView& v : store().List(all)) {
            memory_objects += v.HasComplete(Tier::kMemory);
            for (const ReplicaDesc& r : v.replicas) {
                if (r.tier == Tier::kMemory && r.state == ReplicaState::kComplete) ++memory_copies;
                if (r.tier == Tier::kLocalDisk) {
                    disk_bytes += DiskFootprint(v.size);  // whole blocks, as the node allocates
                    ++disk_objects;
                }
            }
        }
        uint64_t node_memory_objects = 0, node_disk_bytes = 0, node_disk_objects = 0;
        for (const NodeInfo& n : store().Nodes()) {
            node_memory_objects += n.memory_objects;
            node_disk_bytes += n.disk_used;
            node_disk_objects += n.disk_objects;
        }
        EXPECT_EQ(Metric("memory_objects"), static_cast<double>(memory_objects));
        EXPECT_EQ(node_memory_objects, memory_copies);
        EXPECT_EQ(node_disk_bytes, disk_bytes);
        EXPECT_EQ(node_disk_objects, disk_objects);
    }

    Config config_;
    ManualClock clock_;
    MetricsRegistry metrics_;
    std::unique_ptr<MasterStore> store_;
};

}  // namespace mooncake::testing
