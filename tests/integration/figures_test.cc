// Figures for the note, not checks: disabled by default (timing on a shared 2-core box is not
// a pass/fail matter). Run with
//   integration_tests --gtest_also_run_disabled_tests --gtest_filter='*Figures*'
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "thrift/net.h"

namespace mooncake::test {
namespace {

using Seconds = std::chrono::duration<double>;

// A raw TCP baseline shaped like our ops: "put" = send 8-byte size + value, get a 1-byte ack;
// "get" = send an 8-byte size, receive that many bytes. Same loopback, same sizes.
class RawServer {
public:
    // `working_set`: bytes the server cycles through, as the store's segment ranges do.
    explicit RawServer(size_t working_set) : buf_(working_set, 1) {
        auto fd = net::ListenTcp({"127.0.0.1", 0});
        listener_ = std::move(*fd);
        port_ = *net::BoundPort(listener_.get());
        thread_ = std::thread([this] { Serve(); });
    }
    ~RawServer() {
        ::shutdown(listener_.get(), SHUT_RDWR);
        if (conn_ >= 0) ::shutdown(conn_, SHUT_RDWR);
        thread_.join();
    }
    uint16_t port() const { return port_; }

private:
    void Serve() {
        // One connection at a time, until the listener is shut down.
        while ((conn_ = ::accept(listener_.get(), nullptr, nullptr)) >= 0) ServeOne();
    }
    void ServeOne() {
        int one = 1;
        setsockopt(conn_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        size_t at = 0;
        for (;;) {
            int64_t header = 0;
            if (!net::RecvAll(conn_, &header, 8).ok()) break;
            size_t n = static_cast<size_t>(header > 0 ? header : -header);
            if (at + n > buf_.size()) at = 0;
            if (header > 0) {  // put
                if (!net::RecvAll(conn_, buf_.data() + at, n).ok()) break;
                char ack = 1;
                if (!net::SendAll(conn_, &ack, 1).ok()) break;
            } else {  // get
                if (!net::SendAll(conn_, buf_.data() + at, n).ok()) break;
            }
            at += n;
        }
        ::close(conn_);
    }
    std::vector<char> buf_;
    net::Fd listener_;
    uint16_t port_ = 0;
    int conn_ = -1;
    std::thread thread_;
};

struct Rates {
    double put_seconds = 0, get_seconds = 0;  // per operation
};

Rates MeasureRaw(RawServer& server, size_t size, int iterations) {
    auto fd = net::ConnectTcp({"127.0.0.1", server.port()}, std::chrono::seconds(5));
    std::string value = Pattern(1, size);
    std::vector<char> in(size);
    Rates r;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
        int64_t header = static_cast<int64_t>(size);
        iovec iov[2] = {{&header, 8}, {value.data(), size}};
        (void)net::SendAll(fd->get(), iov);
        char ack;
        (void)net::RecvAll(fd->get(), &ack, 1);
    }
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
        int64_t header = -static_cast<int64_t>(size);
        (void)net::SendAll(fd->get(), &header, 8);
        (void)net::RecvAll(fd->get(), in.data(), size);
    }
    auto t2 = std::chrono::steady_clock::now();
    r.put_seconds = Seconds(t1 - t0).count() / iterations;
    r.get_seconds = Seconds(t2 - t1).count() / iterations;
    return r;
}

std::string FigKey(size_t size, int i) {
    return "fig/" + std::to_string(size) + "/" + std::to_string(i);
}

Rates MeasureStore(Client& client, size_t size, int iterations) {
    std::string value = Pattern(2, size);
    std::vector<std::byte> out(size);
    Rates r;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) EXPECT_TRUE(client.Put(FigKey(size, i), value).ok());
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) EXPECT_TRUE(client.GetInto(FigKey(size, i), out).ok());
    auto t2 = std::chrono::steady_clock::now();
    r.put_seconds = Seconds(t1 - t0).count() / iterations;
    r.get_seconds = Seconds(t2 - t1).count() / iterations;
    (void)client.RemoveByPrefix("fig/", true);
    return r;
}

// BatchPut / BatchGet in batches of 32: two control round trips per batch, not per object.
Rates MeasureStoreBatched(Client& client, size_t size, int iterations) {
    constexpr int kBatch = 32;
    std::string value = Pattern(3, size);
    Rates r;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; i += kBatch) {
        std::vector<std::pair<std::string, std::span<const std::byte>>> items;
        for (int j = i; j < std::min(iterations, i + kBatch); ++j) {
            items.emplace_back(FigKey(size, j), std::as_bytes(std::span(value)));
        }
        for (const Status& st : client.BatchPut(items)) EXPECT_TRUE(st.ok()) << st.ToString();
    }
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; i += kBatch) {
        std::vector<std::string> keys;
        for (int j = i; j < std::min(iterations, i + kBatch); ++j) keys.push_back(FigKey(size, j));
        for (const auto& got : client.BatchGet(keys)) EXPECT_TRUE(got.ok());
    }
    auto t2 = std::chrono::steady_clock::now();
    r.put_seconds = Seconds(t1 - t0).count() / iterations;
    r.get_seconds = Seconds(t2 - t1).count() / iterations;
    (void)client.RemoveByPrefix("fig/", true);
    return r;
}

