#include "tests/integration/harness.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_time_scale.h"

namespace mooncake::test {

int RawConnect(uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

TempDir::TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mooncake-it-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string MooncakedPath() { return MOONCAKED_PATH; }

Daemon::Daemon(std::string name, std::vector<std::string> args, const TempDir& dir,
               std::vector<std::string> prefix)
    : name_(std::move(name)),
      args_(std::move(args)),
      prefix_(std::move(prefix)),
      log_path_(dir.Sub(name_ + ".log")) {}

Daemon::~Daemon() {
    if (running()) Stop(SIGTERM);
    // Under scripts/sanitize.sh a daemon's UBSan report only reaches its stderr (this log),
    // whatever the test did with its exit status: it fails the test that ran the daemon.
    std::string own_log = Log();
    if (own_log.find("runtime error:") != std::string::npos ||
        own_log.find("Sanitizer") != std::string::npos) {
        ADD_FAILURE() << name_ << " reported a sanitizer finding (log below)";
    }
    if (::testing::Test::HasFailure()) {
        std::string log = Log();
        if (log.size() > 8000) log = "...\n" + log.substr(log.size() - 8000);
        std::fprintf(stderr, "----- %s log -----\n%s\n", name_.c_str(), log.c_str());
    }
}

void Daemon::SetEnv(const std::string& name, const std::string& value) {
    for (auto& [n, v] : env_) {
        if (n == name) {
            v = value;
            return;
        }
    }
    env_.emplace_back(name, value);
}

bool Daemon::Start() {
    std::vector<std::string> argv = prefix_;
    argv.push_back(binary_.empty() ? MooncakedPath() : binary_);
    argv.insert(argv.end(), args_.begin(), args_.end());
    // Built before fork: the child only execs.
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string entry = *e;
        std::string name = entry.substr(0, entry.find('='));
        bool overridden = false;
        for (const auto& kv : env_) overridden = overridden || kv.first == name;
        if (!overridden) env.push_back(std::move(entry));
    }
    for (const auto& [n, v] : env_) {
        if (!v.empty()) env.push_back(n + "=" + v);
    }
    std::vector<char*> cenv;
    for (auto& e : env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
        int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        // Die with the test: a crashed test must not leave daemons behind.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::execvpe(cargv[0], cargv.data(), cenv.data());
        ::_exit(127);
    }
    return pid_ > 0;
}

int Daemon::ExitedWith() {
    if (pid_ <= 0) return -1;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return -1;
}

int Daemon::Stop(int signal) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signal);
    int status = 0;
    for (int i = 0; i < 500; ++i) {
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return 128 + SIGKILL;
}

std::string Daemon::Log() const {
    std::ifstream in(log_path_);
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
}

bool WaitFor(const std::function<bool()>& ready, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
    while (std::chrono::steady_clock::now() < deadline) {
        if (ready()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ready();
}

std::unique_ptr<Client> ConnectWhenUp(const std::string& master,
                                      std::chrono::milliseconds timeout,
                                      const ClientOptions& options) {
    std::unique_ptr<Client> client;
    WaitFor(
        [&] {
            auto c = Client::Connect(master, options);
            if (!c.ok()) return false;
            client = std::move(*c);
            return true;
        },
        timeout);
    return client;
}

std::string Pattern(uint64_t seed, size_t size) {
    std::string out(size, '\0');
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        std::memcpy(&out[i], &x, 8);
    }
    for (; i < size; ++i) out[i] = static_cast<char>(seed + i);
    return out;
}

bool HasTier(const ObjectInfo& info, Tier tier) { return info.object.HasComplete(tier); }

double MetricValue(const std::string& exposition, const std::string& series) {
    std::istringstream in(exposition);
    for (std::string line; std::getline(in, line);) {
        if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
            line[series.size()] == ' ') {
            return std::stod(line.substr(series.size() + 1));
        }
    }
    return std::nan("");
}

Standalone::Standalone(std::vector<std::string> extra_args, std::string disk_size)
    : rpc_port(FreePort()), data_port(FreePort()), metrics_port(FreePort()) {
    address = "127.0.0.1:" + std::to_string(rpc_port);
    std::vector<std::string> args = {"--role=standalone",
                                     "--listen=" + address,
                                     "--data_port=" + std::to_string(data_port),
                                     "--metrics_port=" + std::to_string(metrics_port),
                                     "--log_level=debug"};
    if (!disk_size.empty()) {
        args.push_back("--disk_dir=" + dir.Sub("disk"));
        args.push_back("--disk_size=" + disk_size);
    }
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    daemon = std::make_unique<Daemon>("standalone", args, dir);
    daemon->Start();
    client = ConnectWhenUp(address);
}

