// net_bench: the loopback figures, each measured side by side with its baseline in the same
// run (the box is shared, so only ratios of interleaved rounds mean anything):
//   - Put / Get (and BatchPut / BatchGet) of a standalone mooncaked through the client library
//     against a raw TCP copy of the same bytes shaped the same way (one request, one answer);
//   - promotion trigger -> COMPLETE latency, p50 / p99, from the daemon's histogram
//     (mooncake_promotion_latency_seconds), idle and under a MEMORY read load;
//   - with --breakdown, where a Get's time goes (control RPC, data read, replica list).
// It starts its own daemons (the integration harness: free loopback ports, a temp dir).
//
//   net_bench [--rounds N] [--quick] [--breakdown] [--no-promotion] [--no-copy]
//
// Output is Markdown tables (bench/run-micro.sh puts them in bench/results/micro.md).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"
#include "net/net.h"

namespace mooncake::bench {
namespace {

using test::Pattern;
using test::Standalone;
using Seconds = std::chrono::duration<double>;

bool g_failed = false;
void Check(bool ok, const char* what) {
    if (!ok && !g_failed) std::fprintf(stderr, "net_bench: %s failed\n", what);
    g_failed = g_failed || !ok;
}

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
        Check(net::SendAll(fd->get(), iov).ok(), "raw put");
        char ack;
        Check(net::RecvAll(fd->get(), &ack, 1).ok(), "raw put ack");
    }
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
        int64_t header = -static_cast<int64_t>(size);
        Check(net::SendAll(fd->get(), &header, 8).ok(), "raw get");
        Check(net::RecvAll(fd->get(), in.data(), size).ok(), "raw get bytes");
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
    for (int i = 0; i < iterations; ++i) Check(client.Put(FigKey(size, i), value).ok(), "Put");
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) Check(client.GetInto(FigKey(size, i), out).ok(), "Get");
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
        for (const Status& st : client.BatchPut(items)) Check(st.ok(), "BatchPut");
    }
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; i += kBatch) {
        std::vector<std::string> keys;
        for (int j = i; j < std::min(iterations, i + kBatch); ++j) keys.push_back(FigKey(size, j));
        for (const auto& got : client.BatchGet(keys)) Check(got.ok(), "BatchGet");
    }
    auto t2 = std::chrono::steady_clock::now();
    r.put_seconds = Seconds(t1 - t0).count() / iterations;
    r.get_seconds = Seconds(t2 - t1).count() / iterations;
    (void)client.RemoveByPrefix("fig/", true);
    return r;
}

double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
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

