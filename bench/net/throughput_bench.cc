// throughput_bench: aggregate GB/s and ops/s of Put, Get (MEMORY), Get (LOCAL_DISK), BatchPut
// and BatchGet through the client library, at several value sizes and client thread counts,
// each against a raw TCP loopback copy of the same bytes by the same number of threads in the
// same run (ratio = raw time / store time; 1.0 = as fast as the raw copy). It starts its own
// daemons through the integration harness: a standalone mooncaked, then a master and two nodes
// (separate processes on loopback ports). bench/run-throughput.sh runs it and renders the rows.
//
//   throughput_bench [--quick] [--rounds N] [--topology standalone|cluster|both]
//                    [--sizes 4096,65536,...] [--threads 1,4,16] [--ops Put,Get,...]
//
// Output: one JSON object per line (a row per topology, op, size and thread count).
//
// Memory: a cell moves `threads * ops_per_thread` values; the values one Put cell leaves are
// removed before the next, so a daemon's DRAM must hold one cell's puts: threads x size (4 GiB
// at 16 x 256 MiB). The segments are sized from the largest planned cell (the standalone gets
// all of it, each node half) and said on stderr. Readers' destination buffers and the raw
// server's buffers are capped (kBufferBudget); above it threads share buffers, which is safe
// for the bytes because every value of a cell has the same contents (checked after the cell).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/net.h"
#include "tests/integration/harness.h"

namespace mooncake::bench {
namespace {

using test::Pattern;
using Seconds = std::chrono::duration<double>;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBufferBudget = 512 * kMiB;  // client destination buffers, raw server buffers
constexpr size_t kGetSetBudget = 512 * kMiB;  // distinct keys a Get cell reads from
constexpr size_t kBatchBytes = 64 * kMiB;     // bytes of one batch call (at most 32 keys)

std::atomic<int> g_failures{0};  // checks failed so far (a row says how many were its own)
void Check(bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "throughput_bench: %s failed\n", what.c_str());
    g_failures.fetch_add(1);
}

// Runs body(t) on `threads` threads released together; returns the wall time until the last
// one finished (thread start-up excluded).
double Timed(int threads, const std::function<void(int)>& body) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            ready.fetch_add(1);
            while (!go.load()) std::this_thread::yield();
            body(t);
        });
    }
    while (ready.load() < threads) std::this_thread::yield();
    auto t0 = std::chrono::steady_clock::now();
    go.store(true);
    for (auto& th : pool) th.join();
    return Seconds(std::chrono::steady_clock::now() - t0).count();
}

// Buffers of one size, at most kBufferBudget of them (at least one): slot i uses i % count.
class Buffers {
public:
    Buffers(size_t size, size_t wanted) {
        size_t n = std::max<size_t>(1, std::min(wanted, kBufferBudget / size));
        for (size_t i = 0; i < n; ++i) bufs_.emplace_back(size);
    }
    std::span<std::byte> at(size_t slot) { return bufs_[slot % bufs_.size()]; }
    void Clear() {
        for (auto& b : bufs_) std::fill(b.begin(), b.end(), std::byte{0});
    }
    // After Clear and a cell: slot 0 and every buffer the cell wrote hold `want`.
    bool Holds(const std::string& want) const {
        const std::vector<std::byte> zero(want.size());
        for (size_t i = 0; i < bufs_.size(); ++i) {
            const auto& b = bufs_[i];
            if (std::memcmp(b.data(), want.data(), want.size()) == 0) continue;
            if (i == 0 || std::memcmp(b.data(), zero.data(), zero.size()) != 0) return false;
        }
        return true;
    }

private:
    std::vector<std::vector<std::byte>> bufs_;
};

// The baseline: a raw TCP server shaped like our ops, one thread per connection. "put" = an
// 8-byte size then the value, answered by a 1-byte ack; "get" = an 8-byte size (negative),
// answered by that many bytes. Every connection cycles through one shared working set, as the
// store's Gets cycle through their keys' segment ranges.
class RawServer {
public:
    // A put whose size carries this bit is not acknowledged: the values of a raw batch stream
    // back to back and only the last one is answered.
    static constexpr int64_t kNoAck = int64_t{1} << 62;

