// Issue 37: a batched put whose last value is smaller than its others (all one size) is a
// request's partial tail (LMCache's last chunk): the daemon infers it through the core rule
// (core/master/put_hint.h BatchShape) on both batch paths, and the store lists it at the cold
// end of its LRU order (put_cold_inserted_total). Against a standalone daemon the batch is
// pipelined by-key writes (node/data_server.h Window); against a master, BatchPutStart.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/integration/harness.h"

namespace mooncake::test {
namespace {

const std::string kCold = "mooncake_put_cold_inserted_total";
constexpr size_t kBlock = 64 << 10;

double Metric(Client& client, const std::string& series) {
    auto text = client.MetricsText();
    if (!text.ok()) return std::nan("");
    return MetricValue(*text, series);
}

// Puts `sizes.size()` values named PREFIX/i in one batch; true when every put succeeded.
bool PutBatch(Client& client, const std::string& prefix, const std::vector<size_t>& sizes) {
    std::vector<std::string> keys, values;
    for (size_t i = 0; i < sizes.size(); ++i) {
        keys.push_back(prefix + "/" + std::to_string(i));
        values.push_back(Pattern(i + 1, sizes[i]));
    }
    std::vector<std::pair<std::string, std::span<const std::byte>>> items;
    for (size_t i = 0; i < keys.size(); ++i) {
        items.emplace_back(keys[i], std::as_bytes(std::span(values[i])));
    }
    bool ok = true;
    for (const Status& st : client.BatchPut(items)) {
        EXPECT_TRUE(st.ok()) << st.ToString();
        ok = ok && st.ok();
    }
    return ok;
}

void ExpectOnlyTailsCold(Client& client) {
    const double before = Metric(client, kCold);
    ASSERT_FALSE(std::isnan(before));
    ASSERT_TRUE(PutBatch(client, "full", {kBlock, kBlock, kBlock}));  // full pages only
    ASSERT_TRUE(PutBatch(client, "single", {kBlock / 3}));            // says nothing
    EXPECT_EQ(Metric(client, kCold), before);
    ASSERT_TRUE(PutBatch(client, "req", {kBlock, kBlock, kBlock, kBlock / 3}));
    EXPECT_EQ(Metric(client, kCold), before + 1);
    // Longer than one pipelined window (net/pipeline.h kWindowOps): still seen.
    std::vector<size_t> long_request(33, kBlock);
    long_request.back() = 1000;
    ASSERT_TRUE(PutBatch(client, "long", long_request));
    EXPECT_EQ(Metric(client, kCold), before + 2);
}

TEST(PartialTailTest, StandaloneByKeyBatchInfersTheTail) {
    Standalone s({"--dram_size=64MiB"});
    ASSERT_NE(s.client, nullptr);
    const std::string by_key = "mooncake_data_by_key_total{op=\"write\"}";
    const double writes = Metric(*s.client, by_key);
    ExpectOnlyTailsCold(*s.client);
    EXPECT_EQ(Metric(*s.client, by_key) - (std::isnan(writes) ? 0 : writes), 3 + 1 + 4 + 33);
}

TEST(PartialTailTest, MasterBatchPutStartInfersTheTail) {
    Cluster c;
    ASSERT_NE(c.client, nullptr);
    c.AddNode("64MiB", false);
    ASSERT_TRUE(c.WaitForNodes(1));
    ExpectOnlyTailsCold(*c.client);
}

// The tail is evicted before blocks put earlier: DRAM holds 16 blocks, and singles put after
// a request's batch push out its tail before the first of the older blocks.
TEST(PartialTailTest, TheTailIsEvictedBeforeOlderBlocks) {
    Standalone s({"--dram_size=1MiB", "--enable_offload=false"});
    ASSERT_NE(s.client, nullptr);
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(PutBatch(*s.client, "old-" + std::to_string(i), {kBlock}));
    }
    ASSERT_TRUE(PutBatch(*s.client, "req", {kBlock, kBlock, kBlock, kBlock - 1}));
    const std::string tail = "req/3";
    bool tail_gone = false;
    for (int i = 0; i < 32 && !tail_gone; ++i) {
        ASSERT_TRUE(PutBatch(*s.client, "new-" + std::to_string(i), {kBlock}));
        tail_gone = !s.client->Stat(tail).ok();
        if (!tail_gone) {
            EXPECT_TRUE(s.client->Stat("old-0/0").ok()) << "after new-" << i;
        }
    }
    EXPECT_TRUE(tail_gone);
    EXPECT_TRUE(s.client->Stat("old-0/0").ok());
}

}  // namespace
}  // namespace mooncake::test
