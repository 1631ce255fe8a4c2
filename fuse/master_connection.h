// MasterConnection: the Client mooncake-tierfs calls the master through, made on first use.
//
// The view mounts even when the master is down, and recovers on its own when it returns:
// while no Client exists each call tries to connect (a refused connection fails at once, an
// unanswered one after ClientOptions::connect_timeout); once one exists its pooled connections
// are reopened on demand by the client library. A call that fails fast with kUnavailable (a
// connection the restarted master closed) is tried once more; a timeout is not, so a call
// never takes much longer than one rpc_timeout.
//
// Only inspection goes through here (Stat, List, MetricsText, TuneGet) plus TuneSet: the view
// never calls Get or GetReplicaList, so looking never counts as an access.
//
// Thread-safety: any thread; mu_ guards the client pointer only and is never held during a call.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "core/base/mutex.h"
#include "core/base/status.h"
#include "thrift/client.h"

namespace mooncake::tierfs {

class MasterConnection {
  public:
    MasterConnection(std::string address, ClientOptions options)
        : address_(std::move(address)), options_(std::move(options)) {}

    // Connects now if not yet connected: ok, or why the master cannot be reached.
    Status Probe();

    const std::string& address() const { return address_; }

    // Runs fn(Client&) -> Status or Result<T>, connecting first if needed.
    template <typename Fn>
    auto Call(Fn&& fn) -> std::invoke_result_t<Fn&, Client&> {
        using R = std::invoke_result_t<Fn&, Client&>;
        for (int attempt = 0;; ++attempt) {
            auto start = std::chrono::steady_clock::now();
            Result<std::shared_ptr<Client>> client = Get();
            if (!client.ok()) return R(client.status());
            R result = fn(**client);
            const Status& st = StatusOf(result);
            bool fast = std::chrono::steady_clock::now() - start < std::chrono::milliseconds(250);
            if (attempt == 0 && fast && st.Is(StatusCode::kUnavailable)) continue;
            return result;
        }
    }

  private:
    Result<std::shared_ptr<Client>> Get() MC_EXCLUDES(mu_);
    static const Status& StatusOf(const Status& s) { return s; }
    template <typename T>
    static const Status& StatusOf(const Result<T>& r) {
        return r.status();
    }

    const std::string address_;
    const ClientOptions options_;
    Mutex mu_;
    std::shared_ptr<Client> client_ MC_GUARDED_BY(mu_);
};

}  // namespace mooncake::tierfs
