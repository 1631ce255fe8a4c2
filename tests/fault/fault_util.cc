#include "tests/fault/fault_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace mooncake::test {

std::string FaultDaemonPath() { return MOONCAKED_FAULT_PATH; }

std::string NodeMetrics(const std::string& host, uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    std::string out;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        std::string req = "GET /metrics HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
        if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
            char buf[8192];
            for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
        }
    }
    ::close(fd);
    return out;
}

double MasterMetric(Client& client, const std::string& series) {
    auto text = client.MetricsText();
    return text.ok() ? MetricValue(*text, series) : std::nan("");
}

FaultDir::FaultDir(std::string path) : path_(std::move(path)) {
    std::filesystem::create_directories(path_);
}

bool FaultDir::Reached(const std::string& point) const {
    return ::access((path_ + "/" + point + ".reached").c_str(), F_OK) == 0;
}

bool FaultDir::WaitReached(const std::string& point, std::chrono::milliseconds timeout) const {
    return WaitFor([&] { return Reached(point); }, timeout);
}

void FaultDir::Release(const std::string& point) const {
    std::ofstream(path_ + "/" + point + ".release") << "go\n";
}

void FaultDir::Hold(const std::string& point) const {
    std::error_code ec;
    std::filesystem::remove(path_ + "/" + point + ".release", ec);
    std::filesystem::remove(path_ + "/" + point + ".reached", ec);
}

std::vector<std::pair<std::string, std::string>> FaultDir::Env(const std::string& spec) const {
    return {{"MOONCAKE_FAULTS", spec}, {"MOONCAKE_FAULT_DIR", path_}};
}

std::vector<WrittenKey> PutKeys(Client& client, const std::string& prefix, size_t n, size_t size,
                                uint64_t seed_base) {
    std::vector<WrittenKey> out;
    for (size_t i = 0; i < n; ++i) {
        WrittenKey k{prefix + std::to_string(i), seed_base + i, size, true};
        Status st = client.Put(k.key, Pattern(k.seed, k.size));
        EXPECT_TRUE(st.ok()) << k.key << ": " << st.ToString();
        out.push_back(std::move(k));
    }
    return out;
}

std::vector<std::string> Names(const std::vector<WrittenKey>& keys) {
    std::vector<std::string> out;
    for (const WrittenKey& k : keys) out.push_back(k.key);
    return out;
}

bool DiskOnly(const ObjectInfo& info) {
    return HasTier(info, Tier::kLocalDisk) && !HasTier(info, Tier::kMemory);
}

bool WaitAllStat(Client& client, const std::vector<std::string>& keys,
                 const std::function<bool(const ObjectInfo&)>& pred,
                 std::chrono::milliseconds timeout) {
    return WaitFor(
        [&] {
            for (const std::string& k : keys) {
                auto info = client.Stat(k);
                if (!info.ok() || !pred(*info)) return false;
            }
            return true;
        },
        timeout);
}

void ExpectAfterLosing(Client& client, std::vector<WrittenKey>& keys, NodeId lost, bool keep_disk) {
    for (WrittenKey& k : keys) {
        auto info = client.Stat(k.key);
        k.survives = false;
        if (!info.ok()) {
            EXPECT_TRUE(info.status().Is(StatusCode::kNotFound)) << info.status().ToString();
            continue;
        }
        for (const ReplicaDesc& r : info->object.replicas) {
            if (r.state != ReplicaState::kComplete) continue;
            if (r.node != lost || (keep_disk && r.tier == Tier::kLocalDisk)) k.survives = true;
        }
    }
}

namespace {

std::string Describe(const InvariantReport& r) {
    std::ostringstream out;
    out << "objects " << r.objects << ", DRAM used " << r.dram_used << " / allocated "
        << r.dram_allocated << ", pins " << r.pins << ", promotion tasks " << r.promotion_tasks
        << ", offload tasks " << r.offload_tasks;
    for (const std::string& v : r.violations) out << "\n  violation: " << v;
    return out.str();
}

// Clean, nothing pinned, nothing in flight.
bool Settled(Client& client, std::string* last) {
    auto report = client.CheckInvariants();
    if (!report.ok()) {
        *last = "CheckInvariants: " + report.status().ToString();
        return false;
    }
    *last = Describe(*report);
    return report->ok() && report->pins == 0 && report->promotion_tasks == 0 &&
           report->offload_tasks == 0;
}

}  // namespace

void WaitSettled(Client& client, const std::string& when, std::chrono::milliseconds settle) {
    std::string last;
    EXPECT_TRUE(WaitFor([&] { return Settled(client, &last); }, settle))
        << when << ": the store did not settle clean within " << settle.count() << " ms: " << last;
}

