// Issue 21, "Get and Put >= 0.8 of raw at 64 KiB": against a standalone daemon a Get and a small
// Put are one exchange with its data channel (net/data_protocol.h kFlagByKey), the daemon doing
// the master's part in process. These tests hold that path to the two-step path's contract:
// the same answers and refusals, a Get that counts as a read, and no by-key op where there is
// no master in the process (a node).
//
// Proof the one-exchange path is taken: the daemon counts the by-key requests it served
// (data_by_key_total{op}) and the master's RPC counters see no GetReplicaList or PutStart.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "forwarding_transport.h"
#include "harness.h"
#include "net/data_transport.h"

namespace mooncake::test {
namespace {

using namespace std::chrono_literals;

const std::string kByKeyReads = "mooncake_data_by_key_total{op=\"read\"}";
const std::string kByKeyWrites = "mooncake_data_by_key_total{op=\"write\"}";
const std::string kPutStartRpcs = "mooncake_rpc_request_seconds_count{method=\"PutStart\"}";
const std::string kReplicaListRpcs =
    "mooncake_rpc_request_seconds_count{method=\"GetReplicaList\"}";

double Metric(Client& client, const std::string& series) {
    auto text = client.MetricsText();
    if (!text.ok()) return std::nan("");
    double v = MetricValue(*text, series);
    return std::isnan(v) ? 0.0 : v;  // a labelled series appears at its first sample
}

// A by-key read is counted once its bytes went out, so the client may have them (and ask for
// the metrics) a moment before the server's thread counts it: the count, once it reaches
// `expected` or after 2 s. Still exact: one read too many is never waited away.
double ReadsSince(Client& client, double before, double expected) {
    double got = 0;  // WaitFor asks at least once
    WaitFor([&] { return (got = Metric(client, kByKeyReads) - before) >= expected; },
            std::chrono::seconds(2));
    return got;
}

std::span<const std::byte> Bytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST(ByKeyTest, StandaloneGetAndSmallPutAreOneExchangeWithTheDataChannel) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    const double reads = Metric(*s.client, kByKeyReads);
    const double writes = Metric(*s.client, kByKeyWrites);
    const double put_starts = Metric(*s.client, kPutStartRpcs);
    const double lists = Metric(*s.client, kReplicaListRpcs);
    constexpr int kKeys = 10;
    for (int i = 0; i < kKeys; ++i) {
        const std::string key = "one-exchange/" + std::to_string(i);
        const std::string value = Pattern(i, i == 0 ? 1 : (64 << 10) + i);  // 1 byte .. 64 KiB
        ASSERT_TRUE(s.client->Put(key, Bytes(value)).ok()) << key;
        auto got = s.client->Get(key);
        ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
        EXPECT_EQ(*got, value) << key;
        std::string into(value.size() + 100, '\0');
        Tier from = Tier::kLocalDisk;
        auto n = s.client->GetInto(
            key, std::as_writable_bytes(std::span(into.data(), into.size())), &from);
        ASSERT_TRUE(n.ok()) << n.status().ToString();
        EXPECT_EQ(*n, value.size());
        EXPECT_EQ(into.substr(0, value.size()), value);
        EXPECT_EQ(from, Tier::kMemory);
    }
    EXPECT_EQ(Metric(*s.client, kByKeyWrites) - writes, kKeys);
    EXPECT_EQ(ReadsSince(*s.client, reads, 2 * kKeys), 2 * kKeys);
    EXPECT_EQ(Metric(*s.client, kPutStartRpcs) - put_starts, 0.0) << "a Put asked the master";
    EXPECT_EQ(Metric(*s.client, kReplicaListRpcs) - lists, 0.0) << "a Get asked the master";
    // Each Get was a read: the master's object shows the recency and the lease of one.
    auto info = s.client->Stat("one-exchange/3");
    ASSERT_TRUE(info.ok());
    EXPECT_GT(info->object.recency, 0u);
    EXPECT_GT(info->object.lease_expiry.count(), 0);
}

TEST(ByKeyTest, StandaloneBatchesAreOneExchangePerKeyInParallel) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    const double reads = Metric(*s.client, kByKeyReads);
    const double writes = Metric(*s.client, kByKeyWrites);
    std::vector<std::string> keys, values;
    std::vector<std::pair<std::string, std::span<const std::byte>>> items;
    for (int i = 0; i < 12; ++i) {
        keys.push_back("batch/" + std::to_string(i));
        values.push_back(Pattern(i, 1000 + 997 * i));
    }
    for (int i = 0; i < 12; ++i) items.emplace_back(keys[i], Bytes(values[i]));
    items.emplace_back("", Bytes(values[0]));  // a bad key fails alone
    auto put = s.client->BatchPut(items);
    ASSERT_EQ(put.size(), 13u);
    for (int i = 0; i < 12; ++i) EXPECT_TRUE(put[i].ok()) << keys[i] << ": " << put[i].ToString();
    EXPECT_TRUE(put[12].Is(StatusCode::kInvalidArgument));
    keys.push_back("batch/missing");
    auto got = s.client->BatchGet(keys);
    ASSERT_EQ(got.size(), 13u);
    for (int i = 0; i < 12; ++i) {
        ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << got[i].status().ToString();
        EXPECT_EQ(*got[i], values[i]);
    }
    EXPECT_TRUE(got[12].status().Is(StatusCode::kNotFound));
    // Into buffers: one too small fails alone, with the size it needed.
    std::vector<std::string> buffers(12);
    std::vector<std::span<std::byte>> outs;
    for (int i = 0; i < 12; ++i) {
        buffers[i].assign(i == 5 ? 10 : values[i].size(), '\0');
        outs.push_back(std::as_writable_bytes(std::span(buffers[i].data(), buffers[i].size())));
    }
    keys.pop_back();
    auto into = s.client->BatchGetInto(keys, outs);
    ASSERT_EQ(into.size(), 12u);
    for (int i = 0; i < 12; ++i) {
        if (i == 5) {
            EXPECT_TRUE(into[i].status().Is(StatusCode::kInvalidArgument));
            continue;
        }
        ASSERT_TRUE(into[i].ok()) << into[i].status().ToString();
        EXPECT_EQ(buffers[i], values[i]);
    }
    EXPECT_EQ(Metric(*s.client, kByKeyWrites) - writes, 12.0);
    EXPECT_EQ(ReadsSince(*s.client, reads, 12.0 + 11.0), 12.0 + 11.0);
}