    explicit RawServer(size_t working_set) : buf_(working_set, 1) {
        auto fd = net::ListenTcp({"127.0.0.1", 0});
        listener_ = std::move(*fd);
        port_ = *net::BoundPort(listener_.get());
        acceptor_ = std::thread([this] { Accept(); });
    }
    ~RawServer() {
        ::shutdown(listener_.get(), SHUT_RDWR);
        acceptor_.join();
        std::lock_guard lock(mu_);
        for (int fd : conns_) ::shutdown(fd, SHUT_RDWR);
        for (auto& th : threads_) th.join();
    }
    uint16_t port() const { return port_; }

private:
    void Accept() {
        for (;;) {
            int fd = ::accept(listener_.get(), nullptr, nullptr);
            if (fd < 0) return;
            std::lock_guard lock(mu_);
            conns_.push_back(fd);
            threads_.emplace_back([this, fd] { Serve(fd); });
        }
    }
    void Serve(int fd) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        size_t at = 0;
        for (;;) {
            int64_t header = 0;
            if (!net::RecvAll(fd, &header, 8).ok()) break;
            size_t n = static_cast<size_t>(header > 0 ? header & ~kNoAck : -header);
            if (n > buf_.size()) break;
            if (at + n > buf_.size()) at = 0;
            if (header > 0) {
                if (!net::RecvAll(fd, buf_.data() + at, n).ok()) break;
                if (!(header & kNoAck)) {
                    char ack = 1;
                    if (!net::SendAll(fd, &ack, 1).ok()) break;
                }
            } else {
                if (!net::SendAll(fd, buf_.data() + at, n).ok()) break;
            }
            at += n;
        }
        ::close(fd);
    }
    std::vector<char> buf_;
    net::Fd listener_;
    uint16_t port_ = 0;
    std::thread acceptor_;
    std::mutex mu_;
    std::vector<int> conns_;
    std::vector<std::thread> threads_;
};

// One (size, threads) group's shape.
struct Plan {
    size_t size = 0;
    int threads = 1;
    int per_thread = 1;  // values each thread moves per cell
    int batch = 1;       // keys per batch call
    int get_keys = 1;    // distinct keys the Get cells cycle through
    size_t ops() const { return static_cast<size_t>(per_thread) * static_cast<size_t>(threads); }
};

Plan MakePlan(size_t size, int threads, bool quick) {
    Plan p;
    p.size = size;
    p.threads = threads;
    const size_t cell_bytes = (quick ? 256 : 1024) * kMiB;
    const size_t max_ops = quick ? 4000 : 16000;
    // At least 4 values a cell (one 256 MiB value is too short a sample on a busy box); one
    // per thread at most where that would pass 16 x 256 MiB of DRAM per cell.
    size_t ops = std::clamp<size_t>(cell_bytes / size, 4, max_ops);
    p.per_thread = static_cast<int>(std::max<size_t>(1, ops / static_cast<size_t>(threads)));
    p.batch = static_cast<int>(std::clamp<size_t>(kBatchBytes / size, 1, 32));
    p.get_keys = static_cast<int>(std::clamp<size_t>(kGetSetBudget / size, 1, p.ops()));
    return p;
}

// The destination buffer of thread t's i-th value: a batch's values need distinct buffers, and
// the single Gets and the raw copy cycle through the same ones, so every read op writes the
// same memory (a single Get into one cache-warm buffer would flatter it).
size_t Slot(const Plan& p, int t, int i) {
    return static_cast<size_t>(t) * static_cast<size_t>(p.batch) +
           static_cast<size_t>(i % p.batch);
}

// DRAM one Put cell needs: all its values at once (they are removed before the next cell).
size_t PutFootprint(const Plan& p) { return p.ops() * p.size; }

