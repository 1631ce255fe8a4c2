// Issue 36: a batch's values for one node travel as one pipelined request stream and one reply
// stream (net/data_protocol.h kFlagMore, net/pipeline.h). These tests hold the pipelined path
// to the single path's contract: each item its own answer (a miss, a refusal, a too-small
// buffer fail alone and the connection stays usable), the right bytes at every size, both
// topologies, and a connection that breaks part-way answers the rest Unavailable and writes no
// wrong bytes.
//
// Proof a batch is one exchange: the node counts the sends of its answers
// (data_reply_writes_total); a window of answers goes in one.
#include <sys/socket.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "harness.h"
#include "net/data_protocol.h"
#include "net/data_transport.h"
#include "net/net.h"

namespace mooncake::test {
namespace {

const std::string kReplyWrites = "mooncake_data_reply_writes_total";
const std::string kByKeyReads = "mooncake_data_by_key_total{op=\"read\"}";
const std::string kByKeyWrites = "mooncake_data_by_key_total{op=\"write\"}";

double Metric(Client& client, const std::string& series) {
    auto text = client.MetricsText();
    if (!text.ok()) return std::nan("");
    double v = MetricValue(*text, series);
    return std::isnan(v) ? 0.0 : v;
}

std::span<const std::byte> Bytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
std::span<std::byte> Writable(std::string& s) {
    return std::as_writable_bytes(std::span(s.data(), s.size()));
}

TEST(PipelineTest, StandaloneBatchOfSmallValuesIsOneReplyWritePerBatch) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    constexpr int kKeys = 16;
    std::vector<std::string> keys, values;
    std::vector<std::pair<std::string, std::span<const std::byte>>> items;
    for (int i = 0; i < kKeys; ++i) {
        keys.push_back("pipe/small/" + std::to_string(i));
        values.push_back(Pattern(i, 1000 + 37 * i));
    }
    for (int i = 0; i < kKeys; ++i) items.emplace_back(keys[i], Bytes(values[i]));
    const double writes0 = Metric(*s.client, kReplyWrites);
    const double by_key_writes0 = Metric(*s.client, kByKeyWrites);
    auto put = s.client->BatchPut(items);
    for (int i = 0; i < kKeys; ++i) ASSERT_TRUE(put[i].ok()) << put[i].ToString();
    EXPECT_EQ(Metric(*s.client, kByKeyWrites) - by_key_writes0, kKeys);
    EXPECT_EQ(Metric(*s.client, kReplyWrites) - writes0, 1.0)
        << "16 by-key puts answered in more than one send";