// A miss and a put of an existing key are answers a KV cache gives all day (the engine probes
// for prefixes it may not have, and several engines put the same block): data_errors_total
// must not climb with them, or an operator alerting on it is paged for a cold cache. A real
// refusal still counts.
TEST(ByKeyTest, MissesAndExistingKeysAreNotDataErrors) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    Client& c = *s.client;
    const std::string errors = "mooncake_data_errors_total";
    const std::string misses = "mooncake_get_misses_total";
    const std::string value = Pattern(7, 4096);
    ASSERT_TRUE(c.Put("errors/exists", Bytes(value)).ok());
    const double errors_before = Metric(c, errors);
    const double misses_before = Metric(c, misses);
    const double reads_before = Metric(c, kByKeyReads);
    for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(c.Get("errors/missing-" + std::to_string(i)).status().Is(StatusCode::kNotFound));
        EXPECT_TRUE(c.Put("errors/exists", Bytes(value)).Is(StatusCode::kAlreadyExists));
    }
    EXPECT_EQ(Metric(c, errors) - errors_before, 0.0);
    EXPECT_EQ(Metric(c, misses) - misses_before, 5.0) << "the master counts the misses";
    EXPECT_EQ(Metric(c, kByKeyReads) - reads_before, 0.0) << "no read was served";
    // A buffer too small for the value is a refusal of the request itself.
    std::string small(10, '\0');
    auto n = c.GetInto("errors/exists", std::as_writable_bytes(std::span(small.data(), small.size())));
    EXPECT_TRUE(n.status().Is(StatusCode::kInvalidArgument)) << n.status().ToString();
    EXPECT_EQ(Metric(c, errors) - errors_before, 1.0);
}