size_t SettleAndCheck(Client& client, const std::vector<WrittenKey>& keys, const std::string& when,
                      std::chrono::milliseconds settle) {
    WaitSettled(client, when, settle);
    std::string last;
    size_t reads = 0, survived = 0, lost = 0;
    for (const WrittenKey& k : keys) {
        auto got = client.Get(k.key);
        ++reads;
        if (k.survives) {
            if (!got.ok()) {
                ADD_FAILURE() << when << ": " << k.key
                              << " has a surviving replica but reads: " << got.status().ToString();
            } else if (*got != Pattern(k.seed, k.size)) {
                ADD_FAILURE() << when << ": " << k.key << " read back different bytes ("
                              << got->size() << " bytes, want " << k.size << ")";
            } else {
                ++survived;
            }
        } else if (got.ok()) {
            ADD_FAILURE() << when << ": " << k.key << " lost every replica but still reads "
                          << (*got == Pattern(k.seed, k.size) ? "its bytes" : "OTHER bytes");
        } else if (got.status().Is(StatusCode::kNotFound)) {
            ++lost;
        } else {
            EXPECT_TRUE(got.status().Is(StatusCode::kNotFound))
                << when << ": " << k.key << " lost: want NotFound, got " << got.status().ToString();
        }
    }
    EXPECT_TRUE(WaitFor([&] { return Settled(client, &last); }, settle))
        << when << ": not clean after the reads: " << last;
    std::printf("[ check    ] %s: %zu/%zu keys read back identical, %zu NotFound as expected\n",
                when.c_str(), survived, keys.size(), lost);
    return reads;
}

void Figures::Print(const std::string& scenario) const {
    std::printf("[ figures  ] %s: %zu keys x %zu operations survived, %zu faults injected\n",
                scenario.c_str(), keys, operations, faults);
}

void UseFaultNodes(Cluster& c, const FaultDir& faults, const std::string& spec) {
    c.node_binary = FaultDaemonPath();
    c.node_env = faults.Env(spec);
}

NamespaceCluster::NamespaceCluster(const std::string& token)
    : token_(token), token_file_(dir.Sub("token")) {
    std::ofstream(token_file_) << token << "\n";
}

std::string NamespaceCluster::Unavailable() const {
    if (::geteuid() != 0) return "needs root for ip netns";
    if (!Shell("command -v ip")) return "iproute2 not installed";
    if (!topo.ok()) return "cannot build network namespaces here";
    return "";
}

bool NamespaceCluster::StartMaster(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"--role=master", "--listen=" + master_address(),
                                     "--auth_token_file=" + token_file_, "--log_level=debug"};
    args.insert(args.end(), flags.begin(), flags.end());
    master = std::make_unique<Daemon>("master", args, dir, topo.Exec(0));
    return master->Start();
}

Daemon& NamespaceCluster::Node(int i, const std::vector<std::string>& flags,
                               const std::string& fault_spec) {
    std::vector<std::string> args = {"--role=node", "--listen=" + node_name(i),
                                     "--master=" + master_address(),
                                     "--auth_token_file=" + token_file_, "--log_level=debug"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto node = std::make_unique<Daemon>(i == 1 ? "nodeA" : "nodeB", args, dir, topo.Exec(i));
    if (!fault_spec.empty()) {
        node->UseBinary(FaultDaemonPath());
        for (const auto& [name, value] : faults.Env(fault_spec)) node->SetEnv(name, value);
    }
    nodes[i] = std::move(node);
    return *nodes[i];
}

std::unique_ptr<Client> NamespaceCluster::Connect(ClientOptions options) const {
    options.auth_token = token_;
    return ConnectWhenUp(master_address(), std::chrono::seconds(15), options);
}

void ExpectAllQueued(const Result<std::vector<KeyOutcome>>& outcome) {
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    for (const KeyOutcome& k : *outcome) {
        ASSERT_TRUE(k.status.ok()) << k.key << ": " << k.status.ToString();
    }
}

std::vector<WrittenKey> DiskOnlyKeys(Client& client, const std::string& prefix, size_t n,
                                     size_t size, uint64_t seed_base, Figures& f) {
    std::vector<WrittenKey> keys = PutKeys(client, prefix, n, size, seed_base);
    std::vector<std::string> names = Names(keys);
    auto evicted = client.Evict(names);
    EXPECT_TRUE(evicted.ok()) << evicted.status().ToString();
    EXPECT_TRUE(WaitAllStat(client, names, DiskOnly)) << prefix << " keys not offloaded";
    f.keys += n;
    f.operations += 2 * n;
    return keys;
}

}  // namespace mooncake::test