std::string Key(const std::string& op, const Plan& p, size_t i) {
    return "tb/" + op + "/" + std::to_string(p.size) + "/" + std::to_string(p.threads) + "/" +
           std::to_string(i);
}

// Raw baselines: the same bytes, the same threads, one exchange per value, on connections
// opened once per group and warmed up (the store's pooled data connections are warm too; a
// fresh loopback connection starts with small socket buffers).
class RawClients {
public:
    RawClients(RawServer& server, const Plan& p, const std::string& value, Buffers& out) {
        for (int t = 0; t < p.threads; ++t) {
            auto fd = net::ConnectTcp({"127.0.0.1", server.port()}, std::chrono::seconds(5));
            Check(fd.ok(), "raw connect");
            if (!fd.ok()) return;
            fds_.push_back(std::move(*fd));
        }
        Plan warm = p;
        warm.per_thread = std::max(1, std::min(p.per_thread, 4));
        Put(warm, value);
        Get(warm, out);
    }
    bool ok() const { return !fds_.empty(); }

    double Put(const Plan& p, const std::string& value) {
        return Timed(p.threads, [&](int t) {
            for (int i = 0; i < p.per_thread; ++i) {
                int64_t header = static_cast<int64_t>(p.size);
                iovec iov[2] = {{&header, 8}, {const_cast<char*>(value.data()), p.size}};
                Check(net::SendAll(fds_[t].get(), iov).ok(), "raw put");
                char ack;
                Check(net::RecvAll(fds_[t].get(), &ack, 1).ok(), "raw put ack");
            }
        });
    }

    double Get(const Plan& p, Buffers& out) {
        return Timed(p.threads, [&](int t) {
            for (int i = 0; i < p.per_thread; ++i) {
                std::span<std::byte> buf = out.at(Slot(p, t, i));
                int64_t header = -static_cast<int64_t>(p.size);
                Check(net::SendAll(fds_[t].get(), &header, 8).ok(), "raw get");
                Check(net::RecvAll(fds_[t].get(), buf.data(), p.size).ok(), "raw get bytes");
            }
        });
    }

    // The batch baselines: a batch's values as one stream, one ack per batch (put), or one
    // send of the batch's requests and its values back to back into their slots (get) —
    // what a pipelined store batch is held to.
    double BatchPut(const Plan& p, const std::string& value) {
        return Timed(p.threads, [&](int t) {
            for (int i = 0; i < p.per_thread; i += p.batch) {
                const int n = std::min(p.per_thread, i + p.batch) - i;
                std::vector<int64_t> headers(static_cast<size_t>(n));
                std::vector<iovec> iov;
                for (int j = 0; j < n; ++j) {
                    headers[j] = static_cast<int64_t>(p.size) | (j + 1 < n ? RawServer::kNoAck : 0);
                    iov.push_back({&headers[j], 8});
                    iov.push_back({const_cast<char*>(value.data()), p.size});
                }
                Check(net::SendAll(fds_[t].get(), iov).ok(), "raw batch put");
                char ack;
                Check(net::RecvAll(fds_[t].get(), &ack, 1).ok(), "raw batch put ack");
            }
        });
    }

    double BatchGet(const Plan& p, Buffers& out) {
        return Timed(p.threads, [&](int t) {
            for (int i = 0; i < p.per_thread; i += p.batch) {
                const int n = std::min(p.per_thread, i + p.batch) - i;
                std::vector<int64_t> headers(static_cast<size_t>(n), -static_cast<int64_t>(p.size));
                Check(net::SendAll(fds_[t].get(), headers.data(), headers.size() * 8).ok(),
                      "raw batch get");
                std::vector<iovec> iov;
                for (int j = 0; j < n; ++j) iov.push_back({out.at(Slot(p, t, i + j)).data(), p.size});
                Check(net::RecvAll(fds_[t].get(), iov).ok(), "raw batch get bytes");
            }
        });
    }

private:
    std::vector<net::Fd> fds_;
};