TEST(ByKeyTest, StandaloneRefusalsAreTheTwoStepPathsOnes) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    Client& c = *s.client;
    // Unknown key.
    auto missing = c.Get("by-key/missing");
    EXPECT_TRUE(missing.status().Is(StatusCode::kNotFound)) << missing.status().ToString();
    // A key that exists: AlreadyExists, and the stored value is untouched.
    const std::string value = Pattern(1, 4096);
    ASSERT_TRUE(c.Put("by-key/exists", Bytes(value)).ok());
    Status again = c.Put("by-key/exists", Bytes(Pattern(2, 4096)));
    EXPECT_TRUE(again.Is(StatusCode::kAlreadyExists)) << again.ToString();
    auto kept = c.Get("by-key/exists");
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(*kept, value);
    // A buffer too small: refused with the size needed, as GetInto's two-step path says it.
    std::string small(100, '\0');
    auto refused =
        c.GetInto("by-key/exists", std::as_writable_bytes(std::span(small.data(), small.size())));
    ASSERT_TRUE(refused.status().Is(StatusCode::kInvalidArgument)) << refused.status().ToString();
    EXPECT_NE(refused.status().message().find("too small"), std::string::npos);
    EXPECT_NE(refused.status().message().find("4096 bytes"), std::string::npos);
    // Bad keys are refused before anything is sent.
    EXPECT_TRUE(c.Put("", Bytes(value)).Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(c.Get(std::string("a\0b", 3)).status().Is(StatusCode::kInvalidArgument));
    // A value larger than max_value_size: refused, nothing stored, the connection still usable.
    ASSERT_TRUE(c.TuneSet({{"max_value_size", "8KiB"}}).ok());
    Status big = c.Put("by-key/too-big", Bytes(Pattern(3, 16 << 10)));
    EXPECT_TRUE(big.Is(StatusCode::kInvalidArgument)) << big.ToString();
    EXPECT_TRUE(c.Get("by-key/too-big").status().Is(StatusCode::kNotFound));
    auto still = c.Get("by-key/exists");
    ASSERT_TRUE(still.ok()) << still.status().ToString();
}

// A by-key write is never sent twice (a second send could store it twice), so it must not go
// out on a pooled connection the daemon has closed: after a restart, the first Put on the
// same client succeeds at once (before this, one within a second of the last request failed
// in transport on the dead connection, and one while the daemon was starting was told it was
// not a standalone daemon).
TEST(ByKeyTest, APutRightAfterTheDaemonRestartedSucceeds) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    ASSERT_TRUE(s.client->Put("restart/before", Bytes(Pattern(1, 1000))).ok());
    for (int round = 0; round < 3; ++round) {
        // The last round's Put may have come while the daemon was still starting: SIGTERM
        // then must end it cleanly too (see StandaloneStartupTest).
        EXPECT_EQ(s.daemon->Stop(), 0) << "round " << round;
        ASSERT_TRUE(s.daemon->Start());
        ASSERT_TRUE(WaitFor([&] {
            int fd = RawConnect(s.data_port);
            if (fd < 0) return false;
            ::close(fd);
            return true;
        }, 10s));
        const std::string key = "restart/after-" + std::to_string(round);
        Status put = s.client->Put(key, Bytes(Pattern(2 + round, 1000)));
        ASSERT_TRUE(put.ok()) << "round " << round << ": " << put.ToString();
        auto got = s.client->Get(key);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, Pattern(2 + round, 1000));
    }
}

TEST(ByKeyTest, StandaloneLargePutTakesTheTwoStepPath) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    const double writes = Metric(*s.client, kByKeyWrites);
    const double put_starts = Metric(*s.client, kPutStartRpcs);
    // Over 1 MiB the master checks size and room before a byte is sent.
    const std::string value = Pattern(4, (1 << 20) + 1);
    ASSERT_TRUE(s.client->Put("by-key/large", Bytes(value)).ok());
    EXPECT_EQ(Metric(*s.client, kByKeyWrites) - writes, 0.0);
    EXPECT_EQ(Metric(*s.client, kPutStartRpcs) - put_starts, 1.0);
    auto got = s.client->Get("by-key/large");  // reads are by key at any size
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, value);
}

TEST(ByKeyTest, StandaloneGetOfADiskOnlyKeyReadsTheDiskAndCountsTowardPromotion) {
    Standalone s({"--promotion_admission_threshold=2"}, "64MiB");
    ASSERT_NE(s.client, nullptr);
    const std::string value = Pattern(5, 64 << 10);
    ASSERT_TRUE(s.client->Put("by-key/disk", Bytes(value)).ok());
    const std::vector<std::string> keys = {"by-key/disk"};
    auto evicted = s.client->WaitForMove(TierMove::kEvict, keys);
    ASSERT_TRUE(evicted.ok()) << evicted.status().ToString();
    ASSERT_EQ((*evicted)[0].end, MoveEnd::kReached) << (*evicted)[0].status.ToString();
    std::string out(value.size(), '\0');
    Tier from = Tier::kMemory;
    auto n = s.client->GetInto("by-key/disk",
                               std::as_writable_bytes(std::span(out.data(), out.size())), &from);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(from, Tier::kLocalDisk);
    EXPECT_EQ(out, value);
    // Reads through the by-key path feed the admission gate: the key comes back to MEMORY.
    ASSERT_TRUE(WaitFor(
        [&] {
            (void)s.client->Get("by-key/disk");
            auto info = s.client->Stat("by-key/disk");
            return info.ok() && info->object.HasComplete(Tier::kMemory);
        },
        10s))
        << "by-key reads of a disk-only key did not promote it";
}

