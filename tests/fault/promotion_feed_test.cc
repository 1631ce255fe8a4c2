// A reader's read feeds the promotion it finds waiting (node/disk_read_sink.h): when a block's
// promotion is queued on its holder for a worker and a reader reads the block from disk, the
// promotion takes the reader's bytes and the disk is read once, not twice. Deterministic: a
// `mooncaked-fault` node holds every promotion worker after its own disk read
// (promotion.before_copy), so the one task more than there are workers can only wait in the
// node's queue while the reader reads its block.
#include "gtest/gtest.h"
#include "tests/fault/fault_util.h"

namespace mooncake::test {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kPromotionWorkers = 8;  // node/node.h NodeOptions::promotion_workers

TEST(PromotionFeedTest, AReadOfABlockWhosePromotionWaitsFeedsItAndTheDiskIsReadOnce) {
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    FaultDir faults(c.dir.Sub("faults"));
    UseFaultNodes(c, faults, "promotion.before_copy=hold");
    const uint16_t metrics_port = FreePort();
    c.AddNode("4MiB", true, {"--metrics_port=" + std::to_string(metrics_port)});
    ASSERT_TRUE(c.WaitForNodes(1));
    auto node_metric = [&](const std::string& series) {
        return MetricValue(NodeMetrics("127.0.0.1", metrics_port), series);
    };
    Figures f;

    const size_t n = kPromotionWorkers + 1, size = 96 * kKiB + 13;
    std::vector<WrittenKey> keys = DiskOnlyKeys(*c.client, "feed/", n, size, 4000, f);
    std::vector<std::string> names = Names(keys);
    ExpectAllQueued(c.client->Promote(names));
    f.operations += n;
    // Every worker has read its block and holds; the last task reached the node and waits.
    ASSERT_TRUE(WaitFor(
        [&] {
            return node_metric("mooncake_node_promotion_read_seconds_count") ==
                       static_cast<double>(kPromotionWorkers) &&
                   node_metric("mooncake_node_promotion_tasks_received_total") ==
                       static_cast<double>(n);
        },
        std::chrono::seconds(10)))
        << node_metric("mooncake_node_promotion_read_seconds_count") << " promotion reads, "
        << node_metric("mooncake_node_promotion_tasks_received_total") << " tasks received";
    ++f.faults;

    // The reader reads every block from disk, so the test does not depend on which task is
    // the one waiting: its task takes the reader's bytes; the held ones have read theirs.
    for (const WrittenKey& k : keys) {
        auto got = c.client->Get(k.key);
        ASSERT_TRUE(got.ok()) << k.key << ": " << got.status().ToString();
        EXPECT_TRUE(*got == Pattern(k.seed, k.size)) << "wrong bytes for " << k.key;
        ++f.operations;
    }
    // A reader has its bytes before the node offers them to the waiting task (the buffer is
    // sent, then handed over): released before that, a worker could take the task first.
    EXPECT_TRUE(WaitFor([&] { return node_metric("mooncake_node_promotions_fed_total") == 1.0; },
                        std::chrono::seconds(10)))
        << "no read fed the waiting promotion";

    faults.Release("promotion.before_copy");
    EXPECT_TRUE(WaitAllStat(*c.client, names, [](const ObjectInfo& i) {
        return HasTier(i, Tier::kMemory);
    })) << "not every promotion completed";
    EXPECT_EQ(node_metric("mooncake_node_promotions_fed_total"), 1.0);
    EXPECT_EQ(node_metric("mooncake_node_promotion_read_seconds_count"),
              static_cast<double>(kPromotionWorkers))
        << "the fed promotion read the disk again";
    EXPECT_EQ(MasterMetric(*c.client, "mooncake_promotion_completed_total"),
              static_cast<double>(n));
    f.operations += SettleAndCheck(*c.client, keys, "a read fed a waiting promotion");
    f.Print("a read feeds the promotion waiting for its block");
}

}  // namespace
}  // namespace mooncake::test