double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Quantile of a Prometheus histogram in an exposition (linear within the bucket).
double HistogramQuantile(const std::string& text, const std::string& name, double q) {
    std::vector<std::pair<double, double>> buckets;  // (le, cumulative)
    std::istringstream in(text);
    std::string prefix = name + "_bucket{le=\"";
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(prefix, 0) != 0) continue;
        size_t close = line.find('"', prefix.size());
        std::string le = line.substr(prefix.size(), close - prefix.size());
        double bound = le == "+Inf" ? INFINITY : std::stod(le);
        buckets.emplace_back(bound, std::stod(line.substr(line.rfind(' ') + 1)));
    }
    if (buckets.empty() || buckets.back().second == 0) return NAN;
    double rank = q * buckets.back().second;
    double prev_bound = 0, prev_count = 0;
    for (auto [bound, count] : buckets) {
        if (count >= rank) {
            if (std::isinf(bound)) return prev_bound;
            return prev_bound + (bound - prev_bound) * (rank - prev_count) /
                                    std::max(1.0, count - prev_count);
        }
        prev_bound = bound;
        prev_count = count;
    }
    return prev_bound;
}

// Throughput of one client doing Put then Get, against a raw TCP copy of the same bytes
// shaped the same way (one request, one answer), in the same run. Nine alternating rounds;
// medians reported (the box is shared, single rounds are noisy).
TEST(FiguresTest, DISABLED_PutGetVersusRawTcp) {
    Standalone s({"--dram_size=512MiB", "--enable_offload=false"});
    ASSERT_NE(s.client, nullptr);
    std::this_thread::sleep_for(std::chrono::seconds(1));  // segment prefault finishes
    for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
        const int iterations = size < (1 << 20) ? 1000 : 150;
        RawServer server(size * iterations);
        MeasureStore(*s.client, size, 50);  // warm-up: connections, page faults
        MeasureRaw(server, size, 50);
        std::vector<double> raw_put, raw_get, put, get, bput, bget, rput, rget, rbput, rbget;
        for (int round = 0; round < 9; ++round) {
            Rates raw = MeasureRaw(server, size, iterations);
            Rates one = MeasureStore(*s.client, size, iterations);
            Rates batched = MeasureStoreBatched(*s.client, size, iterations);
            raw_put.push_back(raw.put_seconds * 1e6);
            raw_get.push_back(raw.get_seconds * 1e6);
            put.push_back(one.put_seconds * 1e6);
            get.push_back(one.get_seconds * 1e6);
            bput.push_back(batched.put_seconds * 1e6);
            bget.push_back(batched.get_seconds * 1e6);
            rput.push_back(raw.put_seconds / one.put_seconds);
            rget.push_back(raw.get_seconds / one.get_seconds);
            rbput.push_back(raw.put_seconds / batched.put_seconds);
            rbget.push_back(raw.get_seconds / batched.get_seconds);
            if (std::getenv("FIGURES_VERBOSE") != nullptr) {
                std::printf("[ round    ] %zu B raw %.1f/%.1f Put/Get %.1f/%.1f Batch %.1f/%.1f\n",
                            size, raw_put.back(), raw_get.back(), put.back(), get.back(),
                            bput.back(), bget.back());
            }
        }
        std::printf("[ figures  ] %7zu B per op (us, median of 9): raw put %.1f get %.1f | "
                    "Put %.1f Get %.1f | BatchPut %.1f BatchGet %.1f\n",
                    size, Median(raw_put), Median(raw_get), Median(put), Median(get),
                    Median(bput), Median(bget));
        std::printf("[ figures  ] %7zu B ratio to raw TCP (median): Put %.2f Get %.2f | "
                    "BatchPut %.2f BatchGet %.2f\n",
                    size, Median(rput), Median(rget), Median(rbput), Median(rbget));
    }
}

