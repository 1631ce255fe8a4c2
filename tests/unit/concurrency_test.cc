// Issue 2 (and 3, 4): threads putting, getting and removing — with and without a node doing
// offload and promotion work at the same time. After join: DRAM used = sum of live
// allocations, no pins, no tasks, the funnels hold. Deterministic in outcome (the checks do
// not depend on the interleaving); no sleeps.
#include <atomic>
#include <functional>
#include <future>
#include <random>
#include <thread>

#include "tests/unit/store_test_util.h"

namespace mooncake::testing {
namespace {

class ConcurrencyTest : public StoreFixture {
public:
    // Start every thread at once.
    static void RunThreads(int n, const std::function<void(int)>& body) {
        std::atomic<int> ready{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < n; ++t) {
            threads.emplace_back([&, t] {
                ready.fetch_add(1);
                while (ready.load() < n) std::this_thread::yield();
                body(t);
            });
        }
        for (auto& t : threads) t.join();
    }

    // A client's random mix over a shared key space. Every outcome must be one the rules allow.
    void ClientOps(int seed, int ops, int keys, std::atomic<int>& bad) {
        std::mt19937 rng(static_cast<unsigned>(seed));
        for (int i = 0; i < ops; ++i) {
            const std::string key = "k" + std::to_string(rng() % keys);
            const int op = static_cast<int>(rng() % 100);
            if (op < 40) {
                uint64_t size = 1 + rng() % (3 * kObject);
                Result<PutStartReply> start = store().PutStart(100 + seed, key, size);
                if (!start.ok()) {
                    StatusCode c = start.status().code();
                    if (c != StatusCode::kAlreadyExists && c != StatusCode::kNoSpace) {
                        ADD_FAILURE() << key << ": " << start.status().ToString();
                        ++bad;
                    }
                    continue;
                }
                Status end = (op < 35) ? store().PutEnd(100 + seed, key, start->generation)
                                       : store().PutRevoke(100 + seed, key, start->generation);
                // Another thread may have removed the put meanwhile (and put the key again).
                if (!end.ok() && !end.Is(StatusCode::kNotFound) &&
                    !end.Is(StatusCode::kStaleGeneration)) {
                    ADD_FAILURE() << key << ": " << end.ToString();
                    ++bad;
                }
            } else if (op < 85) {
                Result<ObjectView> got = store().GetReplicaList(key);
                if (got.ok()) {
                    if (got->replicas.empty()) ++bad;
                    for (const ReplicaDesc& r : got->replicas) {
                        if (r.state != ReplicaState::kComplete) ++bad;  // never PROCESSING
                    }
                    if (got->replicas.size() == 2 && got->replicas[0].tier != Tier::kMemory) {
                        ++bad;  // MEMORY first
                    }
                } else if (!got.status().Is(StatusCode::kNotFound) &&
                           !got.status().Is(StatusCode::kNotReady)) {
                    ADD_FAILURE() << key << ": " << got.status().ToString();
                    ++bad;
                }
            } else {
                Status removed = store().Remove(key);
                if (!removed.ok() && !removed.Is(StatusCode::kNotFound)) {
                    ADD_FAILURE() << key << ": " << removed.ToString();
                    ++bad;
                }
            }
        }
    }

    // The node's work loop: every task handed out is finished (mostly success, some failures).
    void NodeWork(NodeId node, std::atomic<bool>& stop, std::atomic<int>& bad, int seed) {
        std::mt19937 rng(static_cast<unsigned>(seed));
        while (!stop.load()) {
            for (const OffloadTask& t :
                 store().OffloadObjectHeartbeat(node, 64, std::chrono::milliseconds(1))) {
                Status s = rng() % 10 == 0 ? store().NotifyOffloadFailure(node, t.key, t.generation)
                                           : store().NotifyOffloadSuccess(node, t.key, t.generation);
                if (!s.ok() && !s.Is(StatusCode::kNotFound) && !s.Is(StatusCode::kStaleGeneration)) {
                    ++bad;
                }
            }
            for (const PromotionTask& t : store().PromotionObjectHeartbeat(node, 64)) {
                Result<ReplicaDesc> staged =
                    store().PromotionAllocStart(node, t.key, t.generation, t.size);
                for (int tries = 0; !staged.ok() && staged.status().Is(StatusCode::kNotReady) &&
                                    tries < 3;
                     ++tries) {
                    for (const OffloadTask& o : store().OffloadObjectHeartbeat(node, 64)) {
                        (void)store().NotifyOffloadSuccess(node, o.key, o.generation);
                    }
                    staged = store().PromotionAllocStart(node, t.key, t.generation, t.size);
                }
                Status s;
                if (staged.ok() && rng() % 10 != 0) {
                    s = store().NotifyPromotionSuccess(node, t.key, t.generation);
                } else if (staged.ok() || staged.status().Is(StatusCode::kNotReady)) {
                    s = store().NotifyPromotionFailure(node, t.key, t.generation);
                }
                if (!s.ok() && !s.Is(StatusCode::kNotFound) && !s.Is(StatusCode::kStaleGeneration)) {
                    ++bad;
                }
            }
        }
    }

