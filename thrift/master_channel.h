// MasterChannel: pooled Thrift connections to a master, with the error mapping and retry
// rules of the control wire in one place. The client library and the daemon's node role
// (daemon/rpc_master_link.cc) both call the master through it.
//
// Each connection is TSocket + TFramedTransport + strict TBinaryProtocol and starts with
// Hello(PROTOCOL_VERSION): a master speaking another version is refused at Connect.
//
// Thread-safety: Call() may run from many threads at once; each call borrows its own
// connection (opened on demand, kept for reuse while healthy).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "thrift/net.h"

namespace mooncake::rpc {
class MasterServiceClient;  // generated
}

namespace mooncake {

struct RpcOptions {
    std::chrono::milliseconds connect_timeout{3000};
    // Bounds each call's send and receive; long-polls add their wait on top.
    std::chrono::milliseconds rpc_timeout{30000};
    // Calls marked idempotent are retried this many extra times after a transport failure,
    // each time on a fresh connection, `retry_backoff` apart.
    int retries = 2;
    std::chrono::milliseconds retry_backoff{50};
    std::string auth_token;
    std::string client_name = "mooncake-client";
    size_t max_idle_connections = 16;
};

enum class Idempotent { kNo, kYes };

class MasterChannel {
public:
    // Opens the first connection (so an unreachable master or a version mismatch fails here).
    // Unreachable -> kUnavailable; other protocol version -> kInvalidArgument.
    static Result<std::unique_ptr<MasterChannel>> Connect(std::string_view master,
                                                          const RpcOptions& options);
    ~MasterChannel();

    using Fn = std::function<void(rpc::MasterServiceClient&)>;
    // Runs `fn` on a pooled connection. A StoreError thrown by the server becomes its Status;
    // a broken connection becomes kUnavailable (after retries, for idempotent calls), a call
    // not answered within rpc_timeout kTimeout at once (a stalled master is not retried: the
    // caller's deadline holds). Connecting, Hello included, is bounded by connect_timeout. `extra_wait` extends this call's receive timeout (long-polls).
    Status Call(const Fn& fn, Idempotent idempotent,
                std::chrono::milliseconds extra_wait = std::chrono::milliseconds(0));

    // Assigned by the master's first Hello; names this client in PutStart/PutEnd/PutRevoke.
    int64_t client_id() const { return client_id_; }
    const std::string& server_role() const { return server_role_; }
    const std::string& address() const { return address_text_; }

private:
    struct Connection;
    MasterChannel(net::HostPort address, RpcOptions options);
    Result<std::unique_ptr<Connection>> Open();
    std::unique_ptr<Connection> Checkout();
    void Return(std::unique_ptr<Connection> conn);

    const net::HostPort address_;
    const std::string address_text_;
    const RpcOptions options_;
    int64_t client_id_ = 0;
    std::string server_role_;
    std::mutex mu_;
    std::vector<std::unique_ptr<Connection>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace mooncake
