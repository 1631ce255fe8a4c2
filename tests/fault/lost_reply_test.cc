// Heartbeat replies lost on the way (a master and a `mooncaked-fault` node on loopback): the
// node drops every reply at the `heartbeat.reply` point until the test lets them through.
// What those replies told the node to let go of (DRAM ranges of removed keys, disk records of
// removed keys) must not be lost with them: the master sends it again until the node confirms
// it, so the node's segment and disk empty out once replies arrive. Ends with SettleAndCheck.
#include <thread>

#include "gtest/gtest.h"
#include "tests/fault/fault_util.h"

namespace mooncake::test {
namespace {

constexpr size_t kKiB = 1024;

TEST(LostReplyFaultTest, ReleasesInLostHeartbeatRepliesAreSentAgain) {
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    UseFaultNodes(c, faults, "heartbeat.reply=fail_until_release");
    const uint16_t metrics_port = FreePort();
    c.AddNode("2MiB", true, {"--metrics_port=" + std::to_string(metrics_port)});
    ASSERT_TRUE(c.WaitForNodes(1));
    auto node_metric = [&](const std::string& series) {
        return MetricValue(NodeMetrics("127.0.0.1", metrics_port), series);
    };
    Figures f;

    // 8 keys in DRAM, 4 of them also on disk; then all removed.
    const size_t size = 128 * kKiB;
    std::vector<WrittenKey> keys = PutKeys(*c.client, "lost/", 8, size, 7000);
    std::vector<std::string> names = Names(keys);
    std::vector<std::string> offloaded(names.begin(), names.begin() + 4);
    ASSERT_TRUE(c.client->Offload(offloaded).ok());
    ASSERT_TRUE(WaitFor([&] { return node_metric("mooncake_local_disk_objects") == 4; },
                        std::chrono::seconds(10)));
    EXPECT_EQ(node_metric("mooncake_local_segment_held_bytes"), 8.0 * size);
    for (const std::string& k : names) ASSERT_TRUE(c.client->Remove(k).ok()) << k;
    for (WrittenKey& k : keys) k.survives = false;
    f.keys = keys.size();
    f.operations = keys.size() * 2 + offloaded.size();

    // Three heartbeats' replies lost: the node still holds everything.
    ASSERT_TRUE(faults.WaitReached("heartbeat.reply"));
    std::this_thread::sleep_for(std::chrono::seconds(3));
    f.faults += 3;
    EXPECT_EQ(node_metric("mooncake_local_segment_held_bytes"), 8.0 * size);
    EXPECT_EQ(node_metric("mooncake_local_disk_objects"), 4);

    // Replies arrive again: the ranges and records of the lost ones are let go of.
    faults.Release("heartbeat.reply");
    EXPECT_TRUE(WaitFor(
        [&] {
            return node_metric("mooncake_local_segment_held_bytes") == 0 &&
                   node_metric("mooncake_local_disk_objects") == 0;
        },
        std::chrono::seconds(10)))
        << "held " << node_metric("mooncake_local_segment_held_bytes") << " bytes, "
        << node_metric("mooncake_local_disk_objects") << " disk records";
    f.operations += SettleAndCheck(*c.client, keys, "after the lost replies");
    f.Print("lost heartbeat replies");
}

}  // namespace
}  // namespace mooncake::test