double StorePut(Client& c, const Plan& p, const std::string& value) {
    auto bytes = std::as_bytes(std::span(value));
    return Timed(p.threads, [&](int t) {
        for (int i = 0; i < p.per_thread; ++i) {
            Status st = c.Put(Key("put", p, static_cast<size_t>(t * p.per_thread + i)), bytes);
            Check(st.ok(), "Put: " + st.ToString());
        }
    });
}

double StoreBatchPut(Client& c, const Plan& p, const std::string& value) {
    auto bytes = std::as_bytes(std::span(value));
    return Timed(p.threads, [&](int t) {
        for (int i = 0; i < p.per_thread; i += p.batch) {
            std::vector<std::pair<std::string, std::span<const std::byte>>> items;
            for (int j = i; j < std::min(p.per_thread, i + p.batch); ++j) {
                items.emplace_back(Key("bput", p, static_cast<size_t>(t * p.per_thread + j)),
                                   bytes);
            }
            for (const Status& st : c.BatchPut(items)) Check(st.ok(), "BatchPut: " + st.ToString());
        }
    });
}

// Get cells read key (t * per_thread + i) % get_keys of `prefix`; every read must come from
// `tier`.
double StoreGet(Client& c, const Plan& p, const std::string& prefix, Tier tier, Buffers& out) {
    std::atomic<int> wrong_tier{0};
    double s = Timed(p.threads, [&](int t) {
        for (int i = 0; i < p.per_thread; ++i) {
            std::span<std::byte> buf = out.at(Slot(p, t, i));
            size_t k = static_cast<size_t>(t * p.per_thread + i) % static_cast<size_t>(p.get_keys);
            Tier from = Tier::kMemory;
            auto got = c.GetInto(Key(prefix, p, k), buf, &from);
            Check(got.ok(), "Get: " + got.status().ToString());
            if (from != tier) wrong_tier.fetch_add(1);
        }
    });
    Check(wrong_tier.load() == 0, std::to_string(wrong_tier.load()) + " Gets served from " +
                                      "another tier than " + std::string(TierName(tier)));
    return s;
}

double StoreBatchGet(Client& c, const Plan& p, const std::string& prefix, Buffers& out) {
    return Timed(p.threads, [&](int t) {
        for (int i = 0; i < p.per_thread; i += p.batch) {
            std::vector<std::string> keys;
            std::vector<std::span<std::byte>> outs;
            for (int j = i; j < std::min(p.per_thread, i + p.batch); ++j) {
                size_t n = static_cast<size_t>(t * p.per_thread + j);
                keys.push_back(Key(prefix, p, n % static_cast<size_t>(p.get_keys)));
                outs.push_back(out.at(Slot(p, t, j)));
            }
            for (const auto& got : c.BatchGetInto(keys, outs)) {
                Check(got.ok(), "BatchGet: " + got.status().ToString());
            }
        }
    });
}

void PutKeys(Client& c, const Plan& p, const std::string& prefix, const std::string& value) {
    auto bytes = std::as_bytes(std::span(value));
    for (int k = 0; k < p.get_keys; ++k) {
        Status st = c.Put(Key(prefix, p, static_cast<size_t>(k)), bytes);
        Check(st.ok(), "Put (set-up): " + st.ToString());
    }
}

bool DiskOnly(Client& c, const std::vector<std::string>& keys) {
    for (const auto& k : keys) {
        auto info = c.Stat(k);
        if (!info.ok() || test::HasTier(*info, Tier::kMemory) ||
            !test::HasTier(*info, Tier::kLocalDisk)) {
            return false;
        }
    }
    return true;
}

// Moves the disk cell's keys to LOCAL_DISK only: offload, evict, then check each.
bool ToDiskOnly(Client& c, const Plan& p) {
    std::vector<std::string> keys;
    for (int k = 0; k < p.get_keys; ++k) keys.push_back(Key("disk", p, static_cast<size_t>(k)));
    MoveWaitOptions wait;
    wait.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (TierMove move : {TierMove::kOffload, TierMove::kEvict}) {
        auto moved = c.WaitForMove(move, keys, wait);
        if (!moved.ok()) return false;
        for (const auto& r : *moved) {
            if (r.end != MoveEnd::kReached) {
                std::fprintf(stderr, "throughput_bench: %s of %s: %s\n",
                             std::string(TierMoveName(move)).c_str(), r.key.c_str(),
                             r.status.ToString().c_str());
                return false;
            }
        }
    }
    return DiskOnly(c, keys);
}

