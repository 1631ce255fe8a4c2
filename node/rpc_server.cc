#include "node/rpc_server.h"

#include <thrift/TConfiguration.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TSocket.h>
#include <thrift/transport/TTransportException.h>

#include <climits>

#include "spdlog/spdlog.h"
#include "thrift/rpc_limits.h"

namespace mooncake {

using apache::thrift::TConfiguration;
using apache::thrift::TProcessor;
using apache::thrift::protocol::TBinaryProtocolFactory;
using apache::thrift::protocol::TProtocol;
using apache::thrift::server::TServerEventHandler;
using apache::thrift::server::TThreadedServer;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TServerSocket;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransport;
using apache::thrift::transport::TTransportException;
using apache::thrift::transport::TTransportFactory;

namespace {

thread_local RpcSession t_session;

constexpr int kIdleTimeoutMs = 10 * 60 * 1000;  // as the data channel's idle timeout

std::shared_ptr<TConfiguration> WireConfig() {
    // The frame limit bounds each message; the per-socket message count is not used (it would
    // accumulate over a long-lived connection).
    return std::make_shared<TConfiguration>(INT_MAX, rpc::kMaxFrameBytes);
}

// Binds in listen() once, so Start() can report a taken port before serve() runs (serve()
// calls listen() again), and hands accepted sockets the wire configuration.
class ServerSocket final : public TServerSocket {
public:
    ServerSocket(const std::string& host, int port) : TServerSocket(host, port) {
        // A connection that sends nothing (idle, or stuck halfway through a frame) for this
        // long is closed, so a peer cannot hold a connection slot forever. Clients reopen
        // pooled connections the server closed.
        setRecvTimeout(kIdleTimeoutMs);
    }
    void listen() override {
        if (listening_) return;
        TServerSocket::listen();
        listening_ = true;
    }

protected:
    std::shared_ptr<TSocket> createSocket(THRIFT_SOCKET client) override {
        if (interruptableChildren_) {
            return std::make_shared<TSocket>(client, pChildInterruptSockReader_, WireConfig());
        }
        return std::make_shared<TSocket>(client, WireConfig());
    }

private:
    bool listening_ = false;
};

class FramedFactory final : public TTransportFactory {
public:
    std::shared_ptr<TTransport> getTransport(std::shared_ptr<TTransport> trans) override {
        return std::make_shared<TFramedTransport>(trans, WireConfig());
    }
};

// Runs in the connection's own thread (TThreadedServer), before its first request.
class SessionReset final : public TServerEventHandler {
public:
    void* createContext(std::shared_ptr<TProtocol>, std::shared_ptr<TProtocol>) override {
        t_session = RpcSession{};
        return nullptr;
    }
};

}  // namespace

RpcSession& CurrentRpcSession() { return t_session; }

Result<std::unique_ptr<RpcServer>> RpcServer::Start(std::shared_ptr<TProcessor> processor,
                                                    const RpcServerOptions& options) {
    auto socket = std::make_shared<ServerSocket>(options.listen.host, options.listen.port);
    try {
        socket->listen();
    } catch (const TTransportException& e) {
        return Status::IoError("cannot listen on " + options.listen.ToString() + ": " + e.what());
    }
    auto protocol = std::make_shared<TBinaryProtocolFactory>(
        rpc::kMaxStringBytes, rpc::kMaxContainerItems, /*strict_read=*/true,
        /*strict_write=*/true);
    std::unique_ptr<RpcServer> server(new RpcServer());
    server->server_ = std::make_shared<TThreadedServer>(processor, socket,
                                                        std::make_shared<FramedFactory>(),
                                                        protocol);
    server->server_->setConcurrentClientLimit(std::max(1, options.max_connections));
    server->server_->setServerEventHandler(std::make_shared<SessionReset>());
    server->thread_ = std::thread([s = server->server_, where = options.listen.ToString()] {
        try {
            s->serve();
        } catch (const std::exception& e) {
            spdlog::error("RPC server on {} stopped: {}", where, e.what());
        }
    });
    return server;
}

RpcServer::~RpcServer() { Stop(); }

void RpcServer::Stop() {
    if (!thread_.joinable()) return;
    server_->stop();
    thread_.join();
}

}  // namespace mooncake