Cluster::Cluster(std::vector<std::string> master_args) {
    uint16_t port = FreePort();
    master_address = "127.0.0.1:" + std::to_string(port);
    std::vector<std::string> args = {"--role=master", "--listen=" + master_address,
                                     "--metrics_port=0", "--log_level=debug",
                                     "--client_live_ttl_sec=3"};
    args.insert(args.end(), master_args.begin(), master_args.end());
    master = std::make_unique<Daemon>("master", args, dir);
    master->Start();
    client = ConnectWhenUp(master_address);
}

std::unique_ptr<Cluster::NodeProcess> StartNode(TempDir& dir, const NodeLaunch& launch) {
    auto node = std::make_unique<Cluster::NodeProcess>();
    node->name = "127.0.0.1:" + std::to_string(FreePort());
    std::vector<std::string> args = {"--role=node",
                                     "--listen=" + node->name,
                                     "--data_port=" + std::to_string(FreePort()),
                                     "--master=" + launch.master,
                                     "--metrics_port=0",
                                     "--log_level=debug",
                                     "--dram_size=" + launch.dram};
    if (launch.with_disk) {
        node->disk_dir = dir.Sub("disk-" + std::to_string(launch.index));
        args.push_back("--disk_dir=" + node->disk_dir);
        args.push_back("--disk_size=64MiB");
    }
    args.insert(args.end(), launch.extra_args.begin(), launch.extra_args.end());
    node->daemon = std::make_unique<Daemon>("node" + std::to_string(launch.index), args, dir);
    if (!launch.binary.empty()) node->daemon->UseBinary(launch.binary);
    for (const auto& [n, v] : launch.env) node->daemon->SetEnv(n, v);
    node->daemon->Start();
    return node;
}

Cluster::NodeProcess& Cluster::AddNode(const std::string& dram, bool with_disk,
                                       std::vector<std::string> extra_args) {
    nodes.push_back(StartNode(dir, {.master = master_address,
                                    .dram = dram,
                                    .with_disk = with_disk,
                                    .index = nodes.size(),
                                    .extra_args = std::move(extra_args),
                                    .binary = node_binary,
                                    .env = node_env}));
    return *nodes.back();
}

bool Cluster::WaitForNodes(size_t n, std::chrono::milliseconds timeout) {
    return WaitFor(
        [&] {
            auto live = client->Nodes();
            return live.ok() && live->size() == n;
        },
        timeout);
}

NodeId Cluster::IdOf(const NodeProcess& node) {
    auto live = client->Nodes();
    if (!live.ok()) return kNoNode;
    for (const NodeInfo& n : *live) {
        if (n.spec.name == node.name) return n.id;
    }
    return kNoNode;
}

bool Shell(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

Topology::Topology(int namespaces) {
    std::string id = std::to_string(::getpid() % 100000);
    subnet_ = "10.231." + std::to_string(::getpid() % 250 + 1) + ".";
    bridge_ = "mcb" + id;
    ok_ = Shell("ip link add " + bridge_ + " type bridge") &&
          Shell("ip addr add " + subnet_ + "1/24 dev " + bridge_) &&
          Shell("ip link set " + bridge_ + " up");
    for (int i = 0; ok_ && i < namespaces; ++i) {
        std::string ns = "mc" + id + static_cast<char>('a' + i);
        std::string veth = "mcv" + id + static_cast<char>('a' + i);
        std::string peer = "mcp" + id + static_cast<char>('a' + i);
        std::string ip = subnet_ + std::to_string(i + 2);
        namespaces_.push_back(ns);
        veths_.push_back(veth);
        peers_.push_back(peer);
        ips_.push_back(ip);
        ok_ = Shell("ip netns add " + ns) &&
              Shell("ip link add " + veth + " type veth peer name " + peer) &&
              Shell("ip link set " + peer + " netns " + ns) &&
              Shell("ip link set " + veth + " master " + bridge_ + " up") &&
              Shell("ip netns exec " + ns + " ip addr add " + ip + "/24 dev " + peer) &&
              Shell("ip netns exec " + ns + " ip link set " + peer + " up") &&
              Shell("ip netns exec " + ns + " ip link set lo up");
    }
    // Reachability from here to every namespace (a firewall may block bridged traffic).
    for (size_t i = 0; ok_ && i < ips_.size(); ++i) {
        ok_ = Shell("ping -c1 -W2 " + ips_[i]) || !Shell("command -v ping");
    }
}

Topology::~Topology() {
    for (const auto& v : veths_) Shell("ip link del " + v);
    for (const auto& ns : namespaces_) Shell("ip netns del " + ns);
    Shell("ip link del " + bridge_);
}

bool Topology::SetLink(int i, bool up) const {
    return Shell("ip netns exec " + ns(i) + " ip link set " + peers_[i] + (up ? " up" : " down"));
}

}  // namespace mooncake::test