    std::vector<std::string> buffers(kKeys);
    std::vector<std::span<std::byte>> outs;
    for (int i = 0; i < kKeys; ++i) {
        buffers[i].assign(values[i].size(), '\0');
        outs.push_back(Writable(buffers[i]));
    }
    const double writes1 = Metric(*s.client, kReplyWrites);
    const double reads1 = Metric(*s.client, kByKeyReads);
    auto got = s.client->BatchGetInto(keys, outs);
    for (int i = 0; i < kKeys; ++i) {
        ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
        EXPECT_EQ(buffers[i], values[i]);
    }
    // The reply is sent before the server counts the reads: wait for them.
    WaitFor([&] { return Metric(*s.client, kByKeyReads) - reads1 >= kKeys; },
            std::chrono::seconds(2));
    EXPECT_EQ(Metric(*s.client, kByKeyReads) - reads1, kKeys);
    EXPECT_EQ(Metric(*s.client, kReplyWrites) - writes1, 1.0)
        << "16 by-key reads answered in more than one send";
}

// Mixed sizes (1 B to 2 MiB, the last over the by-key limit) and per-item failures inside one
// pipelined batch: an existing key, a miss, a too-small buffer. Then the same client batches
// again (the connection is still in sync).
TEST(PipelineTest, StandalonePerItemFailuresStayPerItemAtMixedSizes) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    const std::vector<size_t> sizes = {1, 4096, 65539, 300000, 1, 2u << 20, 7777, 65536};
    std::vector<std::string> keys, values;
    for (size_t i = 0; i < sizes.size(); ++i) {
        keys.push_back("pipe/mixed/" + std::to_string(i));
        values.push_back(Pattern(100 + i, sizes[i]));
    }
    ASSERT_TRUE(s.client->Put(keys[4], Bytes(values[4])).ok());  // exists before the batch
    std::vector<std::pair<std::string, std::span<const std::byte>>> items;
    for (size_t i = 0; i < sizes.size(); ++i) items.emplace_back(keys[i], Bytes(values[i]));
    auto put = s.client->BatchPut(items);
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (i == 4) {
            EXPECT_TRUE(put[i].Is(StatusCode::kAlreadyExists)) << put[i].ToString();
        } else {
            EXPECT_TRUE(put[i].ok()) << keys[i] << ": " << put[i].ToString();
        }
    }
    for (int round = 0; round < 2; ++round) {
        std::vector<std::string> ask = keys;
        ask.insert(ask.begin() + 3, "pipe/mixed/missing");
        std::vector<std::string> buffers;
        std::vector<std::span<std::byte>> outs;
        buffers.reserve(ask.size());
        for (size_t i = 0; i < ask.size(); ++i) {
            const size_t want = i == 3 ? 10 : values[i < 3 ? i : i - 1].size();
            buffers.emplace_back(i == 6 ? 100 : want + 5, 'z');  // ask[6] = keys[5]: too small
        }
        for (auto& b : buffers) outs.push_back(Writable(b));
        auto got = s.client->BatchGetInto(ask, outs);
        ASSERT_EQ(got.size(), ask.size());
        for (size_t i = 0; i < ask.size(); ++i) {
            if (i == 3) {
                EXPECT_TRUE(got[i].status().Is(StatusCode::kNotFound)) << got[i].status().ToString();
                continue;
            }
            if (i == 6) {
                EXPECT_TRUE(got[i].status().Is(StatusCode::kInvalidArgument));
                EXPECT_EQ(buffers[i], std::string(100, 'z')) << "a refused read wrote";
                continue;
            }
            const std::string& want = values[i < 3 ? i : i - 1];
            ASSERT_TRUE(got[i].ok()) << ask[i] << ": " << got[i].status().ToString();
            EXPECT_EQ(*got[i], want.size());
            EXPECT_EQ(buffers[i].substr(0, want.size()), want) << ask[i];
            EXPECT_EQ(buffers[i].substr(want.size()), "zzzzz") << "written past the value";
        }
    }
}

TEST(PipelineTest, ClusterBatchesArePipelinedPerNodeWithPerItemAnswers) {
    Cluster c;
    c.AddNode("64MiB", false);
    c.AddNode("64MiB", false);
    ASSERT_TRUE(c.WaitForNodes(2));
    ASSERT_NE(c.client, nullptr);
    std::vector<std::string> keys, values;
    std::vector<std::pair<std::string, std::span<const std::byte>>> items;
    for (int i = 0; i < 40; ++i) {
        keys.push_back("pipe/cluster/" + std::to_string(i));
        values.push_back(Pattern(200 + i, i % 5 == 0 ? (1u << 20) + i : 4096 + 131 * i));
    }
    for (int i = 0; i < 40; ++i) items.emplace_back(keys[i], Bytes(values[i]));
    auto put = c.client->BatchPut(items);
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(put[i].ok()) << keys[i] << ": " << put[i].ToString();
    keys.push_back("pipe/cluster/missing");
    std::vector<std::string> buffers;
    std::vector<std::span<std::byte>> outs;
    buffers.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
        buffers.emplace_back(i == 7 ? 5 : (i < 40 ? values[i].size() : 10), '\0');
    }
    for (auto& b : buffers) outs.push_back(Writable(b));
    std::vector<Tier> tiers(keys.size(), Tier::kLocalDisk);
    auto got = c.client->BatchGetInto(keys, outs, tiers);
    for (size_t i = 0; i < 40; ++i) {
        if (i == 7) {
            EXPECT_TRUE(got[i].status().Is(StatusCode::kInvalidArgument));
            continue;
        }
        ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << got[i].status().ToString();
        EXPECT_EQ(buffers[i], values[i]) << keys[i];
        EXPECT_EQ(tiers[i], Tier::kMemory);
    }
    EXPECT_TRUE(got[40].status().Is(StatusCode::kNotFound));
    auto again = c.client->BatchGet(std::span(keys).first(40));
    for (size_t i = 0; i < 40; ++i) {
        ASSERT_TRUE(again[i].ok()) << again[i].status().ToString();
        EXPECT_EQ(*again[i], values[i]);
    }
}

