#include "thrift/master_channel.h"

#include <thrift/TApplicationException.h>
#include <thrift/TOutput.h>
#include <thrift/TConfiguration.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/protocol/TProtocolException.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>
#include <thrift/transport/TTransportException.h>

#include <poll.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <thread>

#include "MasterService.h"
#include "core/base/tenant.h"
#include "etcd/leader_discovery.h"
#include "mooncake_constants.h"
#include "thrift/convert.h"
#include "thrift/rpc_limits.h"

namespace mooncake {

using apache::thrift::TApplicationException;
using apache::thrift::TConfiguration;
using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TProtocolException;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransportException;

struct MasterChannel::Connection {
    std::shared_ptr<TSocket> socket;
    std::shared_ptr<TFramedTransport> transport;
    std::unique_ptr<rpc::MasterServiceClient> client;
    rpc::HelloReply hello;
    std::string address;  // the master it is connected to
};

namespace {

int Millis(std::chrono::milliseconds d) {
    return static_cast<int>(std::min<int64_t>(d.count(), INT_MAX));
}

// Thrift prints its own diagnostics to stderr by default; this library reports errors as
// Status values instead, so a CLI's stderr stays one clear line.
void QuietThrift() {
    static std::once_flag once;
    std::call_once(once, [] { apache::thrift::GlobalOutput.setOutputFunction([](const char*) {}); });
}

Status FromTransportError(const TTransportException& e, const std::string& address) {
    if (e.getType() == TTransportException::TIMED_OUT) {
        return Status::Timeout("master " + address + " did not answer in time");
    }
    return Status::Unavailable("master " + address + " unreachable: " + e.what());
}

}  // namespace

// Under etcd:// a control call is bounded tighter: a stalled (SIGSTOPped) leader must not
// hold a caller longer than a failover takes.
constexpr std::chrono::milliseconds kHaRpcTimeout{5000};

MasterChannel::MasterChannel(net::HostPort address, std::string text, RpcOptions options)
    : address_(std::move(address)), address_text_(std::move(text)), options_(std::move(options)) {}

std::string MasterChannel::current_address() const {
    MutexLock lock(mu_);
    return address_.ToString();
}

MasterChannel::~MasterChannel() = default;

Result<std::unique_ptr<MasterChannel>> MasterChannel::Connect(std::string_view master,
                                                              const RpcOptions& options) {
    QuietThrift();
    std::unique_ptr<MasterChannel> channel;
    if (ha::IsEtcdMaster(master)) {
        auto discovery = ha::LeaderDiscovery::Create(master, options.cluster_id);
        if (!discovery.ok()) return discovery.status();
        auto leader = (*discovery)->Leader(options.connect_timeout);
        if (!leader.ok()) return leader.status();
        auto address = net::ParseHostPort(*leader);
        if (!address.ok()) return address.status();
        RpcOptions ha_options = options;
        ha_options.rpc_timeout = std::min(options.rpc_timeout, kHaRpcTimeout);
        channel.reset(new MasterChannel(*address, std::string(master), ha_options));
        channel->discovery_ = std::move(*discovery);
    } else {
        auto address = net::ParseHostPort(master);
        if (!address.ok()) return address.status();
        channel.reset(new MasterChannel(*address, address->ToString(), options));
    }
    auto first = channel->Open();
    // Under etcd:// the leader named may just have died: follow the next one.
    const auto deadline = std::chrono::steady_clock::now() + options.failover_wait;
    while (!first.ok() && channel->discovery_ &&
           (first.status().Is(StatusCode::kUnavailable) || first.status().Is(StatusCode::kTimeout) ||
            first.status().Is(StatusCode::kNotLeader)) &&
           std::chrono::steady_clock::now() < deadline) {
        if (!channel->FollowLeader()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        first = channel->Open();
    }
    if (!first.ok()) return first.status();
    channel->client_id_ = (*first)->hello.client_id;
    channel->server_role_ = (*first)->hello.role;
    channel->by_key_data_address_ = (*first)->hello.by_key_data_address;
    channel->tenant_ = (*first)->hello.tenant;
    channel->Return(std::move(*first));
    return channel;
}

Result<std::unique_ptr<MasterChannel::Connection>> MasterChannel::Open() {
    // maxMessageSize is the frame limit's job here; the socket-level count would otherwise
    // accumulate over a long-lived connection.
    auto config = std::make_shared<TConfiguration>(INT_MAX, rpc::kMaxFrameBytes);
    auto conn = std::make_unique<Connection>();
    net::HostPort address;
    {
        MutexLock lock(mu_);
        address = address_;
    }
    const std::string address_text = address.ToString();
    conn->address = address_text;
    conn->socket = std::make_shared<TSocket>(address.host, address.port, config);
    // Hello is part of connecting: a daemon that accepts (the kernel does that even for a
    // stopped process) but never answers is unreachable within the connect timeout.
    const auto handshake = std::min(options_.connect_timeout, options_.rpc_timeout);
    conn->socket->setConnTimeout(Millis(options_.connect_timeout));
    conn->socket->setRecvTimeout(Millis(handshake));
    conn->socket->setSendTimeout(Millis(handshake));
    conn->socket->setNoDelay(true);
    conn->transport = std::make_shared<TFramedTransport>(conn->socket, config);
    auto protocol = std::make_shared<TBinaryProtocol>(conn->transport, rpc::kMaxStringBytes,
                                                      rpc::kMaxContainerItems, true, true);
    conn->client = std::make_unique<rpc::MasterServiceClient>(protocol);
    try {
        conn->transport->open();
        conn->client->Hello(conn->hello, rpc::g_mooncake_constants.PROTOCOL_VERSION,
                            options_.auth_token, options_.client_name, options_.tenant);
    } catch (const rpc::StoreError& e) {
        return rpc::FromStoreError(e);
    } catch (const TTransportException& e) {
        if (e.getType() == TTransportException::TIMED_OUT) {
            return Status::Timeout("master " + address_text + " accepted the connection but did "
                                   "not answer within " +
                                   std::to_string(handshake.count()) + " ms (stalled?)");
        }
        return FromTransportError(e, address_text);
    } catch (const apache::thrift::TException& e) {
        return Status::Unavailable("master " + address_text + ": " + e.what());
    }
    conn->socket->setRecvTimeout(Millis(options_.rpc_timeout));
    conn->socket->setSendTimeout(Millis(options_.rpc_timeout));
    if (!options_.tenant.empty() && options_.tenant != kDefaultTenant &&
        conn->hello.tenant != options_.tenant) {
        // A server that predates tenants ignores the name: every call would act in the default
        // tenant, among other services' keys.
        return Status::InvalidArgument("master " + address_text + " does not support tenants "
                                       "(asked for tenant '" + options_.tenant + "')");
    }
    if (conn->hello.protocol_version != rpc::g_mooncake_constants.PROTOCOL_VERSION) {
        return Status::InvalidArgument(
            "master " + address_text + " speaks protocol version " +
            std::to_string(conn->hello.protocol_version) + ", this client speaks " +
            std::to_string(rpc::g_mooncake_constants.PROTOCOL_VERSION));
    }
    return conn;
}

std::unique_ptr<MasterChannel::Connection> MasterChannel::Checkout() {
    MutexLock lock(mu_);
    while (!idle_.empty()) {
        auto conn = std::move(idle_.back());
        idle_.pop_back();
        // An idle connection has nothing to read: readable means the master closed it (it
        // restarted, say). Dropping it here keeps non-idempotent calls off dead connections.
        pollfd pfd{conn->socket->getSocketFD(), POLLIN, 0};
        if (::poll(&pfd, 1, 0) == 0) return conn;
    }
    return nullptr;
}

void MasterChannel::Return(std::unique_ptr<Connection> conn) {
    MutexLock lock(mu_);
    if (conn->address != address_.ToString()) return;  // the leader moved meanwhile
    if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(conn));
}

bool MasterChannel::FollowLeader() {
    MutexLock follow(follow_mu_);
    auto leader = discovery_->Leader(std::chrono::milliseconds(0));
    if (!leader.ok()) return false;
    auto address = net::ParseHostPort(*leader);
    if (!address.ok()) return false;
    std::vector<std::unique_ptr<Connection>> stale;
    {
        MutexLock lock(mu_);
        if (address_.ToString() == address->ToString()) return false;
        address_ = *address;
        stale.swap(idle_);  // connections to the old leader: closed outside the lock
    }
    return true;
}

Status MasterChannel::Call(const Fn& fn, Idempotent idempotent,
                           std::chrono::milliseconds extra_wait) {
    if (discovery_ == nullptr) return CallOnce(fn, idempotent, extra_wait);
    const auto deadline = std::chrono::steady_clock::now() + options_.failover_wait;
    while (true) {
        Status st = CallOnce(fn, idempotent, extra_wait);
        const bool refused = st.Is(StatusCode::kNotLeader);  // nothing was done: safe to resend
        const bool lost = st.Is(StatusCode::kUnavailable) || st.Is(StatusCode::kTimeout);
        if (!refused && !lost) return st;
        const bool moved = FollowLeader();
        // A call that lost its master may have been applied there. Sent again only if etcd
        // now names another leader: the old one's term is over and its state is discarded
        // (what survives is only what nodes report, which a retry cannot duplicate).
        if (lost && idempotent == Idempotent::kNo && !moved) return st;
        if (std::chrono::steady_clock::now() >= deadline) return st;
        if (!moved) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

Status MasterChannel::CallOnce(const Fn& fn, Idempotent idempotent,
                               std::chrono::milliseconds extra_wait) {
    const int attempts = idempotent == Idempotent::kYes ? 1 + std::max(0, options_.retries) : 1;
    const std::string address_text = current_address();
    Status last;
    for (int attempt = 0; attempt < attempts; ++attempt) {
        if (attempt > 0) std::this_thread::sleep_for(options_.retry_backoff * attempt);
        std::unique_ptr<Connection> conn = Checkout();
        if (conn == nullptr) {
            auto opened = Open();
            if (!opened.ok()) {
                last = opened.status();
                if (!last.Is(StatusCode::kUnavailable)) {
                    // Refused (auth, version): retrying will not help. Timed out: a stalled
                    // master would take the whole timeout again; the deadline holds instead.
                    return last;
                }
                continue;
            }
            conn = std::move(*opened);
        }
        if (extra_wait.count() > 0) {
            conn->socket->setRecvTimeout(Millis(options_.rpc_timeout + extra_wait));
        }
        auto restore = [&] {
            if (extra_wait.count() > 0) conn->socket->setRecvTimeout(Millis(options_.rpc_timeout));
        };
        try {
            fn(*conn->client);
            restore();
            Return(std::move(conn));
            return Status::Ok();
        } catch (const rpc::StoreError& e) {
            // A declared error: the exchange completed and the connection is in sync.
            restore();
            Return(std::move(conn));
            return rpc::FromStoreError(e);
        } catch (const TApplicationException& e) {
            restore();
            Return(std::move(conn));
            return Status::Internal("master " + address_text + ": " + e.what());
        } catch (const TTransportException& e) {
            last = FromTransportError(e, address_text);
            // A timeout is not a stale connection: the master is slow or stalled, and asking
            // again would double the caller's deadline.
            if (last.Is(StatusCode::kTimeout)) return last;
        } catch (const TProtocolException& e) {
            last = Status::IoError("master " + address_text + ": protocol error: " + e.what());
        } catch (const apache::thrift::TException& e) {
            last = Status::Unavailable("master " + address_text + ": " + e.what());
        }
        // The connection is dropped (out of sync); only idempotent calls go round again.
    }
    return last;
}

}  // namespace mooncake