struct Row {
    std::string topology, op;
    size_t size = 0;
    int threads = 0;
    size_t ops = 0;
    std::vector<double> store_s, raw_s;
    int failures = 0;  // failed checks in its cells: its figures are not to be trusted
};

double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void Print(const Row& r) {
    // Per-round ratios, median: each store cell against the raw cell of its own round.
    std::vector<double> ratios;
    for (size_t i = 0; i < r.store_s.size(); ++i) ratios.push_back(r.raw_s[i] / r.store_s[i]);
    double store = Median(r.store_s), raw = Median(r.raw_s);
    double bytes = static_cast<double>(r.ops) * static_cast<double>(r.size);
    std::printf("{\"topology\": \"%s\", \"op\": \"%s\", \"size\": %zu, \"threads\": %d, "
                "\"ops\": %zu, \"rounds\": %zu, \"store_s\": %.6f, \"raw_s\": %.6f, "
                "\"store_gbps\": %.4f, \"raw_gbps\": %.4f, \"ops_per_s\": %.1f, "
                "\"ratio\": %.3f, \"failed_checks\": %d}\n",
                r.topology.c_str(), r.op.c_str(), r.size, r.threads, r.ops, r.store_s.size(), store,
                raw, bytes / store / 1e9, bytes / raw / 1e9, static_cast<double>(r.ops) / store,
                Median(ratios), r.failures);
    std::fflush(stdout);
}

struct Options {
    bool quick = false;
    int rounds = 3;  // --quick: 3 too, on smaller cells
    std::vector<std::string> topologies{"standalone", "cluster"};
    std::vector<size_t> sizes{4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20};
    std::vector<int> threads{1, 4, 16};
    std::set<std::string> ops{"Put", "Get", "GetDisk", "BatchPut", "BatchGet"};
};

