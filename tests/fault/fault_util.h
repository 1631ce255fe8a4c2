// Shared pieces of the fault tests: the fault-injection daemon, the fault-point files, and the
// check every scenario ends with (SettleAndCheck).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/harness.h"

namespace mooncake::test {

// Path of `mooncaked-fault` (node/fault_injection.h points live).
std::string FaultDaemonPath();

// GET /metrics of a daemon's Prometheus endpoint ("" if it does not answer).
std::string NodeMetrics(const std::string& host, uint16_t port);
// One series of the master's metrics over RPC (NaN if absent or unreachable).
double MasterMetric(Client& client, const std::string& series);

// The directory a fault daemon signals in: `<point>.reached` appears on a hit, a held point
// goes on once `<point>.release` exists.
class FaultDir {
  public:
    explicit FaultDir(std::string path);
    const std::string& path() const { return path_; }
    bool Reached(const std::string& point) const;
    bool WaitReached(const std::string& point,
                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
    void Release(const std::string& point) const;  // creates <point>.release
    void Hold(const std::string& point) const;     // removes <point>.release and .reached
    // The environment a node needs for `spec` ("point=action,...").
    std::vector<std::pair<std::string, std::string>> Env(const std::string& spec) const;

  private:
    std::string path_;
};

// One key a test wrote: its value is Pattern(seed, size).
struct WrittenKey {
    std::string key;
    uint64_t seed = 0;
    size_t size = 0;
    bool survives = true;  // expected to read back after the faults (else NotFound)
};

// Puts `n` keys "<prefix><i>" with Pattern(seed_base + i, size); fails the test on error.
std::vector<WrittenKey> PutKeys(Client& client, const std::string& prefix, size_t n, size_t size,
                                uint64_t seed_base);
std::vector<std::string> Names(const std::vector<WrittenKey>& keys);

// Waits (bounded) until every key of `keys` satisfies `pred` on its Stat.
bool WaitAllStat(Client& client, const std::vector<std::string>& keys,
                 const std::function<bool(const ObjectInfo&)>& pred,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10));
bool DiskOnly(const ObjectInfo& info);

// Sets `survives` for each key from where its COMPLETE replicas are now: it survives the loss
// of node `lost` if a replica lives on another node, or (keep_disk) on the lost node's disk.
// A key the master no longer knows does not survive.
void ExpectAfterLosing(Client& client, std::vector<WrittenKey>& keys, NodeId lost, bool keep_disk);

// Waits (at most `settle`) until the master's CheckInvariants is clean with no pins and no
// promotion or offload task left; a failure to settle is recorded with gtest, labelled `when`.
void WaitSettled(Client& client, const std::string& when,
                 std::chrono::milliseconds settle = std::chrono::seconds(15));

// The end of every scenario: waits (at most `settle`) until the master's CheckInvariants is
// clean with no pins and no promotion or offload task left, then reads every key back: one
// expected to survive must return exactly its bytes, any other must be NotFound (never other
// bytes, never a hang). Then checks the invariants once more (reads may start promotions).
// Records failures with gtest; `when` labels them. Returns the reads it made.
size_t SettleAndCheck(Client& client, const std::vector<WrittenKey>& keys, const std::string& when,
                      std::chrono::milliseconds settle = std::chrono::seconds(15));

// A master (namespace 0) and two nodes (1 and 2) in three network namespaces on the harness's
// bridge, all with one access token. The master listens on <ip(0)>:7000, node i on
// <ip(i)>:7100 (also its name). Needs root and iproute2: Unavailable() says why not.
class NamespaceCluster {
  public:
    explicit NamespaceCluster(const std::string& token);
    std::string Unavailable() const;  // "" when the namespaces are up

    // Starts the master with `flags` besides role, listen, token and debug logging.
    bool StartMaster(const std::vector<std::string>& flags);
    // Node i's daemon, not started, with `flags` besides role, listen, master, token and
    // debug logging. With `faults` ("point=action,...") it runs mooncaked-fault.
    Daemon& Node(int i, const std::vector<std::string>& flags, const std::string& faults = "");
    // A client of the master holding the token (null if it never answered in 15 s).
    std::unique_ptr<Client> Connect(ClientOptions options = {}) const;

    std::string master_address() const { return topo.ip(0) + ":7000"; }
    std::string node_name(int i) const { return topo.ip(i) + ":7100"; }

    Topology topo{3};
    TempDir dir;
    FaultDir faults{dir.Sub("faults")};
    std::unique_ptr<Daemon> master;
    std::unique_ptr<Daemon> nodes[3];  // [1] and [2]

  private:
    std::string token_;
    std::string token_file_;
};

// The nodes `c` starts from now on run mooncaked-fault with `spec` ("point=action,...").
void UseFaultNodes(Cluster& c, const FaultDir& faults, const std::string& spec);

// Figures a scenario prints and docs/RELIABILITY.md quotes.
struct Figures {
    size_t keys = 0;        // distinct keys written
    size_t operations = 0;  // puts, gets, evicts, promotes, offloads issued by the test
    size_t faults = 0;      // kill -9, held fault points, master/node restarts
    void Print(const std::string& scenario) const;
};

// Puts `n` keys and evicts them to the node's disk (offload on evict): LOCAL_DISK only.
std::vector<WrittenKey> DiskOnlyKeys(Client& client, const std::string& prefix, size_t n,
                                     size_t size, uint64_t seed_base, Figures& f);
// Every key of a manual promote was queued (gtest failures otherwise).
void ExpectAllQueued(const Result<std::vector<KeyOutcome>>& outcome);

}  // namespace mooncake::test
