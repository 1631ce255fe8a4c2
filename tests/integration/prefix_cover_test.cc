// Issue 37: a batch read is a request's prefix in order, and a live soft pin on its last block
// keeps the blocks before it pinned as long (MasterStore::CoverPrefixWithSoftPins). Against a
// standalone daemon the batch is a pipelined window of by-key reads (node/data_server.h
// Window), which covers its keys when the window ends.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "tests/integration/harness.h"

namespace mooncake::test {
namespace {

constexpr size_t kBlock = 4096;

TEST(PrefixCoverTest, StandaloneByKeyBatchReadLendsTheLastPinToItsPrefix) {
    Standalone s({"--dram_size=64MiB"});
    ASSERT_NE(s.client, nullptr);
    Client& c = *s.client;
    const std::string value = Pattern(1, kBlock);
    const auto bytes = std::as_bytes(std::span(value));
    ASSERT_TRUE(c.Put("req/0", bytes).ok());
    ASSERT_TRUE(c.Put("req/1", bytes).ok());
    PutConfig soft;
    soft.soft = true;
    soft.soft_ttl = std::chrono::minutes(10);
    ASSERT_TRUE(c.Put("req/2", bytes, kNoNode, soft).ok());
    ASSERT_FALSE(c.Stat("req/0")->object.soft_pinned);

    const std::string by_key = "mooncake_data_by_key_total{op=\"read\"}";
    auto metrics = c.MetricsText();
    ASSERT_TRUE(metrics.ok());
    double reads = MetricValue(*metrics, by_key);
    if (std::isnan(reads)) reads = 0;
    const std::vector<std::string> keys = {"req/0", "req/1", "req/2"};
    std::vector<std::string> into(3, std::string(kBlock, '\0'));
    std::vector<std::span<std::byte>> outs;
    for (std::string& v : into) outs.push_back(std::as_writable_bytes(std::span(v)));
    for (const auto& r : c.BatchGetInto(keys, outs)) ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(into[0], value);
    metrics = c.MetricsText();
    ASSERT_TRUE(metrics.ok());
    EXPECT_EQ(MetricValue(*metrics, by_key) - reads, 3) << "the batch was not read by key";

    // Stat says how long a pin has left (the wire carries it relative): the lent pins run out
    // with the lender's, a few milliseconds of Stat calls apart.
    auto lender = c.Stat("req/2");
    ASSERT_TRUE(lender.ok());
    for (const char* key : {"req/0", "req/1"}) {
        auto st = c.Stat(key);
        ASSERT_TRUE(st.ok());
        EXPECT_TRUE(st->object.soft_pinned) << key;
        const auto gap = lender->object.soft_pin_expiry - st->object.soft_pin_expiry;
        EXPECT_LT(std::chrono::abs(gap), std::chrono::seconds(5)) << key;
        EXPECT_GT(st->object.soft_pin_expiry, std::chrono::minutes(9)) << key;
    }
}

}  // namespace
}  // namespace mooncake::test
