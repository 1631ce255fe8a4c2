// Read locality among an object's MEMORY copies (PreferNearMemoryCopy, core/base/master_types.h):
// with copies on two nodes, a reader whose transport reaches one of them without the network
// reads that copy, even when the master lists it second; a reader near neither reads the
// master's first. Counted on each node's own data channel (data_reads_total), real daemons.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <memory>
#include <string>

#include "forwarding_transport.h"
#include "harness.h"
#include "thrift/client.h"

namespace mooncake::test {
namespace {

const std::string kMemoryReads = "mooncake_data_reads_total{tier=\"MEMORY\"}";

double NodeMemoryReads(uint16_t metrics_port) {
    auto res = httplib::Client("127.0.0.1", metrics_port).Get("/metrics");
    if (!res || res->status != 200) return std::nan("");
    const double v = MetricValue(res->body, kMemoryReads);
    return std::isnan(v) ? 0.0 : v;  // the series appears at its first read
}

// A TCP transport that takes one node's data channel for its own host's (as an engine's
// embedded node, or a node it shares pools with, is): only its answer to IsNear differs.
class NearTo final : public ForwardingTransport {
  public:
    explicit NearTo(std::string address) : address_(std::move(address)) {}
    bool IsNear(std::string_view address) override { return address == address_; }

  private:
    std::string address_;
};

std::string DataAddressOf(Client& client, const std::string& node_name) {
    auto nodes = client.Nodes();
    if (!nodes.ok()) return "";
    for (const NodeInfo& n : *nodes) {
        if (n.spec.name == node_name) return n.spec.data_address;
    }
    return "";
}

TEST(ReadLocalityTest, AReaderReadsTheCopyNearItAndOthersTheMastersFirst) {
    Cluster c;
    const uint16_t first_metrics = FreePort(), second_metrics = FreePort();
    auto& first = c.AddNode("16MiB", false, {"--metrics_port=" + std::to_string(first_metrics)});
    auto& second = c.AddNode("16MiB", false, {"--metrics_port=" + std::to_string(second_metrics)});
    ASSERT_TRUE(c.WaitForNodes(2));
    const std::string second_data = DataAddressOf(*c.client, second.name);
    ASSERT_FALSE(second_data.empty());

    // Two copies, the first placed on `first`: the master lists it first.
    PutConfig two;
    two.replicas = 2;
    two.copy_nodes = {c.IdOf(second)};
    const std::string value = Pattern(11, 256 << 10);
    ASSERT_TRUE(c.client->Put("copied", std::as_bytes(std::span(value)), c.IdOf(first), two).ok());
    auto listed = c.client->Stat("copied");
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->object.replicas.size(), 2u);
    ASSERT_EQ(listed->locations[0].node_name, first.name);
    // Both nodes' metrics endpoints answer (each starts beside its node, not before it).
    ASSERT_TRUE(WaitFor([&] {
        return !std::isnan(NodeMemoryReads(first_metrics)) &&
               !std::isnan(NodeMemoryReads(second_metrics));
    }));

    constexpr int kReads = 10;
    auto read_all = [&](Client& reader) {
        for (int i = 0; i < kReads; ++i) {
            auto got = reader.Get("copied");
            ASSERT_TRUE(got.ok()) << got.status().ToString();
            ASSERT_EQ(*got, value);
        }
    };

    // A reader near `second` reads there, every time.
    ClientOptions near_second;
    near_second.transport = std::make_shared<NearTo>(second_data);
    auto local = ConnectWhenUp(c.master_address, std::chrono::seconds(10), near_second);
    ASSERT_NE(local, nullptr);
    auto list = local->GetReplicaList("copied");
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(list->locations[0].node_name, second.name) << "the near copy is listed first";
    double first_before = NodeMemoryReads(first_metrics);
    double second_before = NodeMemoryReads(second_metrics);
    read_all(*local);
    EXPECT_EQ(NodeMemoryReads(second_metrics) - second_before, kReads);
    EXPECT_EQ(NodeMemoryReads(first_metrics) - first_before, 0);

    // A reader near neither node reads the master's first copy.
    first_before = NodeMemoryReads(first_metrics);
    second_before = NodeMemoryReads(second_metrics);
    read_all(*c.client);
    EXPECT_EQ(NodeMemoryReads(first_metrics) - first_before, kReads);
    EXPECT_EQ(NodeMemoryReads(second_metrics) - second_before, 0);
}

}  // namespace
}  // namespace mooncake::test
