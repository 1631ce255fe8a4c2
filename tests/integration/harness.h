// Integration test harness: real mooncaked processes on free loopback ports.
//
// Every test builds its own processes (Daemon) in its own temporary directory (TempDir) and
// they are killed when the objects go out of scope, whatever the test's outcome. Ports come
// from FreePort (tests/free_port.h): below the ephemeral range and never twice in a process,
// so parallel ctest runs do not collide.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/free_port.h"
#include "thrift/client.h"

namespace mooncake::test {

// A plain TCP connection to 127.0.0.1:port with a 5 s receive timeout (bad-input tests write
// raw bytes through it); -1 if nothing listens.
int RawConnect(uint16_t port);

// mkdtemp'd directory, removed (recursively) on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    const std::string& path() const { return path_; }
    std::string Sub(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

// One mooncaked process. Its output goes to `log_path`; the log is printed if the test fails
// (see DumpLogOnFailure).
class Daemon {
public:
    // `prefix` runs before the binary (e.g. {"ip", "netns", "exec", "ns1"}).
    Daemon(std::string name, std::vector<std::string> args, const TempDir& dir,
           std::vector<std::string> prefix = {});
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Before Start: run `path` instead of MooncakedPath() (e.g. the fault-injection build),
    // and set NAME=VALUE in the child's environment (an empty value unsets NAME).
    void UseBinary(std::string path) { binary_ = std::move(path); }
    void SetEnv(const std::string& name, const std::string& value);

    bool Start();                // fork + exec; false if exec failed at once
    int Stop(int signal = 15);   // signal, wait up to 10 s (then SIGKILL); returns exit status
    void Kill() { Stop(9); }
    bool running() const { return pid_ > 0; }
    pid_t pid() const { return pid_; }  // -1 when not running (SIGSTOP/SIGCONT tests)
    // Exit code if the process ended by itself (waitpid WNOHANG), -1 if still running.
    int ExitedWith();
    std::string Log() const;
    const std::string& name() const { return name_; }

private:
    std::string name_;
    std::vector<std::string> args_;
    std::vector<std::string> prefix_;
    std::string binary_;  // empty: MooncakedPath()
    std::vector<std::pair<std::string, std::string>> env_;
    std::string log_path_;
    pid_t pid_ = -1;
};

// Path of the mooncaked binary under test.
std::string MooncakedPath();

// Polls `ready` every 20 ms until true or `timeout`.
bool WaitFor(const std::function<bool()>& ready,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Connects to a master, retrying until it answers or `timeout` passes.
std::unique_ptr<Client> ConnectWhenUp(const std::string& master,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                      const ClientOptions& options = {});

// Deterministic bytes for key `seed` (so a read can be compared without keeping the value).
std::string Pattern(uint64_t seed, size_t size);

bool HasTier(const ObjectInfo& info, Tier tier);  // a COMPLETE replica in that tier

// The value of one sample line `series value` in a Prometheus exposition (series written
// exactly, labels included); NaN if absent.
double MetricValue(const std::string& exposition, const std::string& series);

// A whole standalone daemon on fresh ports, ready to use.
struct Standalone {
    // `disk_size` non-empty: the node gets a LOCAL_DISK store of that size in `dir`.
    explicit Standalone(std::vector<std::string> extra_args = {}, std::string disk_size = "");
    TempDir dir;
    uint16_t rpc_port, data_port, metrics_port;
    std::string address;
    std::unique_ptr<Daemon> daemon;
    std::unique_ptr<Client> client;
};

// A master and any number of nodes, each on fresh loopback ports.
class Cluster {
public:
    struct NodeProcess {
        std::string name;     // advertised address, 127.0.0.1:<rpc port>
        std::string disk_dir;  // "" when the node has no LOCAL_DISK tier
        std::unique_ptr<Daemon> daemon;
    };

    // Extra master flags (policy knobs). Heartbeat expiry is shortened to 3 s unless given.
    explicit Cluster(std::vector<std::string> master_args = {});
    // Starts a node; `dram` like "4MiB"; `with_disk` gives it a 64 MiB disk store.
    NodeProcess& AddNode(const std::string& dram, bool with_disk,
                         std::vector<std::string> extra_args = {});
    // Waits until the master lists `n` live nodes.
    bool WaitForNodes(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10));
    // The master's id for a node (kNoNode if not live).
    NodeId IdOf(const NodeProcess& node);

    // Binary and extra environment of the nodes AddNode starts from now on (fault tests).
    std::string node_binary;  // empty: MooncakedPath()
    std::vector<std::pair<std::string, std::string>> node_env;

    TempDir dir;
    std::string master_address;
    std::unique_ptr<Daemon> master;
    std::unique_ptr<Client> client;
    std::vector<std::unique_ptr<NodeProcess>> nodes;
};

// How to start one `mooncaked --role node` of a test: the one place a test node's flags are
// written (Cluster and tests/ha's HaCluster both start nodes with it).
struct NodeLaunch {
    std::string master;      // --master: HOST:PORT or etcd://...
    std::string dram;        // --dram_size, like "4MiB"
    bool with_disk = false;  // a 64 MiB LOCAL_DISK store in <dir>/disk-<index>
    size_t index = 0;        // names the daemon "node<index>" and its disk directory
    std::vector<std::string> extra_args;
    std::string binary;  // empty: MooncakedPath()
    std::vector<std::pair<std::string, std::string>> env;
};
// Starts the node on fresh loopback ports (RPC and data).
std::unique_ptr<Cluster::NodeProcess> StartNode(TempDir& dir, const NodeLaunch& launch);

// Runs `cmd` with /bin/sh, output discarded; true when it exits 0.
bool Shell(const std::string& cmd);

// Network namespaces joined by a bridge in the test's own namespace (where the client runs):
// one veth per namespace, addresses 10.231.<n>.{1 bridge, 2.. namespaces}. Needs root; ok()
// is false when it cannot be built here (tests skip then). Torn down on destruction.
class Topology {
public:
    explicit Topology(int namespaces);
    ~Topology();
    Topology(const Topology&) = delete;
    Topology& operator=(const Topology&) = delete;
    bool ok() const { return ok_; }
    const std::string& ns(int i) const { return namespaces_[i]; }
    const std::string& ip(int i) const { return ips_[i]; }
    // The bridge's address, in the test's own namespace (where etcd can listen for them all).
    std::string bridge_ip() const { return subnet_ + "1"; }
    // The prefix that runs a command inside namespace i (Daemon's `prefix`).
    std::vector<std::string> Exec(int i) const { return {"ip", "netns", "exec", ns(i)}; }
    // Cuts (false) or heals (true) namespace i's link to the bridge: `ip link set down|up`
    // on its veth inside the namespace.
    bool SetLink(int i, bool up) const;

private:
    bool ok_ = false;
    std::string subnet_, bridge_;
    std::vector<std::string> namespaces_, veths_, peers_, ips_;
};

}  // namespace mooncake::test
