// Issue 21, "Put in fewer round trips": the node that takes a Put's bytes ends the put at its
// master (data channel kFlagEndPut), so the client's Put is PutStart + one data exchange, and a
// Put that returned OK is readable at once.
//
// Proof that the client's PutEnd round trip is gone: the master counts every PutEnd RPC it
// serves (rpc_request_seconds_count{method="PutEnd"}) and the node counts the puts it ended
// (data_put_ends_total). Standalone: the node ends puts in-process, so the master serves no
// PutEnd RPC at all. Master + node: the master serves exactly one PutEnd per put and the node
// sent every one of them, so the client sent none.
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/master_link.h"
#include "core/base/metrics.h"
#include "node/data_server.h"
#include "node/segment.h"
#include "gtest/gtest.h"
#include "forwarding_transport.h"
#include "harness.h"
#include "httplib.h"
#include "net/byte_stream.h"
#include "net/data_transport.h"

namespace mooncake::test {
namespace {

const std::string kMasterPutEnds = "mooncake_rpc_request_seconds_count{method=\"PutEnd\"}";
const std::string kNodePutEnds = "mooncake_data_put_ends_total";
const std::string kNodePutEndsRefused = "mooncake_data_put_ends_refused_total";

double Metric(Client& client, const std::string& series) {
    auto text = client.MetricsText();
    if (!text.ok()) return std::nan("");
    double v = MetricValue(*text, series);
    return std::isnan(v) ? 0.0 : v;  // a labelled series appears at its first sample
}

double HttpMetric(uint16_t port, const std::string& series) {
    httplib::Client http("127.0.0.1", port);
    auto res = http.Get("/metrics");
    if (!res || res->status != 200) return std::nan("");
    double v = MetricValue(res->body, series);
    return std::isnan(v) ? 0.0 : v;
}

uint64_t SegmentUsed(Client& client) {
    auto nodes = client.Nodes();
    EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
    uint64_t used = 0;
    if (nodes.ok()) {
        for (const auto& n : *nodes) used += n.segment_used;
    }
    return used;
}

std::span<const std::byte> Bytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Puts `count` values through the client (span and streamed forms alternately) and reads
// each back right after its Put returned: no waiting, no retry.
void PutAndReadBack(Client& client, const std::string& prefix, int count) {
    for (int i = 0; i < count; ++i) {
        const std::string key = prefix + std::to_string(i);
        const std::string value = Pattern(i, (i % 3 == 0) ? (256 << 10) : 4096 + i);
        Status st;
        if (i % 2 == 0) {
            st = client.Put(key, Bytes(value));
        } else {
            SpanSource source(Bytes(value));
            st = client.PutFrom(key, value.size(), source);
        }
        ASSERT_TRUE(st.ok()) << key << ": " << st.ToString();
        auto got = client.Get(key);
        ASSERT_TRUE(got.ok()) << key << " unreadable right after its Put: "
                              << got.status().ToString();
        ASSERT_EQ(*got, value) << key;
    }
}

TEST(PutEndTest, StandalonePutIsReadableAtOnceWithNoPutEndRpc) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    const double master_before = Metric(*s.client, kMasterPutEnds);
    const double node_before = Metric(*s.client, kNodePutEnds);
    constexpr int kPuts = 20;
    PutAndReadBack(*s.client, "standalone-", kPuts);
    EXPECT_EQ(Metric(*s.client, kMasterPutEnds) - master_before, 0.0)
        << "the client still sent PutEnd RPCs";
    EXPECT_EQ(Metric(*s.client, kNodePutEnds) - node_before, kPuts);
}

TEST(PutEndTest, MasterAndNodePutIsReadableAtOnceAndOnlyTheNodeSendsPutEnd) {
    Cluster c;
    const uint16_t node_metrics = FreePort();
    c.AddNode("16MiB", false, {"--metrics_port=" + std::to_string(node_metrics)});
    ASSERT_TRUE(c.WaitForNodes(1));
    ASSERT_TRUE(WaitFor([&] { return !std::isnan(HttpMetric(node_metrics, kNodePutEnds)); }));
    {  // a node's liveness answer names its role (a master's also names its HA state)
        auto health = httplib::Client("127.0.0.1", node_metrics).Get("/health");
        ASSERT_TRUE(health);
        EXPECT_EQ(health->status, 200);
        EXPECT_EQ(health->body, "{\"status\":\"ok\",\"role\":\"node\"}");
    }
    const double master_before = Metric(*c.client, kMasterPutEnds);
    const double node_before = HttpMetric(node_metrics, kNodePutEnds);
    constexpr int kPuts = 20;
    PutAndReadBack(*c.client, "cluster-", kPuts);
    // One PutEnd per put reached the master, and the node sent every one: none from the client.
    EXPECT_EQ(Metric(*c.client, kMasterPutEnds) - master_before, kPuts);
    EXPECT_EQ(HttpMetric(node_metrics, kNodePutEnds) - node_before, kPuts);
}

// The TCP transport with a hook run before each end-put write (the test's meddling between
// PutStart and the write) and a way to change what the write names.
class MeddlingTransport final : public ForwardingTransport {
public:
    explicit MeddlingTransport(std::function<void(std::string_view key, Generation* generation,
                                                  ClientId* client)>
                                   before)
        : before_(std::move(before)) {}