// Promotion trigger -> COMPLETE latency (the master's histogram), idle and under a read load.
TEST(FiguresTest, DISABLED_PromotionLatency) {
    for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
        for (const char* mode : {"idle", "loaded", "burst"}) {
            const bool loaded = std::string(mode) == "loaded";
            const bool burst = std::string(mode) == "burst";
            Standalone s({"--dram_size=256MiB", "--log_level=info"}, "512MiB");
            ASSERT_NE(s.client, nullptr);
            Client* client = s.client.get();
            const int n = size < (1 << 20) ? 200 : 100;
            std::vector<std::string> keys;
            for (int i = 0; i < n; ++i) {
                keys.push_back("p/" + std::to_string(i));
                ASSERT_TRUE(client->Put(keys.back(), Pattern(i, size)).ok());
            }
            ASSERT_TRUE(client->Evict(keys).ok());
            ASSERT_TRUE(WaitFor(
                [&] {
                    for (const auto& k : keys) {
                        auto info = client->Stat(k);
                        if (!info.ok() || HasTier(*info, Tier::kMemory)) return false;
                    }
                    return true;
                },
                std::chrono::seconds(30)));
            // Background readers of MEMORY keys when loaded.
            std::atomic<bool> stop{false};
            std::vector<std::thread> readers;
            if (loaded) {
                for (int i = 0; i < 20; ++i) {
                    ASSERT_TRUE(client->Put("hotmem/" + std::to_string(i), Pattern(i, size)).ok());
                }
                for (int t = 0; t < 2; ++t) {
                    readers.emplace_back([&, t] {
                        std::vector<std::byte> out(size);
                        for (int i = 0; !stop.load(); ++i) {
                            (void)client->GetInto("hotmem/" + std::to_string((i + t) % 20), out);
                        }
                    });
                }
            }
            std::vector<std::byte> out(size);
            if (burst) {
                // Every key crosses the threshold at once: many tasks queue together.
                (void)client->BatchGet(keys);
                (void)client->BatchGet(keys);
            } else {
                for (const auto& k : keys) {
                    (void)client->GetInto(k, out);
                    (void)client->GetInto(k, out);  // the second read crosses the threshold
                    std::this_thread::sleep_for(std::chrono::milliseconds(5));
                }
            }
            WaitFor([&] {
                auto t = client->Tasks();
                return t.ok() && t->empty();
            });
            stop.store(true);
            for (auto& th : readers) th.join();
            auto text = client->MetricsText();
            ASSERT_TRUE(text.ok());
            std::printf("[ figures  ] promotion %7zu B %-6s: p50 %.2f ms p99 %.2f ms, "
                        "completed %.0f, tasks/round trip %.2f\n",
                        size, mode,
                        HistogramQuantile(*text, "mooncake_promotion_latency_seconds", 0.5) * 1e3,
                        HistogramQuantile(*text, "mooncake_promotion_latency_seconds", 0.99) * 1e3,
                        MetricValue(*text, "mooncake_promotion_completed_total"),
                        MetricValue(*text, "mooncake_node_promotion_tasks_received_total") /
                            MetricValue(*text, "mooncake_node_promotion_batches_total"));
        }
    }
}

}  // namespace
}  // namespace mooncake::test

namespace mooncake::test {
namespace {
TEST(FiguresTest, DISABLED_Breakdown) {
    Standalone s({"--dram_size=512MiB", "--enable_offload=false"});
    ASSERT_NE(s.client, nullptr);
    for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
        std::string value = Pattern(3, size);
        ASSERT_TRUE(s.client->Put("bd", value).ok());
        auto info = *s.client->Stat("bd");
        auto transport = NewTcpTransport({});
        std::vector<std::byte> out(size);
        const int n = 300;
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) (void)s.client->Exists("bd");
        auto t1 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) {
            (void)transport->Read(info.locations[0].data_address, Tier::kMemory, "bd",
                                  info.object.generation, info.object.replicas[0].offset, out);
        }
        auto t2 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) {
            (void)transport->WriteMemory(info.locations[0].data_address, "bd2", 1,
                                         info.object.replicas[0].offset + (64 << 20),
                                         std::as_bytes(std::span(value)));
        }
        auto t3 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) (void)s.client->GetReplicaList("bd");
        auto t4 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) (void)s.client->GetInto("bd", out);
        auto t5 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) {
            (void)transport->Read(info.locations[0].data_address, Tier::kMemory, "bd",
                                  info.object.generation, info.object.replicas[0].offset, out);
        }
        auto t6 = std::chrono::steady_clock::now();
        std::printf("[ figures  ] again: data read %.1f us\n", Seconds(t6 - t5).count() / n * 1e6);
        std::printf("[ figures  ] %zu B: rpc %.1f us, data read %.1f us, data write %.1f us, "
                    "replica list %.1f us, get (same key) %.1f us\n",
                    size, Seconds(t1 - t0).count() / n * 1e6, Seconds(t2 - t1).count() / n * 1e6,
                    Seconds(t3 - t2).count() / n * 1e6, Seconds(t4 - t3).count() / n * 1e6,
                    Seconds(t5 - t4).count() / n * 1e6);
        ASSERT_TRUE(s.client->Remove("bd", true).ok());
    }
}
}  // namespace
}  // namespace mooncake::test