    void ExpectSettled() {
        MasterStore::Totals t = store().ComputeTotals();
        EXPECT_EQ(t.dram_used, t.dram_allocated);
        EXPECT_LE(t.dram_used, t.dram_capacity);
        // Every object still there is readable; the object gauges agree with a walk.
        uint64_t memory = 0;
        ListOptions all;
        all.limit = 1 << 20;
        for (const ObjectView& v : store().List(all)) {
            EXPECT_FALSE(v.replicas.empty()) << v.key;
            memory += v.HasComplete(Tier::kMemory);
        }
        EXPECT_EQ(Metric("memory_objects"), static_cast<double>(memory));
        EXPECT_EQ(Metric("objects"), static_cast<double>(t.objects));
        EXPECT_EQ(store().Nodes()[0].memory_objects, memory);
        ExpectInvariants();
        // And everything can be taken back to zero.
        store().RemoveByPrefix("", /*force=*/true);
        EXPECT_EQ(store().ComputeTotals().dram_used, 0u);
        EXPECT_EQ(store().ComputeTotals().objects, 0u);
        EXPECT_EQ(store().Nodes()[0].disk_used, 0u);
        ExpectInvariants();
    }
};

TEST_F(ConcurrencyTest, PutGetRemoveFromManyThreadsKeepsTheBooks) {
    config_.Set("enable_offload", "false").ok();
    AddNode("n1", 128 * kObject);
    std::atomic<int> bad{0};
    RunThreads(4, [&](int t) { ClientOps(t, 6000, 300, bad); });
    EXPECT_EQ(bad.load(), 0);
    ExpectSettled();
}

// Clients, a node doing offload and promotion work, and the daemon's maintenance tick, all at
// once; a small DRAM so that eviction, offload and promotion happen all the time.
TEST_F(ConcurrencyTest, ClientsNodeWorkAndTicksTogetherLeakNothing) {
    config_.Set("promotion_admission_threshold", "1").ok();
    config_.Set("promotion_compare_victims", "false").ok();
    config_.Set("client_live_ttl_sec", "86400").ok();
    config_.Set("eviction_watermark_drop", "true").ok();
    NodeId node = AddNode("n1", 48 * kObject);
    std::atomic<int> bad{0};
    std::atomic<bool> stop{false};
    std::atomic<int> clients_done{0};
    RunThreads(4, [&](int t) {
        if (t == 0) {
            NodeWork(node, stop, bad, 7);
        } else if (t == 1) {
            while (!stop.load()) {  // the daemon's ticker; 1 ms of virtual time per round
                clock_.Advance(std::chrono::milliseconds(1));
                (void)store().Heartbeat(node);
                store().Tick();
                if (clients_done.load() == 2) stop.store(true);
                std::this_thread::yield();
            }
        } else {
            ClientOps(t, 4000, 200, bad);
            clients_done.fetch_add(1);
        }
    });
    EXPECT_EQ(bad.load(), 0);
    EXPECT_GT(Metric("offload_completed_total"), 0);
    EXPECT_GT(Metric("promotion_completed_total"), 0);
    Drain(node);
    ExpectSettled();
}

TEST_F(ConcurrencyTest, RacingPutsOfOneKeyHaveOneWinner) {
    AddNode("n1", 64 * kObject);
    for (int round = 0; round < 50; ++round) {
        const std::string key = "k" + std::to_string(round);
        std::atomic<int> won{0};
        RunThreads(4, [&](int t) {
            Result<PutStartReply> start = store().PutStart(t + 1, key, kObject);
            if (start.ok()) {
                ++won;
                EXPECT_TRUE(store().PutEnd(t + 1, key, start->generation).ok());
            } else {
                EXPECT_EQ(start.status().code(), StatusCode::kAlreadyExists);
            }
        });
        EXPECT_EQ(won.load(), 1);
    }
    EXPECT_EQ(DramUsed(), 50 * kObject);
    ExpectInvariants();
}

// Puts into a full DRAM wait for offloads (offload on evict) that a node thread completes as
// they come: every Put succeeds, none gives up.
TEST_F(ConcurrencyTest, PutsUnderPressureWaitWhileANodeDrainsOffloads) {
    config_.Set("put_wait_for_offload_ms", "60000").ok();
    NodeId node = AddNode("n1", 16 * kObject);
    std::atomic<int> failed{0};
    std::atomic<int> putters_done{0};
    RunThreads(3, [&](int t) {
        if (t == 0) {
            while (putters_done.load() < 2) {
                for (const OffloadTask& o :
                     store().OffloadObjectHeartbeat(node, 8, std::chrono::milliseconds(2))) {
                    if (!store().NotifyOffloadSuccess(node, o.key, o.generation).ok()) ++failed;
                }
            }
            return;
        }
        for (int i = 0; i < 150; ++i) {
            const std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
            Result<PutStartReply> start = store().PutStart(t, key, kObject);
            if (!start.ok()) {
                ADD_FAILURE() << key << ": " << start.status().ToString();
                ++failed;
                continue;
            }
            if (!store().PutEnd(t, key, start->generation).ok()) ++failed;
        }
        putters_done.fetch_add(1);
    });
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(Metric("puts_total"), 300);
    RunOffloads(node);
    // DRAM stays full: waiters do not evict more than they need between them. (Before the
    // fix in AllocateWithEviction a waiter that lost the freed room queued another victim on
    // every wake-up; runs ended with as little as 1 of 16 objects in DRAM. After: 500 of 500
    // runs ended full; one object of slack is allowed for the last race.)
    EXPECT_GE(DramUsed(), 15 * kObject);
    ExpectInvariants();
}

}  // namespace
}  // namespace mooncake::testing
