// The three roles of mooncaked, assembled from the daemon's parts:
//   master      MasterStore + MasterService on --listen + the Tick thread + /metrics
//   node        Segment + DiskStore + DataServer + Node (RPC to --master) + NodeService
//               on --listen + /metrics
//   standalone  both in one process; the node talks to the MasterStore directly (no RPC
//               between them) and clients see the master's API on --listen
// Each Run* blocks until `shutdown` is requested, stops everything cleanly and returns the
// process exit code (0 clean, 1 a start-up failure such as a taken port).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/knobs.h"
#include "core/base/mutex.h"
#include "node/access.h"

namespace mooncake {

// Set once by the signal thread; everything that waits watches it.
class ShutdownFlag {
public:
    void Request() {
        MutexLock lock(mu_);  // so a Wait between its check and its sleep cannot miss it
        requested_.store(true);
        cv_.NotifyAll();
    }
    void Wait() {
        MutexLock lock(mu_);
        while (!requested_.load()) cv_.Wait(mu_);
    }
    const std::atomic<bool>& flag() const { return requested_; }

private:
    std::atomic<bool> requested_{false};
    Mutex mu_;
    CondVar cv_;
};

struct DaemonContext {
    Config& config;
    std::string auth_token;  // contents of --auth_token_file (trimmed), or empty
    std::vector<TenantToken> tenant_tokens;  // --tenant_tokens_file's, or none
    std::string config_file; // --config path, or empty
    ShutdownFlag& shutdown;
};

int RunMaster(DaemonContext& ctx);
int RunNode(DaemonContext& ctx);
int RunStandalone(DaemonContext& ctx);

}  // namespace mooncake
