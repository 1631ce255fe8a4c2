// Resource exhaustion scenarios (issue #12): a full LOCAL_DISK, DRAM where every object is
// leased (under lease_blocks_eviction) or pinned, and a disk slower than the task timeouts. Real processes (a master and a
// node, the node `mooncaked-fault` where a fault point is needed); each scenario ends with
// SettleAndCheck: invariants clean (DRAM used == live allocations, no pins, no tasks, funnels
// balanced) and every acknowledged key read back byte-identical, or NotFound by the rule below.
//
// Rule for a key that may be missing: it was acknowledged, then its only copy left the store
// the documented way (a LOCAL_DISK record evicted from a full disk, reported by the node, so
// the master removed the object). Which keys that was is taken from the master's view after
// settling; the check is that the master's view and the bytes agree (never other bytes).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <thread>

#include "gtest/gtest.h"
#include "tests/fault/fault_util.h"

namespace mooncake::test {
namespace {

constexpr size_t kKiB = 1024;
using Clock = std::chrono::steady_clock;

// survives := the master lists a COMPLETE replica now (see the rule at the top).
size_t SurvivesByMasterView(Client& client, std::vector<WrittenKey>& keys) {
    size_t gone = 0;
    for (WrittenKey& k : keys) {
        auto info = client.Stat(k.key);
        k.survives = info.ok() && (HasTier(*info, Tier::kMemory) || HasTier(*info, Tier::kLocalDisk));
        if (!info.ok()) {
            EXPECT_TRUE(info.status().Is(StatusCode::kNotFound)) << k.key;
        }
        gone += !k.survives;
    }
    return gone;
}

// A Put refused for lack of room: a clear NoSpace (or the bounded wait running out).
void ExpectRefusedForSpace(const Status& st, const std::string& key) {
    EXPECT_TRUE(st.Is(StatusCode::kNoSpace) || st.Is(StatusCode::kTimeout))
        << key << ": want NoSpace, got " << st.ToString();
    EXPECT_FALSE(st.message().empty()) << key;
}

// Tiny LOCAL_DISK, puts far beyond DRAM + disk: each Put is acknowledged (and then readable,
// or gone by disk eviction as the master records) or refused with NoSpace; an offload that
// cannot fit fails cleanly; removing everything returns DRAM and disk use to zero.
TEST(ResourcesFaultTest, DiskFull) {
    Cluster c({"--promotion_on_hit=false", "--put_wait_for_offload_ms=1000"});
    ASSERT_NE(c.client, nullptr);
    c.AddNode("6MiB", false, {"--disk_dir=" + c.dir.Sub("disk"), "--disk_size=4MiB"});
    ASSERT_TRUE(c.WaitForNodes(1));
    auto nodes = c.client->Nodes();
    ASSERT_TRUE(nodes.ok() && nodes->size() == 1);
    const uint64_t disk_capacity = (*nodes)[0].spec.disk_capacity;
    ASSERT_GT(disk_capacity, 0u);

    Figures f;
    const size_t n = 56, size = 256 * kKiB;  // 14 MiB into 6 MiB DRAM + 4 MiB disk (its minimum)
    std::vector<WrittenKey> keys;
    size_t refused = 0;
    for (size_t i = 0; i < n; ++i) {
        WrittenKey k{"full/" + std::to_string(i), 1000 + i, size, true};
        auto started = Clock::now();
        Status st = c.client->Put(k.key, Pattern(k.seed, k.size));
        ++f.operations;
        EXPECT_LT(Clock::now() - started, std::chrono::seconds(20)) << k.key << " hung";
        if (st.ok()) {
            keys.push_back(k);
        } else {
            ExpectRefusedForSpace(st, k.key);
            ++refused;
        }
        // The master never believes the disk holds more than it can.
        auto now = c.client->Nodes();
        ASSERT_TRUE(now.ok() && now->size() == 1);
        EXPECT_LE((*now)[0].disk_used, disk_capacity);
    }
    EXPECT_GE(keys.size(), 20u) << "not even DRAM's worth of puts was acknowledged";

    // A value that fits DRAM but not the disk: its offload fails, the object stays in MEMORY.
    const double failed_before = MasterMetric(*c.client, "mooncake_offload_failed_total");
    const size_t big_size = static_cast<size_t>(disk_capacity) + 64 * kKiB;
    ASSERT_LT(big_size, 6u * 1024 * kKiB);
    WrittenKey big{"full/big", 7777, big_size, true};
    Status st = c.client->Put(big.key, Pattern(big.seed, big.size));
    ++f.operations;
    if (st.ok()) {
        keys.push_back(big);
        std::vector<std::string> one{big.key};
        auto outcome = c.client->Offload(one);
        ++f.operations;
        ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
        if ((*outcome)[0].status.ok()) {
            EXPECT_TRUE(WaitFor(
                [&] {
                    return MasterMetric(*c.client, "mooncake_offload_failed_total") >
                           failed_before;
                },
                std::chrono::seconds(20)))
                << "an offload larger than the disk did not fail";
            ++f.faults;
        }
        auto info = c.client->Stat(big.key);
        ASSERT_TRUE(info.ok());
        EXPECT_TRUE(HasTier(*info, Tier::kMemory));
        EXPECT_FALSE(HasTier(*info, Tier::kLocalDisk));
    } else {
        ExpectRefusedForSpace(st, big.key);
    }

    // Offloads still in flight may yet drop a MEMORY copy and the full disk evict the record:
    // the master's view is final only once nothing is in flight.
    WaitSettled(*c.client, "disk full", std::chrono::seconds(30));
    const size_t gone = SurvivesByMasterView(*c.client, keys);
    f.keys = keys.size();
    f.operations += SettleAndCheck(*c.client, keys, "disk full", std::chrono::seconds(30));
    f.faults += refused + gone;
    std::printf("[ figures  ] disk full: %zu puts, %zu acknowledged, %zu refused NoSpace, "
                "%zu evicted from the full disk\n",
                n + 1, keys.size(), refused, gone);
    f.Print("disk full");

    // Nothing leaks: with every key removed, DRAM and disk use return to zero.
    for (const WrittenKey& k : keys) (void)c.client->Remove(k.key, true);
    EXPECT_TRUE(WaitFor(
        [&] {
            auto now = c.client->Nodes();
            auto report = c.client->CheckInvariants();
            return now.ok() && now->size() == 1 && (*now)[0].segment_used == 0 &&
                   (*now)[0].disk_used == 0 && report.ok() && report->ok() &&
                   report->objects == 0 && report->dram_used == 0;
        },
        std::chrono::seconds(20)))
        << "DRAM or disk still in use after removing every key";
}

// DRAM full of objects that are all leased (read leases that block eviction, under
// lease_blocks_eviction) and then all pinned (offload sources held at disk.write): a Put fails
// with a clear NoSpace within its bounded wait, never hangs and never corrupts; once the
// offloads are let go everything drains and Puts succeed.
TEST(ResourcesFaultTest, DramExhaustedByPinnedObjects) {
    Cluster c({"--default_kv_lease_ttl=3000", "--lease_blocks_eviction=true",
               "--put_wait_for_offload_ms=1000", "--promotion_on_hit=false"});
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    UseFaultNodes(c, faults, "disk.write=hold");
    c.AddNode("1MiB", true);
    ASSERT_TRUE(c.WaitForNodes(1));
    Figures f;

    // 8 x 128 KiB fill the 1 MiB segment; a reader's GetReplicaList of each takes a 3 s lease.
    const size_t size = 128 * kKiB;
    std::vector<WrittenKey> keys = PutKeys(*c.client, "pinned/", 8, size, 2000);
    f.operations += keys.size();
    auto first_lease = Clock::now();
    for (const WrittenKey& k : keys) {
        EXPECT_TRUE(c.client->GetReplicaList(k.key).ok()) << k.key;
        ++f.operations;
    }
    auto started = Clock::now();
    Status st = c.client->Put("pinned/extra-leased", Pattern(1, size));
    ++f.operations;
    EXPECT_LT(Clock::now() - started, std::chrono::seconds(10)) << "a Put against leases hung";
    if (Clock::now() - first_lease < std::chrono::milliseconds(2900)) {
        // Every object was leased for the whole call: nothing could be evicted.
        EXPECT_FALSE(st.ok()) << "a Put evicted a leased object";
        if (!st.ok()) ExpectRefusedForSpace(st, "pinned/extra-leased");
        ++f.faults;
    } else if (st.ok()) {
        keys.push_back({"pinned/extra-leased", 1, size, true});  // too slow a box to tell
    }

    // Leases gone; now every object is pinned: an offload of each is queued (source pinned)
    // and the node holds the first at disk.write, the rest behind it.
    std::this_thread::sleep_for(std::chrono::milliseconds(3200));
    auto queued = c.client->Offload(Names(keys));
    ++f.operations;
    ASSERT_TRUE(queued.ok()) << queued.status().ToString();
    EXPECT_TRUE(faults.WaitReached("disk.write"));
    uint64_t pins = 0;
    EXPECT_TRUE(WaitFor([&] {
        auto report = c.client->CheckInvariants();
        pins = report.ok() ? report->pins : 0;
        return pins >= keys.size();
    })) << "pins " << pins << ", want one per object in DRAM";
    f.faults += keys.size();
    for (int i = 0; i < 3; ++i) {
        std::string key = "pinned/extra-" + std::to_string(i);
        started = Clock::now();
        st = c.client->Put(key, Pattern(3000 + i, size));
        ++f.operations;
        EXPECT_LT(Clock::now() - started, std::chrono::seconds(10)) << key << " hung";
        EXPECT_FALSE(st.ok()) << key << " was stored although every object is pinned";
        if (st.ok()) {
            keys.push_back({key, static_cast<uint64_t>(3000 + i), size, true});
        } else {
            ExpectRefusedForSpace(st, key);
        }
    }
    // Reads still work while pinned, with the right bytes.
    for (const WrittenKey& k : keys) {
        auto got = c.client->Get(k.key);
        ++f.operations;
        ASSERT_TRUE(got.ok()) << k.key << ": " << got.status().ToString();
        EXPECT_TRUE(*got == Pattern(k.seed, k.size)) << k.key;
    }

    // Let the offloads go: DRAM drains to disk and a Put succeeds again.
    faults.Release("disk.write");
    WrittenKey after{"pinned/after-release", 5000, size, true};
    EXPECT_TRUE(WaitFor(
        [&] {
            Status s = c.client->Put(after.key, Pattern(after.seed, after.size));
            return s.ok();
        },
        std::chrono::seconds(20)))
        << "Puts still fail after the offloads were released";
    keys.push_back(after);
    f.keys = keys.size();
    f.operations += SettleAndCheck(*c.client, keys, "DRAM pinned", std::chrono::seconds(30));
    f.Print("DRAM exhausted by pins and leases");
}

// A disk slower than the task timeouts: promotion tasks expire (their late commit refused, no
// staging left), offload tasks expire (the late disk copy refused and deleted by the node: its
// local_disk_objects matches the master's view), readers still get the right bytes.
TEST(ResourcesFaultTest, SlowDiskTasksTimeOut) {
    Cluster c({"--promotion_admission_threshold=1", "--promotion_task_timeout_sec=1",
               "--offload_task_timeout_sec=60", "--put_wait_for_offload_ms=3000"});
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    UseFaultNodes(c, faults, "disk.read=sleep:2500,disk.write=sleep:1800");
    const uint16_t node_metrics = FreePort();
    c.AddNode("1MiB", true, {"--metrics_port=" + std::to_string(node_metrics)});
    ASSERT_TRUE(c.WaitForNodes(1));
    Figures f;

    // Four disk-only keys (offloads are slow but inside their 60 s timeout), two in MEMORY.
    const size_t size = 128 * kKiB;
    std::vector<WrittenKey> keys = PutKeys(*c.client, "slow/", 6, size, 6000);
    std::vector<std::string> to_disk{"slow/0", "slow/1", "slow/2", "slow/3"};
    auto evicted = c.client->Evict(to_disk);
    ASSERT_TRUE(evicted.ok()) << evicted.status().ToString();
    ASSERT_TRUE(WaitAllStat(*c.client, to_disk, DiskOnly, std::chrono::seconds(40)))
        << "slow offloads did not finish";
    f.operations += keys.size() + to_disk.size();

    // Promotion: the holder's disk read (2.5 s) outlives the 1 s task timeout.
    const double expired_before = MasterMetric(*c.client, "mooncake_promotion_expired_total");
    const double completed_before = MasterMetric(*c.client, "mooncake_promotion_completed_total");
    for (size_t i = 0; i < 2; ++i) {
        auto got = c.client->Get(to_disk[i]);  // reads the disk (slowly) and queues a promotion
        ++f.operations;
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_TRUE(*got == Pattern(6000 + i, size));
    }
    EXPECT_TRUE(WaitFor(
        [&] {
            return MasterMetric(*c.client, "mooncake_promotion_expired_total") >=
                   expired_before + 2;
        },
        std::chrono::seconds(20)))
        << "promotion tasks did not expire";
    f.faults += 2;
    // The node's late attempts are refused: nothing is committed, nothing staged.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    EXPECT_EQ(MasterMetric(*c.client, "mooncake_promotion_completed_total"), completed_before);
    for (size_t i = 0; i < 2; ++i) {
        auto info = c.client->Stat(to_disk[i]);
        ASSERT_TRUE(info.ok());
        EXPECT_TRUE(DiskOnly(*info)) << to_disk[i] << " was promoted by an expired task";
        for (const ReplicaDesc& r : info->object.replicas) {
            EXPECT_EQ(r.state, ReplicaState::kComplete) << to_disk[i] << ": staging left behind";
        }
    }
    // No more promotions for this part of the test (later reads must not queue any).
    ASSERT_TRUE(c.client->TuneSet({{"promotion_on_hit", "false"}}).ok());

    // Offload: its 1.8 s disk write outlives a 1 s timeout; the late success is refused and
    // the node deletes the record it wrote.
    ASSERT_TRUE(c.client->TuneSet({{"offload_task_timeout_sec", "1"}}).ok());
    const double cancelled_before = MasterMetric(*c.client, "mooncake_offload_cancelled_total");
    std::vector<std::string> late{"slow/4", "slow/5"};
    auto queued = c.client->Offload(late);
    ++f.operations;
    ASSERT_TRUE(queued.ok()) << queued.status().ToString();
    EXPECT_TRUE(WaitFor(
        [&] {
            return MasterMetric(*c.client, "mooncake_offload_cancelled_total") >=
                   cancelled_before + 2;
        },
        std::chrono::seconds(20)))
        << "offload tasks did not expire";
    f.faults += 2;
    // The node's disk holds exactly what the master thinks it holds (the late copies deleted).
    auto master_disk_objects = [&]() -> double {
        auto nodes = c.client->Nodes();
        return nodes.ok() && nodes->size() == 1 ? static_cast<double>((*nodes)[0].disk_objects)
                                                : -1;
    };
    EXPECT_TRUE(WaitFor(
        [&] {
            return MetricValue(NodeMetrics("127.0.0.1", node_metrics), "mooncake_local_disk_objects") ==
                   master_disk_objects();
        },
        std::chrono::seconds(15)))
        << "orphan disk records: node says "
        << MetricValue(NodeMetrics("127.0.0.1", node_metrics), "mooncake_local_disk_objects")
        << ", master says " << master_disk_objects();
    EXPECT_EQ(master_disk_objects(), 4);
    for (const std::string& k : late) {
        auto info = c.client->Stat(k);
        ASSERT_TRUE(info.ok());
        EXPECT_TRUE(HasTier(*info, Tier::kMemory));
        EXPECT_FALSE(HasTier(*info, Tier::kLocalDisk)) << k << ": an expired offload committed";
    }

    f.keys = keys.size();
    f.operations += SettleAndCheck(*c.client, keys, "slow disk", std::chrono::seconds(30));
    f.Print("slow disk");
}

}  // namespace
}  // namespace mooncake::test