// A data server that answers the hello and the first `answer` reads of a window (with
// `payload` bytes each) and then closes the connection: the rest must come back Unavailable,
// with nothing written into their buffers.
TEST(PipelineTest, AConnectionBrokenMidBatchAnswersTheRestUnavailable) {
    auto listener = net::ListenTcp({"127.0.0.1", 0});
    ASSERT_TRUE(listener.ok());
    const uint16_t port = *net::BoundPort(listener->get());
    constexpr int kOps = 6, kAnswered = 2;
    constexpr size_t kSize = 3000;
    const std::string key = "pipe/broken";
    std::thread server([&] {
        net::Fd conn(::accept(listener->get(), nullptr, nullptr));
        if (!conn.valid()) return;
        // The hello (no token) and kOps read requests, one header and key each.
        std::string in(data::kRequestHeaderSize + kOps * (data::kRequestHeaderSize + key.size()),
                       '\0');
        if (!net::RecvAll(conn.get(), in.data(), in.size()).ok()) return;
        data::ResponseHeader ok;
        auto hello = data::SerializeResponse(ok);
        (void)net::SendAll(conn.get(), hello.data(), hello.size());
        ok.length = kSize;
        const std::string bytes = Pattern(7, kSize);
        for (int i = 0; i < kAnswered; ++i) {
            auto h = data::SerializeResponse(ok);
            (void)net::SendAll(conn.get(), h.data(), h.size());
            (void)net::SendAll(conn.get(), bytes.data(), bytes.size());
        }
        // Half of the next answer's header, then the close.
        auto h = data::SerializeResponse(ok);
        (void)net::SendAll(conn.get(), h.data(), h.size() / 2);
        ::shutdown(conn.get(), SHUT_RDWR);
    });
    auto transport = NewTcpTransport({});
    std::vector<std::string> buffers(kOps, std::string(kSize, 'q'));
    std::vector<std::span<std::byte>> pieces(kOps);
    std::vector<BatchOp> ops(kOps);
    for (int i = 0; i < kOps; ++i) {
        pieces[i] = Writable(buffers[i]);
        ops[i].kind = BatchOp::Kind::kRead;
        ops[i].key = key;
        ops[i].generation = 1;
        ops[i].receive = MutablePieces(&pieces[i], 1);
    }
    transport->RunBatch("127.0.0.1:" + std::to_string(port), ops);
    server.join();
    const std::string bytes = Pattern(7, kSize);
    for (int i = 0; i < kOps; ++i) {
        if (i < kAnswered) {
            EXPECT_TRUE(ops[i].status.ok()) << i << ": " << ops[i].status.ToString();
            EXPECT_EQ(buffers[i], bytes);
        } else {
            EXPECT_TRUE(ops[i].status.Is(StatusCode::kUnavailable))
                << i << ": " << ops[i].status.ToString();
            EXPECT_EQ(buffers[i], std::string(kSize, 'q')) << "op " << i << " got bytes";
        }
    }
}

// A daemon killed while a batch is in flight: every item gets an answer (its own, or
// Unavailable), none hangs, and what was read is right.
TEST(PipelineTest, ADaemonKilledMidBatchNeverHangsOrMisreads) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    std::vector<std::string> keys, values;
    std::vector<std::pair<std::string, std::span<const std::byte>>> items;
    for (int i = 0; i < 32; ++i) {
        keys.push_back("pipe/kill/" + std::to_string(i));
        values.push_back(Pattern(300 + i, 256 << 10));
    }
    for (int i = 0; i < 32; ++i) items.emplace_back(keys[i], Bytes(values[i]));
    auto put = s.client->BatchPut(items);
    for (int i = 0; i < 32; ++i) ASSERT_TRUE(put[i].ok()) << put[i].ToString();
    std::vector<std::string> buffers(32, std::string(256 << 10, '\0'));
    std::vector<std::span<std::byte>> outs;
    for (auto& b : buffers) outs.push_back(Writable(b));
    std::thread killer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        s.daemon->Kill();
    });
    std::vector<Result<uint64_t>> got;
    for (int round = 0; round < 20 && s.daemon->running(); ++round) {
        got = s.client->BatchGetInto(keys, outs);
        for (size_t i = 0; i < got.size(); ++i) {
            // A failed item's buffer may hold part of its value; an OK one holds all of it.
            if (got[i].ok()) {
                EXPECT_EQ(buffers[i], values[i]) << keys[i];
            }
        }
    }
    killer.join();
    got = s.client->BatchGetInto(keys, outs);  // after the kill: all fail, none hangs
    for (const auto& g : got) EXPECT_FALSE(g.ok());
}

}  // namespace
}  // namespace mooncake::test