void RunGroup(const std::string& topology, Client& c, const Plan& p, const Options& o) {
    const std::string value = Pattern(p.size, p.size);
    const size_t working = std::max(p.size, std::min(kGetSetBudget, p.size * p.get_keys));
    RawServer server(working);
    Buffers out(p.size, static_cast<size_t>(p.threads * p.batch));
    RawClients raw(server, p, value, out);
    if (!raw.ok()) return;
    std::map<std::string, Row> rows;
    auto row = [&](const std::string& op) -> Row& {
        Row& r = rows[op];
        r.topology = topology;
        r.op = op;
        r.size = p.size;
        r.threads = p.threads;
        r.ops = p.ops();
        return r;
    };
    auto clear = [&](const std::string& prefix) {
        Check(c.RemoveByPrefix("tb/" + prefix + "/", true).ok(), "RemoveByPrefix");
    };
    const bool disk = o.ops.count("GetDisk") > 0;
    if (disk) {
        int before = g_failures.load();
        PutKeys(c, p, "disk", value);
        Check(ToDiskOnly(c, p), "moving the disk cell's keys to LOCAL_DISK only");
        row("GetDisk").failures += g_failures.load() - before;
    }
    // Failed checks from here on are charged to the row whose cell made them.
    int mark = g_failures.load();
    auto charge = [&](Row& r) {
        int now = g_failures.load();
        r.failures += now - mark;
        mark = now;
    };
    for (int round = 0; round < o.rounds; ++round) {
        double raw_put = raw.Put(p, value);
        mark = g_failures.load();
        if (o.ops.count("Put")) {
            Row& r = row("Put");
            r.store_s.push_back(StorePut(c, p, value));
            r.raw_s.push_back(raw_put);
            clear("put");
            charge(r);
        }
        if (o.ops.count("BatchPut")) {
            Row& r = row("BatchPut");
            r.store_s.push_back(StoreBatchPut(c, p, value));
            r.raw_s.push_back(raw.BatchPut(p, value));
            clear("bput");
            charge(r);
        }
        double raw_get = raw.Get(p, out);
        mark = g_failures.load();
        if (o.ops.count("Get") || o.ops.count("BatchGet")) PutKeys(c, p, "mem", value);
        if (o.ops.count("Get")) {
            Row& r = row("Get");
            out.Clear();
            r.store_s.push_back(StoreGet(c, p, "mem", Tier::kMemory, out));
            r.raw_s.push_back(raw_get);
            Check(out.Holds(value), "Get bytes");
            charge(r);
        }
        if (o.ops.count("BatchGet")) {
            Row& r = row("BatchGet");
            out.Clear();
            r.store_s.push_back(StoreBatchGet(c, p, "mem", out));
            Check(out.Holds(value), "BatchGet bytes");
            // Against the raw batch (one request stream, values back to back), run after
            // the store's bytes were checked (it writes the raw server's bytes).
            r.raw_s.push_back(raw.BatchGet(p, out));
            charge(r);
        }
        clear("mem");
        if (disk) {
            mark = g_failures.load();
            std::vector<std::string> keys;
            for (int k = 0; k < p.get_keys; ++k) keys.push_back(Key("disk", p, size_t(k)));
            // Promotion off for this cell: every read stays a LOCAL_DISK read.
            Check(c.TuneSet({{"promotion_on_hit", "false"}}).ok(), "tune promotion_on_hit");
            Check(DiskOnly(c, keys), "disk keys LOCAL_DISK-only before the cell");
            Row& r = row("GetDisk");
            out.Clear();
            r.store_s.push_back(StoreGet(c, p, "disk", Tier::kLocalDisk, out));
            r.raw_s.push_back(raw_get);
            Check(out.Holds(value), "Get (LOCAL_DISK) bytes");
            Check(DiskOnly(c, keys), "disk keys LOCAL_DISK-only after the cell");
            Check(c.TuneSet({{"promotion_on_hit", "true"}}).ok(), "tune promotion_on_hit");
            charge(r);
        }
    }
    if (disk) clear("disk");
    for (const char* op : {"Put", "BatchPut", "Get", "BatchGet", "GetDisk"}) {
        if (rows.count(op)) Print(rows[op]);
    }
}

std::string SizeFlag(size_t bytes) { return std::to_string((bytes + kMiB - 1) / kMiB) + "MiB"; }