// Throughput of one client doing Put then Get, against a raw TCP copy of the same bytes in the
// same run; `rounds` alternating rounds, medians reported.
void CopyVersusRaw(int rounds, bool quick) {
    Standalone s({"--dram_size=512MiB", "--enable_offload=false", "--log_level=warn"});
    if (s.client == nullptr) {
        std::fprintf(stderr, "net_bench: the standalone daemon did not come up\n");
        g_failed = true;
        return;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // segment prefault finishes
    std::printf("Put / Get over loopback vs a raw TCP copy of the same bytes (one client, "
                "median of %d interleaved rounds; ratio = raw time / store time, 1.0 = as fast "
                "as the raw copy):\n\n",
                rounds);
    std::printf("| size | raw put us | raw get us | Put us | Get us | BatchPut us | BatchGet us "
                "| Put / raw | Get / raw | BatchPut / raw | BatchGet / raw |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
        int iterations = size < (1 << 20) ? 1000 : 150;
        if (quick) iterations /= 4;
        RawServer server(size * static_cast<size_t>(iterations));
        MeasureStore(*s.client, size, 50);  // warm-up: connections, page faults
        MeasureRaw(server, size, 50);
        std::vector<double> raw_put, raw_get, put, get, bput, bget, rput, rget, rbput, rbget;
        for (int round = 0; round < rounds; ++round) {
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
        }
        std::printf("| %zu KiB | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | "
                    "%.2f |\n",
                    size >> 10, Median(raw_put), Median(raw_get), Median(put), Median(get),
                    Median(bput), Median(bget), Median(rput), Median(rget), Median(rbput),
                    Median(rbget));
        std::fflush(stdout);
    }
    std::printf("\n");
}

// Promotion trigger -> COMPLETE latency (the master's histogram), idle and under a read load
// of MEMORY keys by two threads.
void PromotionLatency(bool quick) {
    std::printf("Promotion trigger -> COMPLETE over loopback (standalone daemon, LOCAL_DISK in a "
                "temp dir; the daemon's mooncake_promotion_latency_seconds histogram):\n\n");
    std::printf("| size | load | promotions | p50 ms | p99 ms | tasks per round trip |\n");
    std::printf("| --- | --- | ---: | ---: | ---: | ---: |\n");
    for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
        for (const char* mode : {"idle", "loaded"}) {
            const bool loaded = std::string(mode) == "loaded";
            Standalone s({"--dram_size=256MiB", "--log_level=warn"}, "512MiB");
            if (s.client == nullptr) {
                g_failed = true;
                return;
            }
            Client* client = s.client.get();
            int n = size < (1 << 20) ? 200 : 100;
            if (quick) n /= 2;
            std::vector<std::string> keys;
            for (int i = 0; i < n; ++i) {
                keys.push_back("p/" + std::to_string(i));
                Check(client->Put(keys.back(), Pattern(static_cast<uint64_t>(i), size)).ok(),
                      "Put");
            }
            Check(client->Evict(keys).ok(), "Evict");
            Check(test::WaitFor(
                      [&] {
                          for (const auto& k : keys) {
                              auto info = client->Stat(k);
                              if (!info.ok() || test::HasTier(*info, Tier::kMemory)) return false;
                          }
                          return true;
                      },
                      std::chrono::seconds(30)),
                  "eviction to LOCAL_DISK");
            std::atomic<bool> stop{false};
            std::vector<std::thread> readers;
            if (loaded) {
                for (int i = 0; i < 20; ++i) {
                    Check(client->Put("hotmem/" + std::to_string(i),
                                      Pattern(static_cast<uint64_t>(i), size))
                              .ok(),
                          "Put");
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
            for (const auto& k : keys) {
                (void)client->GetInto(k, out);
                (void)client->GetInto(k, out);  // the second read crosses the threshold
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            test::WaitFor([&] {
                auto t = client->Tasks();
                return t.ok() && t->empty();
            });
            stop.store(true);
            for (auto& th : readers) th.join();
            auto text = client->MetricsText();
            if (!text.ok()) {
                g_failed = true;
                return;
            }
            const std::string h = "mooncake_promotion_latency_seconds";
            std::printf("| %zu KiB | %s | %.0f | %.2f | %.2f | %.2f |\n", size >> 10, mode,
                        test::MetricValue(*text, "mooncake_promotion_completed_total"),
                        HistogramQuantile(*text, h, 0.5) * 1e3,
                        HistogramQuantile(*text, h, 0.99) * 1e3,
                        test::MetricValue(*text, "mooncake_node_promotion_tasks_received_total") /
                            test::MetricValue(*text, "mooncake_node_promotion_batches_total"));
            std::fflush(stdout);
        }
    }
    std::printf("\n");
}

// Where a Get's time goes.
void Breakdown() {
    Standalone s({"--dram_size=512MiB", "--enable_offload=false", "--log_level=warn"});
    if (s.client == nullptr) {
        g_failed = true;
        return;
    }
    std::printf("Get breakdown (us per call, 300 calls):\n\n");
    std::printf("| size | control RPC (Exists) | data read | data write | replica list | Get |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
        std::string value = Pattern(3, size);
        Check(s.client->Put("bd", value).ok(), "Put");
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
        std::printf("| %zu KiB | %.1f | %.1f | %.1f | %.1f | %.1f |\n", size >> 10,
                    Seconds(t1 - t0).count() / n * 1e6, Seconds(t2 - t1).count() / n * 1e6,
                    Seconds(t3 - t2).count() / n * 1e6, Seconds(t4 - t3).count() / n * 1e6,
                    Seconds(t5 - t4).count() / n * 1e6);
        Check(s.client->Remove("bd", true).ok(), "Remove");
    }
    std::printf("\n");
}

}  // namespace
}  // namespace mooncake::bench

int main(int argc, char** argv) {
    int rounds = 9;
    bool quick = false, breakdown = false, promotion = true, copy = true;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--rounds" && i + 1 < argc) {
            rounds = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--quick") {
            quick = true;
        } else if (a == "--breakdown") {
            breakdown = true;
        } else if (a == "--no-promotion") {
            promotion = false;
        } else if (a == "--no-copy") {
            copy = false;
        } else {
            std::fprintf(stderr, "usage: net_bench [--rounds N] [--quick] [--breakdown] "
                                 "[--no-promotion] [--no-copy]\n");
            return 2;
        }
    }
    if (copy) mooncake::bench::CopyVersusRaw(rounds, quick);
    if (promotion) mooncake::bench::PromotionLatency(quick);
    if (breakdown) mooncake::bench::Breakdown();
    return mooncake::bench::g_failed ? 1 : 0;
}
