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

#include "core/base/knobs.h"

namespace mooncake {

// Set once by the signal thread; everything that waits watches it.
class ShutdownFlag {
public:
    void Request() {
        std::lock_guard lock(mu_);
        requested_.store(true);
        cv_.notify_all();
    }
    void Wait() {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return requested_.load(); });
    }
    const std::atomic<bool>& flag() const { return requested_; }

private:
    std::atomic<bool> requested_{false};
    std::mutex mu_;
    std::condition_variable cv_;
};

struct DaemonContext {
    Config& config;
    std::string auth_token;  // contents of --auth_token_file (trimmed), or empty
    std::string config_file; // --config path, or empty
    ShutdownFlag& shutdown;
};

int RunMaster(DaemonContext& ctx);
int RunNode(DaemonContext& ctx);
int RunStandalone(DaemonContext& ctx);

}  // namespace mooncake