void Run(const Options& o) {
    std::vector<Plan> plans;
    size_t need = 0, disk_need = 0;
    for (size_t size : o.sizes) {
        for (int t : o.threads) {
            plans.push_back(MakePlan(size, t, o.quick));
            need = std::max(need, PutFootprint(plans.back()));
            disk_need = std::max(disk_need, plans.back().size * plans.back().get_keys);
        }
    }
    // One Put cell's values (a cell's keys are removed before the next cell's are put), and
    // room under the eviction watermark.
    const size_t dram = std::max(need, kGetSetBudget) * 21 / 20 + 64 * kMiB;
    // The disk store evicts its oldest records when full, and the space of removed keys comes
    // back only as its holder catches up: room for several groups' disk keys, so that one
    // group's keys are never evicted by the next group's offloads.
    const size_t disk = std::max<size_t>(disk_need * 8, 4096 * kMiB);
    // Defaults otherwise: offload only on eviction (the Put cells fit in DRAM, so they write
    // no disk), promotion on (turned off around the LOCAL_DISK cell).
    const std::vector<std::string> common = {"--log_level=warn"};
    for (const std::string& topology : o.topologies) {
        std::unique_ptr<test::Standalone> standalone;
        std::unique_ptr<test::Cluster> cluster;
        Client* client = nullptr;
        if (topology == "standalone") {
            std::fprintf(stderr, "throughput_bench: standalone mooncaked, DRAM %s, disk %s\n",
                         SizeFlag(dram).c_str(), SizeFlag(disk).c_str());
            std::vector<std::string> args = common;
            args.push_back("--dram_size=" + SizeFlag(dram));
            standalone = std::make_unique<test::Standalone>(args, SizeFlag(disk));
            // Mapping GiBs of DRAM and a new disk store can outlast the harness's 10 s wait
            // on a loaded box: give a large daemon a minute more before calling it down.
            if (standalone->client == nullptr) {
                standalone->client = test::ConnectWhenUp(standalone->address,
                                                         std::chrono::seconds(60));
            }
            client = standalone->client.get();
        } else {
            std::fprintf(stderr, "throughput_bench: master + 2 nodes, DRAM %s and disk %s each\n",
                         SizeFlag(dram / 2 + 256 * kMiB).c_str(), SizeFlag(disk).c_str());
            // Heartbeats late by seconds on a loaded box must not expire a node mid-run (the
            // harness shortens the expiry to 3 s for the failure tests).
            std::vector<std::string> master_args = common;
            master_args.push_back("--client_live_ttl_sec=60");
            cluster = std::make_unique<test::Cluster>(master_args);
            for (int n = 0; n < 2; ++n) {
                std::vector<std::string> args = common;
                args.push_back("--disk_size=" + SizeFlag(disk));
                cluster->AddNode(SizeFlag(dram / 2 + 256 * kMiB), true, args);
            }
            if (cluster->client != nullptr && !cluster->WaitForNodes(2)) cluster->client.reset();
            client = cluster->client.get();
        }
        if (client == nullptr) {
            std::fprintf(stderr, "throughput_bench: the %s daemons did not come up\n",
                         topology.c_str());
            g_failures.fetch_add(1);
            continue;
        }
        std::this_thread::sleep_for(std::chrono::seconds(2));  // segment prefault finishes
        for (const Plan& p : plans) {
            std::fprintf(stderr, "throughput_bench: %s, %zu KiB, %d thread(s), %zu values/cell\n",
                         topology.c_str(), p.size >> 10, p.threads, p.ops());
            RunGroup(topology, *client, p, o);
        }
    }
}

template <typename T>
std::vector<T> ParseList(const std::string& s, T (*parse)(const std::string&)) {
    std::vector<T> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');) {
        if (!item.empty()) out.push_back(parse(item));
    }
    return out;
}

}  // namespace
}  // namespace mooncake::bench

int main(int argc, char** argv) {
    using namespace mooncake::bench;
    Options o;
    bool rounds_given = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
        if (a == "--quick") {
            o.quick = true;
        } else if (a == "--rounds") {
            o.rounds = std::max(1, std::atoi(next().c_str()));
            rounds_given = true;
        } else if (a == "--topology") {
            std::string t = next();
            o.topologies = t == "both" ? std::vector<std::string>{"standalone", "cluster"}
                                       : std::vector<std::string>{t};
        } else if (a == "--sizes") {
            o.sizes = ParseList<size_t>(next(), [](const std::string& s) {
                return static_cast<size_t>(std::stoull(s));
            });
        } else if (a == "--threads") {
            o.threads = ParseList<int>(next(), [](const std::string& s) { return std::stoi(s); });
        } else if (a == "--ops") {
            auto ops = ParseList<std::string>(next(), [](const std::string& s) { return s; });
            o.ops = std::set<std::string>(ops.begin(), ops.end());
        } else {
            std::fprintf(stderr,
                         "usage: throughput_bench [--quick] [--rounds N] [--topology "
                         "standalone|cluster|both] [--sizes B,B,..] [--threads N,N,..] "
                         "[--ops Put,Get,GetDisk,BatchPut,BatchGet]\n");
            return 2;
        }
    }
    if (o.quick && !rounds_given) o.rounds = 3;
    for (const auto& t : o.topologies) {
        if (t != "standalone" && t != "cluster") {
            std::fprintf(stderr, "throughput_bench: unknown topology %s\n", t.c_str());
            return 2;
        }
    }
    Run(o);
    return g_failures.load() > 0 ? 1 : 0;
}
