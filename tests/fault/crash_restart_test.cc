// Crash and restart scenarios (issue #12): real processes killed with SIGKILL in the middle of
// a promotion or an offload (held there by a fault point of `mooncaked-fault`), nodes restarted
// with their disks, the master restarted. Every scenario ends with SettleAndCheck: the master's
// invariants clean (DRAM used == live allocations, no pins, no tasks, funnels balanced) and
// every key read back: byte-identical if a replica survived, NotFound otherwise.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/fault/fault_util.h"

namespace mooncake::test {
namespace {

constexpr size_t kKiB = 1024;
constexpr auto kExpiry = std::chrono::seconds(15);  // node expiry (3 s TTL) on a loaded box

uint64_t Rounded(uint64_t size) { return (size + 4095) / 4096 * 4096; }

void SetSurvives(std::vector<WrittenKey>& keys, bool survives) {
    for (WrittenKey& k : keys) k.survives = survives;
}

bool AllExist(Client& client, const std::vector<WrittenKey>& keys) {
    for (const WrittenKey& k : keys) {
        if (!k.survives) continue;
        auto e = client.Exists(k.key);
        if (!e.ok() || !*e) return false;
    }
    return true;
}

// Scenarios 1 and 2: the holder of LOCAL_DISK-only keys is killed while promotions of them
// are held at `point` (sources pinned on the master, tasks delivered; with before_commit the
// staging ranges are allocated and written too). Its expiry must release every pin, task and
// staging byte; restarted with the same disk, it serves every key again, and promotes again.
void HolderKilledMidPromotion(const std::string& point) {
    Figures f;
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    UseFaultNodes(c, faults, point + "=hold");
    Cluster::NodeProcess& node = c.AddNode("4MiB", true);
    ASSERT_TRUE(c.WaitForNodes(1));

    const size_t n = 12, promoted = 6, size = 96 * kKiB + 13;
    std::vector<WrittenKey> keys = DiskOnlyKeys(*c.client, "holder/", n, size, 1000, f);
    std::vector<std::string> hot;
    for (size_t i = 0; i < promoted; ++i) hot.push_back(keys[i].key);
    ExpectAllQueued(c.client->Promote(hot));
    f.operations += promoted;
    ASSERT_TRUE(faults.WaitReached(point)) << "no promotion reached " << point;
    ++f.faults;

    // Mid-flight the bookkeeping is consistent too: each task pins exactly its source.
    auto mid = c.client->CheckInvariants();
    ASSERT_TRUE(mid.ok());
    EXPECT_TRUE(mid->ok()) << mid->violations.front();
    EXPECT_EQ(mid->promotion_tasks, promoted);
    EXPECT_EQ(mid->pins, promoted);
    if (point == "promotion.before_commit") {
        EXPECT_GE(mid->dram_used, Rounded(size));
    }

    node.daemon->Kill();
    ++f.faults;
    ASSERT_TRUE(c.WaitForNodes(0, kExpiry)) << "the killed holder was not expired";
    SetSurvives(keys, false);  // its disk was the only replica
    f.operations += SettleAndCheck(*c.client, keys, "holder killed at " + point);
    EXPECT_EQ(MasterMetric(*c.client, "mooncake_promotion_completed_total"), 0.0);
    EXPECT_EQ(MasterMetric(*c.client, "mooncake_promotion_in_flight"), 0.0);

    // Back with the same disk and no fault: the records register again, under their generation.
    node.daemon->SetEnv("MOONCAKE_FAULTS", "");
    ASSERT_TRUE(node.daemon->Start());
    ++f.faults;
    ASSERT_TRUE(c.WaitForNodes(1, kExpiry));
    SetSurvives(keys, true);
    ASSERT_TRUE(WaitFor([&] { return AllExist(*c.client, keys); }, std::chrono::seconds(10)))
        << "the restarted holder's disk records did not register again";
    f.operations += SettleAndCheck(*c.client, keys, "holder restarted after " + point);

    // And the interrupted promotions can now finish.
    ExpectAllQueued(c.client->Promote(hot));
    f.operations += promoted;
    EXPECT_TRUE(WaitAllStat(*c.client, hot, [](const ObjectInfo& i) {
        return HasTier(i, Tier::kMemory);
    })) << "promotions did not complete after the restart";
    f.operations += SettleAndCheck(*c.client, keys, "promoted after restart");
    f.Print("holder killed at " + point);
}

TEST(CrashRestartTest, HolderKilledBeforeCopy) {
    HolderKilledMidPromotion("promotion.before_copy");
}

TEST(CrashRestartTest, HolderKilledBeforeCommit) {
    HolderKilledMidPromotion("promotion.before_commit");
}

// Scenario 3: a cross-node promotion whose staging range is on node B; B is killed while the
// holder A waits before its commit. B's expiry cancels the tasks (staging freed, sources
// unpinned); A's late commit is refused and changes nothing. A's disk keeps serving the keys,
// and once B is back the same promotions land there. Run on loopback and, as root, with
// master, A and B in three network namespaces.
struct TargetKillSetup {
    Client* client = nullptr;
    Daemon* a = nullptr;         // fault build, promotion.before_commit held; 1 MiB DRAM + disk
    Daemon* b = nullptr;         // 8 MiB DRAM, no disk; not started yet
    std::string a_name, b_name;  // advertised addresses
    std::string a_metrics_host;
    uint16_t a_metrics_port = 0;
    const FaultDir* faults = nullptr;
};

NodeId IdByName(Client& client, const std::string& name) {
    auto live = client.Nodes();
    if (!live.ok()) return kNoNode;
    for (const NodeInfo& n : *live) {
        if (n.spec.name == name) return n.id;
    }
    return kNoNode;
}

void TargetKilledBeforeCommit(const TargetKillSetup& s, const std::string& label) {
    Figures f;
    Client& client = *s.client;
    ASSERT_TRUE(WaitFor([&] { return IdByName(client, s.a_name) != kNoNode; }, kExpiry));
    const size_t n = 3, size = 200 * kKiB + 5;
    std::vector<WrittenKey> keys = DiskOnlyKeys(client, "cross/", n, size, 2000, f);
    // Fill A's segment so every staging range has to go to B.
    std::vector<WrittenKey> filler = PutKeys(client, "filler/", 1, 1024 * kKiB - 8 * kKiB, 1);
    f.keys += 1;
    f.operations += 1;
    ASSERT_TRUE(s.b->Start());
    ASSERT_TRUE(WaitFor([&] { return IdByName(client, s.b_name) != kNoNode; }, kExpiry));
    const NodeId a_id = IdByName(client, s.a_name), b_id = IdByName(client, s.b_name);

    std::vector<std::string> names = Names(keys);
    ExpectAllQueued(client.Promote(names));
    f.operations += n;
    // Every staging range allocated on B (and written: A holds just before committing).
    ASSERT_TRUE(WaitFor(
        [&] {
            auto nodes = client.Nodes();
            if (!nodes.ok()) return false;
            for (const NodeInfo& info : *nodes) {
                if (info.id == b_id) return info.segment_used == n * Rounded(size);
            }
            return false;
        },
        std::chrono::seconds(10)))
        << "staging ranges did not land on B";
    ASSERT_TRUE(s.faults->WaitReached("promotion.before_commit"));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the other copies finish
    ++f.faults;

    s.b->Kill();
    ++f.faults;
    ASSERT_TRUE(WaitFor([&] { return IdByName(client, s.b_name) == kNoNode; }, kExpiry))
        << "B not expired";
    EXPECT_EQ(IdByName(client, s.a_name), a_id);
    auto after = client.CheckInvariants();
    ASSERT_TRUE(after.ok());
    EXPECT_TRUE(after->ok()) << after->violations.front();
    EXPECT_EQ(after->promotion_tasks, 0u) << "B's expiry must cancel the tasks staged on it";
    // No promotion source stays pinned. An offload of A's (its DRAM is full) may be in
    // flight and pins its own source; CheckInvariants ties every pin to a task.
    EXPECT_EQ(after->pins, after->offload_tasks) << "a promotion source stayed pinned";

    // A goes on to commit: refused (the task is gone), nothing committed, nothing leaked.
    s.faults->Release("promotion.before_commit");
    const std::string failed = "mooncake_node_promotions_total{result=\"failed\"}";
    auto a_metrics = [&] { return NodeMetrics(s.a_metrics_host, s.a_metrics_port); };
    EXPECT_TRUE(WaitFor([&] { return MetricValue(a_metrics(), failed) == n; }))
        << "A's commits did not come back refused:\n"
        << a_metrics();
    EXPECT_EQ(MasterMetric(client, "mooncake_promotion_completed_total"), 0.0);
    // Cancelled by B's expiry (a copy still in flight when B died may have reported its write
    // failure first: io_failed). Either way every task ended, none completed.
    EXPECT_EQ(MasterMetric(client, "mooncake_promotion_cancelled_total") +
                  MasterMetric(client, "mooncake_promotion_failed_total{reason=\"io_failed\"}"),
              static_cast<double>(n));
    for (const WrittenKey& k : keys) {
        auto info = client.Stat(k.key);
        ASSERT_TRUE(info.ok());
        EXPECT_TRUE(DiskOnly(*info)) << k.key << " committed to a dead node";
    }
    std::vector<WrittenKey> all = keys;
    all.insert(all.end(), filler.begin(), filler.end());
    f.operations += SettleAndCheck(client, all, label + ": promotion target killed");

    // B back (empty, same address): the promotions now complete there, through A's data
    // connections to the restarted B.
    ASSERT_TRUE(s.b->Start());
    ++f.faults;
    ASSERT_TRUE(WaitFor([&] { return IdByName(client, s.b_name) != kNoNode; }, kExpiry));
    ExpectAllQueued(client.Promote(names));
    f.operations += n;
    EXPECT_TRUE(
        WaitAllStat(client, names, [](const ObjectInfo& i) { return HasTier(i, Tier::kMemory); }));
    f.operations += SettleAndCheck(client, all, label + ": promoted to the restarted target");
    f.Print(label + ": promotion target killed");
}

TEST(CrashRestartTest, PromotionTargetKilled) {
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    UseFaultNodes(c, faults, "promotion.before_commit=hold");
    const uint16_t a_metrics = FreePort();
    Cluster::NodeProcess& a =
        c.AddNode("1MiB", true, {"--metrics_port=" + std::to_string(a_metrics)});
    // B: the release daemon, started by the scenario once A holds the keys.
    const std::string b_name = "127.0.0.1:" + std::to_string(FreePort());
    Daemon b("nodeB",
             {"--role=node", "--listen=" + b_name, "--data_port=" + std::to_string(FreePort()),
              "--master=" + c.master_address, "--metrics_port=0", "--log_level=debug",
              "--dram_size=8MiB"},
             c.dir);
    TargetKillSetup s;
    s.client = c.client.get();
    s.a = a.daemon.get();
    s.b = &b;
    s.a_name = a.name;
    s.b_name = b_name;
    s.a_metrics_host = "127.0.0.1";
    s.a_metrics_port = a_metrics;
    s.faults = &faults;
    TargetKilledBeforeCommit(s, "loopback");
}

TEST(CrashRestartTest, PromotionTargetKilledAcrossNamespaces) {
    NamespaceCluster c("crash-token");
    if (std::string why = c.Unavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(c.StartMaster({"--metrics_port=0", "--client_live_ttl_sec=3"}));
    Daemon& a = c.Node(1,
                       {"--metrics_port=7190", "--dram_size=1MiB", "--disk_dir=" + c.dir.Sub("disk1"),
                        "--disk_size=64MiB"},
                       "promotion.before_commit=hold");
    Daemon& b = c.Node(2, {"--metrics_port=7190", "--dram_size=8MiB"});
    ASSERT_TRUE(a.Start());
    auto client = c.Connect();
    ASSERT_NE(client, nullptr) << "master unreachable across namespaces";
    TargetKillSetup s;
    s.client = client.get();
    s.a = &a;
    s.b = &b;
    s.a_name = c.node_name(1);
    s.b_name = c.node_name(2);
    s.a_metrics_host = c.topo.ip(1);
    s.a_metrics_port = 7190;
    s.faults = &c.faults;
    TargetKilledBeforeCommit(s, "netns");
}

// Scenario 4: a node killed between writing an offload's disk record and reporting it. Its
// expiry drops the key (its MEMORY copy died with it); restarted with its disk, the written
// record is adopted (the key is back, LOCAL_DISK) next to the disk keys it had before, while
// keys that only ever lived in its DRAM stay NotFound.
TEST(CrashRestartTest, NodeKilledMidOffload) {
    Figures f;
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    faults.Release("offload.before_report");  // offloads pass until the test holds them
    UseFaultNodes(c, faults, "offload.before_report=hold");
    Cluster::NodeProcess& node = c.AddNode("4MiB", true);
    ASSERT_TRUE(c.WaitForNodes(1));

    const size_t size = 80 * kKiB + 3;
    std::vector<WrittenKey> disk = DiskOnlyKeys(*c.client, "disk/", 6, size, 3000, f);
    std::vector<WrittenKey> mem = PutKeys(*c.client, "mem/", 6, size, 3100);
    f.keys += 6;
    f.operations += 6;

    faults.Hold("offload.before_report");
    std::vector<WrittenKey> held = PutKeys(*c.client, "held/", 1, 150 * kKiB + 1, 3200);
    auto evicted = c.client->Evict(Names(held));
    ASSERT_TRUE(evicted.ok()) << evicted.status().ToString();
    f.keys += 1;
    f.operations += 2;
    ASSERT_TRUE(faults.WaitReached("offload.before_report"));
    ++f.faults;
    auto mid = c.client->CheckInvariants();
    ASSERT_TRUE(mid.ok());
    EXPECT_TRUE(mid->ok()) << mid->violations.front();
    EXPECT_EQ(mid->offload_tasks, 1u);
    EXPECT_EQ(mid->pins, 1u);

    node.daemon->Kill();
    ++f.faults;
    ASSERT_TRUE(c.WaitForNodes(0, kExpiry));
    std::vector<WrittenKey> all = disk;
    all.insert(all.end(), mem.begin(), mem.end());
    all.insert(all.end(), held.begin(), held.end());
    SetSurvives(all, false);
    f.operations += SettleAndCheck(*c.client, all, "node killed mid-offload");

    node.daemon->SetEnv("MOONCAKE_FAULTS", "");
    ASSERT_TRUE(node.daemon->Start());
    ++f.faults;
    ASSERT_TRUE(c.WaitForNodes(1, kExpiry));
    for (WrittenKey& k : all) k.survives = !k.key.starts_with("mem/");
    ASSERT_TRUE(WaitFor([&] { return AllExist(*c.client, all); }, std::chrono::seconds(10)))
        << "disk records not registered again";
    auto info = c.client->Stat(held[0].key);
    ASSERT_TRUE(info.ok());
    EXPECT_TRUE(DiskOnly(*info)) << "the unreported offload's record was not adopted";
    f.operations += SettleAndCheck(*c.client, all, "restarted after mid-offload kill");
    f.Print("node killed mid-offload");
}

// Scenario 5: one of two nodes restarted with its disk: gracefully, with SIGKILL (restarted
// once the master expired it), and with SIGKILL restarted at once (the new process replaces
// the old registration). While it is away the other node's keys are served; when it is back
// its LOCAL_DISK replicas are too, its DRAM-only keys are gone, and a key written anew
// meanwhile is never shadowed by the returning node's older record.
TEST(CrashRestartTest, NodeRestartWithItsDisk) {
    Figures f;
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    Cluster::NodeProcess& a = c.AddNode("4MiB", true);
    c.AddNode("4MiB", true);
    ASSERT_TRUE(c.WaitForNodes(2));
    std::vector<WrittenKey> all;
    const size_t size = 64 * kKiB + 1;
    for (int round = 0; round < 3; ++round) {
        const bool graceful = round == 0, at_once = round == 2;
        const std::string how = graceful  ? "SIGTERM"
                                : at_once ? "SIGKILL, restarted at once"
                                          : "SIGKILL";
        const std::string prefix = "r" + std::to_string(round) + "/";
        const uint64_t seed = 4000 + 100 * static_cast<uint64_t>(round);
        std::vector<WrittenKey> mem = PutKeys(*c.client, prefix + "mem/", 8, size, seed);
        std::vector<WrittenKey> both = PutKeys(*c.client, prefix + "both/", 8, size, seed + 20);
        auto offloaded = c.client->Offload(Names(both));
        ASSERT_TRUE(offloaded.ok());
        ASSERT_TRUE(WaitAllStat(*c.client, Names(both), [](const ObjectInfo& i) {
            return HasTier(i, Tier::kMemory) && HasTier(i, Tier::kLocalDisk);
        }));
        std::vector<WrittenKey> disk =
            DiskOnlyKeys(*c.client, prefix + "disk/", 8, size, seed + 40, f);
        f.keys += 16;
        f.operations += 24;
        for (auto* group : {&mem, &both, &disk})
            all.insert(all.end(), group->begin(), group->end());

        const NodeId a_id = c.IdOf(a);
        std::vector<WrittenKey> back = all;  // expectation once A is back with its disk
        ExpectAfterLosing(*c.client, back, a_id, /*keep_disk=*/true);
        ExpectAfterLosing(*c.client, all, a_id, /*keep_disk=*/false);
        size_t on_a = 0;
        for (size_t i = 0; i < all.size(); ++i) on_a += back[i].survives && !all[i].survives;
        ASSERT_GT(on_a, 0u) << "no key has its only copy on A's disk: nothing to test";

        if (graceful) {
            EXPECT_EQ(a.daemon->Stop(SIGTERM), 0);
        } else {
            a.daemon->Kill();
        }
        ++f.faults;
        if (at_once) {
            ASSERT_TRUE(a.daemon->Start());
            ++f.faults;
            ASSERT_TRUE(WaitFor(
                [&] {
                    NodeId now = c.IdOf(a);
                    return now != kNoNode && now != a_id;
                },
                kExpiry))
                << how << ": the restarted process did not replace the old registration";
            all = back;
            ASSERT_TRUE(WaitFor([&] { return AllExist(*c.client, all); }, std::chrono::seconds(10)))
                << how << ": A's disk records did not register again";
            f.operations += SettleAndCheck(*c.client, all, how + ": A back with its disk");
            continue;
        }
        ASSERT_TRUE(c.WaitForNodes(1, kExpiry)) << how;
        f.operations += SettleAndCheck(*c.client, all, how + ": A away");

        // Rewrite one key A will report an older incarnation of.
        size_t rewritten = all.size();
        for (size_t i = 0; i < all.size() && rewritten == all.size(); ++i) {
            if (back[i].survives && !all[i].survives) rewritten = i;
        }
        back[rewritten].seed += 1000000;
        ASSERT_TRUE(
            c.client->Put(back[rewritten].key, Pattern(back[rewritten].seed, back[rewritten].size))
                .ok());
        ++f.operations;

        ASSERT_TRUE(a.daemon->Start());
        ++f.faults;
        ASSERT_TRUE(WaitFor([&] { return c.IdOf(a) != kNoNode; }, kExpiry)) << how;
        all = back;
        ASSERT_TRUE(WaitFor([&] { return AllExist(*c.client, all); }, std::chrono::seconds(10)))
            << how << ": A's disk records did not register again";
        f.operations += SettleAndCheck(*c.client, all, how + ": A back with its disk");
    }
    f.Print("node restart with its disk");
}

// Scenario 6: the master killed and started again on the same address. Nodes register again
// with their DRAM ranges and disk records, and every key on a live node is served again.
TEST(CrashRestartTest, MasterRestartServesWhatLiveNodesHold) {
    Figures f;
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    c.AddNode("4MiB", true);
    c.AddNode("4MiB", true);
    ASSERT_TRUE(c.WaitForNodes(2));
    const size_t size = 72 * kKiB + 9;
    std::vector<WrittenKey> all = PutKeys(*c.client, "m/mem/", 8, size, 5000);
    std::vector<WrittenKey> both = PutKeys(*c.client, "m/both/", 8, size, 5100);
    ASSERT_TRUE(c.client->Offload(Names(both)).ok());
    ASSERT_TRUE(WaitAllStat(*c.client, Names(both), [](const ObjectInfo& i) {
        return HasTier(i, Tier::kMemory) && HasTier(i, Tier::kLocalDisk);
    }));
    std::vector<WrittenKey> disk = DiskOnlyKeys(*c.client, "m/disk/", 8, size, 5200, f);
    f.keys += 16;
    f.operations += 24;
    all.insert(all.end(), both.begin(), both.end());
    all.insert(all.end(), disk.begin(), disk.end());

    for (int round = 0; round < 2; ++round) {
        c.master->Kill();
        ++f.faults;
        ASSERT_TRUE(c.master->Start());
        ++f.faults;
        ASSERT_TRUE(WaitFor([&] { return c.client->Exists("m/none").ok(); }));
        ASSERT_TRUE(c.WaitForNodes(2, kExpiry));
        EXPECT_TRUE(WaitFor([&] { return AllExist(*c.client, all); }, std::chrono::seconds(10)))
            << "round " << round << ": not every key on a live node registered again";
        f.operations +=
            SettleAndCheck(*c.client, all, "master restart " + std::to_string(round + 1));
        // The store takes new writes (the re-registered ranges are not handed out again).
        std::vector<WrittenKey> fresh =
            PutKeys(*c.client, "m/new" + std::to_string(round) + "/", 8, size, 5300 + 10 * round);
        f.keys += 8;
        f.operations += 8;
        all.insert(all.end(), fresh.begin(), fresh.end());
        f.operations += SettleAndCheck(*c.client, all, "writes after master restart");
    }
    f.Print("master restart");
}

// Scenario 6b: the master killed while a node holds promotions before their commit (staging
// written in its own segment). The new master knows no task: the node registers again with
// its DRAM ranges and disk records, its late commits are refused, and every key still reads
// back identical; promotions work again afterwards.
TEST(CrashRestartTest, MasterKilledMidPromotion) {
    Figures f;
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    UseFaultNodes(c, faults, "promotion.before_commit=hold");
    c.AddNode("4MiB", true);
    ASSERT_TRUE(c.WaitForNodes(1));
    const size_t size = 88 * kKiB + 21;
    std::vector<WrittenKey> keys = DiskOnlyKeys(*c.client, "mp/", 8, size, 7000, f);
    std::vector<std::string> hot = {keys[0].key, keys[1].key, keys[2].key};
    ExpectAllQueued(c.client->Promote(hot));
    f.operations += hot.size();
    ASSERT_TRUE(faults.WaitReached("promotion.before_commit"));
    ++f.faults;

    c.master->Kill();
    ++f.faults;
    ASSERT_TRUE(c.master->Start());
    ++f.faults;
    ASSERT_TRUE(WaitFor([&] { return c.client->Exists("mp/none").ok(); }));
    ASSERT_TRUE(c.WaitForNodes(1, kExpiry));
    ASSERT_TRUE(WaitFor([&] { return AllExist(*c.client, keys); }, std::chrono::seconds(10)))
        << "the node's disk records did not register with the new master";
    faults.Release("promotion.before_commit");
    f.operations += SettleAndCheck(*c.client, keys, "master killed mid-promotion");

    std::vector<std::string> names = Names(keys);
    auto again = c.client->Promote(names);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    for (const KeyOutcome& k : *again)
        EXPECT_TRUE(k.status.ok()) << k.key << ": " << k.status.ToString();
    f.operations += names.size();
    EXPECT_TRUE(WaitAllStat(*c.client, names, [](const ObjectInfo& i) {
        return HasTier(i, Tier::kMemory);
    })) << "promotions did not complete under the new master";
    f.operations += SettleAndCheck(*c.client, keys, "promoted under the new master");
    f.Print("master killed mid-promotion");
}

// The release `mooncaked` has no fault code: MOONCAKE_FAULTS holding every point changes
// nothing (an offload and a promotion complete, no point is ever reached), and the binary
// does not even contain the variable's name. The fault build does (a sanity check of the
// method).
TEST(CrashRestartTest, ReleaseDaemonIgnoresFaultSettings) {
    auto contains = [](const std::string& path, const std::string& needle) {
        std::ifstream in(path, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        return bytes.find(needle) != std::string::npos;
    };
    EXPECT_FALSE(contains(MooncakedPath(), "MOONCAKE_FAULTS"));
    EXPECT_TRUE(contains(FaultDaemonPath(), "MOONCAKE_FAULTS"));

    Cluster c;
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    const std::vector<std::string> points = {"disk.read",
                                             "disk.write",
                                             "offload.before_report",
                                             "promotion.before_copy",
                                             "promotion.before_commit",
                                             "heartbeat.reply"};
    std::string spec;
    for (const std::string& p : points) spec += (spec.empty() ? "" : ",") + p + "=hold";
    c.node_env = faults.Env(spec);  // node_binary stays the release mooncaked
    c.AddNode("4MiB", true);
    ASSERT_TRUE(c.WaitForNodes(1));
    Figures f;
    std::vector<WrittenKey> keys = DiskOnlyKeys(*c.client, "rel/", 4, 100 * kKiB, 6000, f);
    ExpectAllQueued(c.client->Promote(Names(keys)));
    EXPECT_TRUE(WaitAllStat(
        *c.client, Names(keys), [](const ObjectInfo& i) { return HasTier(i, Tier::kMemory); },
        std::chrono::seconds(5)))
        << "a promotion did not complete under MOONCAKE_FAULTS=" << spec;
    f.operations +=
        keys.size() + SettleAndCheck(*c.client, keys, "release daemon under MOONCAKE_FAULTS");
    for (const std::string& p : points) EXPECT_FALSE(faults.Reached(p)) << p;
    f.faults = points.size();  // configured, all ignored
    f.Print("release daemon ignores MOONCAKE_FAULTS");
}

}  // namespace
}  // namespace mooncake::test