    Status WriteMemoryEndingPut(std::string_view address, std::string_view key,
                                Generation generation, uint64_t offset,
                                std::span<const std::byte> data, ClientId client,
                                bool* ended) override {
        before_(key, &generation, &client);
        return inner().WriteMemoryEndingPut(address, key, generation, offset, data, client,
                                            ended);
    }
    // The meddling is between PutStart and the write: a one-exchange put has no such moment.
    bool HasByKey() const override { return false; }

private:
    std::function<void(std::string_view, Generation*, ClientId*)> before_;
};

// The node's PutEnd is refused (the key removed between PutStart and the write's end, a stale
// generation, another client's id): the client gets that error, nothing is readable, the DRAM
// is given back, and the key can be put again.
void RefusedNodePutEndLeavesNothing(Client& admin, const std::string& master) {
    enum class Meddle { kRemoved, kStaleGeneration, kOtherClient };
    for (Meddle meddle : {Meddle::kRemoved, Meddle::kStaleGeneration, Meddle::kOtherClient}) {
        SCOPED_TRACE(static_cast<int>(meddle));
        ClientOptions options;
        options.transport = std::make_shared<MeddlingTransport>(
            [&](std::string_view key, Generation* generation, ClientId* client) {
                switch (meddle) {
                    case Meddle::kRemoved:
                        EXPECT_TRUE(admin.Remove(key, /*force=*/true).ok());
                        break;
                    case Meddle::kStaleGeneration: *generation -= 1; break;
                    case Meddle::kOtherClient: *client += 1000; break;
                }
            });
        auto client = ConnectWhenUp(master, std::chrono::seconds(10), options);
        ASSERT_NE(client, nullptr);
        const uint64_t used_before = SegmentUsed(admin);
        const std::string key = "refused-" + std::to_string(static_cast<int>(meddle));
        const std::string value = Pattern(7, 64 << 10);
        Status st = client->Put(key, Bytes(value));
        ASSERT_FALSE(st.ok());
        const StatusCode expected = meddle == Meddle::kRemoved ? StatusCode::kNotFound
                                    : meddle == Meddle::kStaleGeneration
                                        ? StatusCode::kStaleGeneration
                                        : StatusCode::kIllegalClient;
        EXPECT_EQ(st.code(), expected) << st.ToString();
        EXPECT_NE(st.message().find("ending the put"), std::string::npos) << st.ToString();
        auto got = admin.Get(key);
        EXPECT_TRUE(got.status().Is(StatusCode::kNotFound)) << got.status().ToString();
        auto exists = admin.Exists(key);
        ASSERT_TRUE(exists.ok());
        EXPECT_FALSE(*exists);
        EXPECT_EQ(SegmentUsed(admin), used_before) << "the refused put's DRAM leaked";
        // Nothing is left behind that stops the key being put again.
        ASSERT_TRUE(admin.Put(key, Bytes(value)).ok());
        auto again = admin.Get(key);
        ASSERT_TRUE(again.ok()) << again.status().ToString();
        EXPECT_EQ(*again, value);
    }
}

TEST(PutEndTest, StandaloneRefusedNodePutEndFailsThePutAndLeavesNothing) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    const double refused_before = Metric(*s.client, kNodePutEndsRefused);
    RefusedNodePutEndLeavesNothing(*s.client, s.address);
    EXPECT_EQ(Metric(*s.client, kNodePutEndsRefused) - refused_before, 3.0);
}

TEST(PutEndTest, MasterAndNodeRefusedNodePutEndFailsThePutAndLeavesNothing) {
    Cluster c;
    c.AddNode("16MiB", false);
    ASSERT_TRUE(c.WaitForNodes(1));
    RefusedNodePutEndLeavesNothing(*c.client, c.master_address);
}

// A data server with no master link refuses end-put writes (nothing is written) and keeps the
// connection: a plain write after it on the same transport succeeds.
TEST(PutEndTest, EndPutWriteOnAServerWithoutALinkIsRefusedClearly) {
    auto segment = Segment::Create(4 << 20);
    ASSERT_TRUE(segment.ok()) << segment.status().ToString();
    Config config;
    MetricsRegistry metrics;
    DataServerOptions options;
    options.listen = {"127.0.0.1", 0};
    DataServer server(options, **segment, nullptr, config, metrics);
    ASSERT_TRUE(server.Start().ok());
    const std::string address = "127.0.0.1:" + std::to_string(server.port());
    auto transport = NewTcpTransport({});
    const std::string value = Pattern(3, 8192);
    bool ended = true;
    Status st = transport->WriteMemoryEndingPut(address, "k", 5, 0, Bytes(value), 1, &ended);
    EXPECT_TRUE(st.Is(StatusCode::kUnavailable)) << st.ToString();
    EXPECT_NE(st.message().find("cannot end puts"), std::string::npos) << st.ToString();
    EXPECT_FALSE(ended);
    std::string back(value.size(), '\0');
    EXPECT_FALSE(transport
                     ->Read(address, Tier::kMemory, "k", 5, 0,
                            {reinterpret_cast<std::byte*>(back.data()), back.size()})
                     .ok())
        << "a refused end-put write left its bytes readable";
    ASSERT_TRUE(transport->WriteMemory(address, "k", 5, 0, Bytes(value)).ok());
    ASSERT_TRUE(transport
                    ->Read(address, Tier::kMemory, "k", 5, 0,
                           {reinterpret_cast<std::byte*>(back.data()), back.size()})
                    .ok());
    EXPECT_EQ(back, value);
    server.Stop();
}

}  // namespace
}  // namespace mooncake::test
