// MasterChannel: pooled Thrift connections to a master, with the error mapping and retry
// rules of the control wire in one place. The client library and the daemon's node role
// (node/rpc_master_link.cc) both call the master through it.
//
// Each connection is TSocket + TFramedTransport + strict TBinaryProtocol and starts with
// Hello(PROTOCOL_VERSION): a master speaking another version is refused at Connect.
//
// `master` may be "etcd://HOST:PORT[;HOST:PORT...]" (master high availability, docs/HA.md):
// the channel then dials whoever leads cluster `RpcOptions::cluster_id` and follows leader
// changes. A call refused with kNotLeader, or an idempotent call whose master went away, is
// sent again to the leader etcd names, for up to `failover_wait`. A non-idempotent call that
// lost its master is sent again only when etcd names another leader by then (the old term's
// state is thrown away); otherwise it fails (it may or may not have been applied).
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

#include "core/base/mutex.h"
#include "core/base/status.h"
#include "net/net.h"

namespace mooncake::rpc {
class MasterServiceClient;  // generated
}

namespace mooncake::ha {
class LeaderDiscovery;
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
    std::string tenant;  // the tenant every call acts in ("": the default one)
    size_t max_idle_connections = 16;
    // etcd:// masters only: the HA cluster to follow (empty: $MOONCAKE_CLUSTER_ID, else
    // "mooncake_cluster"), and how long a call keeps looking for a leader during a failover.
    std::string cluster_id;
    std::chrono::milliseconds failover_wait{15000};
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
    // A standalone daemon's data channel for by-key ops (HelloReply); empty elsewhere.
    const std::string& by_key_data_address() const { return by_key_data_address_; }
    // The tenant the master's sessions act in (Hello's echo): the one asked for, or the one a
    // tenant's token implies; "" from a master that predates tenants.
    const std::string& tenant() const { return tenant_; }
    // What the channel was given (HOST:PORT, or the etcd:// URL).
    const std::string& address() const { return address_text_; }
    // The master dialled now (the current leader's HOST:PORT under etcd://).
    std::string current_address() const;

private:
    struct Connection;
    MasterChannel(net::HostPort address, std::string text, RpcOptions options);
    Result<std::unique_ptr<Connection>> Open() MC_EXCLUDES(mu_);
    std::unique_ptr<Connection> Checkout() MC_EXCLUDES(mu_);
    void Return(std::unique_ptr<Connection> conn) MC_EXCLUDES(mu_);
    Status CallOnce(const Fn& fn, Idempotent idempotent, std::chrono::milliseconds extra_wait);
    // Asks etcd who leads now and switches to it (idle connections to the old one dropped).
    // False if the leader is still the master dialled (or none is known yet).
    bool FollowLeader() MC_EXCLUDES(mu_, follow_mu_);

    net::HostPort address_ MC_GUARDED_BY(mu_);  // changes when the leader does
    const std::string address_text_;
    RpcOptions options_;
    std::unique_ptr<ha::LeaderDiscovery> discovery_;  // etcd:// masters only
    int64_t client_id_ = 0;
    std::string server_role_;
    std::string by_key_data_address_;
    std::string tenant_;
    mutable Mutex mu_;
    std::vector<std::unique_ptr<Connection>> idle_ MC_GUARDED_BY(mu_);
    mutable Mutex follow_mu_;  // one leader look-up at a time
};

}  // namespace mooncake