// The TCP transport, but its by-key ops go to `dead` (nothing listens there): a standalone
// daemon whose data channel moved since the client's Hello.
class MovedDataChannel final : public ForwardingTransport {
public:
    explicit MovedDataChannel(std::string dead) : dead_(std::move(dead)) {}
    Result<uint64_t> ReadByKey(std::string_view, std::string_view key, uint64_t max_size,
                               const std::function<std::span<std::byte>(uint64_t)>& buffer_for,
                               Tier* served_from) override {
        return inner().ReadByKey(dead_, key, max_size, buffer_for, served_from);
    }
    Result<uint64_t> ReadByKeyInto(std::string_view, std::string_view key,
                                   std::span<std::byte> out, Tier* served_from) override {
        return inner().ReadByKeyInto(dead_, key, out, served_from);
    }
    Status PutByKey(std::string_view, std::string_view key, ClientId client,
                    std::span<const std::byte> value, bool* sent) override {
        return inner().PutByKey(dead_, key, client, value, sent);
    }

private:
    std::string dead_;
};

TEST(ByKeyTest, AnUnreachableByKeyChannelFallsBackToTheTwoStepPath) {
    Standalone s;
    ASSERT_NE(s.client, nullptr);
    ClientOptions options;
    options.transport =
        std::make_shared<MovedDataChannel>("127.0.0.1:" + std::to_string(FreePort()));
    auto client = ConnectWhenUp(s.address, 10s, options);
    ASSERT_NE(client, nullptr);
    const double put_starts = Metric(*s.client, kPutStartRpcs);
    const double lists = Metric(*s.client, kReplicaListRpcs);
    const std::string value = Pattern(8, 64 << 10);
    // Nothing was sent by key, so the put is made the two-step way, once.
    ASSERT_TRUE(client->Put("moved/1", Bytes(value)).ok());
    EXPECT_EQ(Metric(*s.client, kPutStartRpcs) - put_starts, 1.0);
    auto got = client->Get("moved/1");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, value);
    std::string into(value.size(), '\0');
    auto n = client->GetInto("moved/1", std::as_writable_bytes(std::span(into.data(), into.size())));
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(into, value);
    EXPECT_EQ(Metric(*s.client, kReplicaListRpcs) - lists, 2.0);
    // A refusal from the master is still the answer, not a reason to ask twice.
    EXPECT_TRUE(client->Get("moved/missing").status().Is(StatusCode::kNotFound));
}

TEST(ByKeyTest, ANodeRefusesByKeyRequestsAndKeepsTheConnection) {
    Cluster c;
    c.AddNode("16MiB", false);
    ASSERT_TRUE(c.WaitForNodes(1));
    auto nodes = c.client->Nodes();
    ASSERT_TRUE(nodes.ok());
    ASSERT_EQ(nodes->size(), 1u);
    const std::string data = (*nodes)[0].spec.data_address;
    auto transport = NewTcpTransport({});
    ASSERT_TRUE(c.client->Put("on-node", Bytes(Pattern(6, 4096))).ok());
    std::string out(4096, '\0');
    auto read = transport->ReadByKey(data, "on-node", out.size(), [&](uint64_t size) {
        return std::as_writable_bytes(std::span(out.data(), size));
    });
    ASSERT_TRUE(read.status().Is(StatusCode::kUnavailable)) << read.status().ToString();
    EXPECT_NE(read.status().message().find("standalone daemon only"), std::string::npos);
    Status put = transport->PutByKey(data, "by-key/on-node", 1, Bytes(Pattern(7, 4096)));
    // Refused by the node itself on the connection the read left pooled (a closed one would
    // fail in transport, without the node's reason).
    ASSERT_TRUE(put.Is(StatusCode::kUnavailable)) << put.ToString();
    EXPECT_NE(put.message().find("standalone daemon only"), std::string::npos) << put.ToString();
    auto exists = c.client->Exists("by-key/on-node");
    ASSERT_TRUE(exists.ok());
    EXPECT_FALSE(*exists);
    // The cluster's client never asks for them: the master's Hello names no by-key channel.
    auto got = c.client->Get("on-node");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
}

}  // namespace
}  // namespace mooncake::test
