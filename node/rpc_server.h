// RpcServer: a Thrift service on HOST:PORT with the control wire's limits.
//
// TThreadedServer (a thread per connection: long-polls park a thread, not an event loop),
// TFramedTransport capped at rpc::kMaxFrameBytes, strict TBinaryProtocol with string and
// container limits, at most `max_connections` connections served at once (more wait in the
// accept backlog). Garbage or oversized frames fail that connection only.
//
// Each connection starts with Hello, which records what the caller proved in the session;
// handlers check it against node/access.h's tables. The session lives in the connection's
// thread and is reset when a connection starts.
#pragma once

#include <memory>
#include <thread>

#include "core/base/status.h"
#include "core/base/tenant.h"
#include "node/access.h"
#include "net/net.h"

namespace apache::thrift {
class TProcessor;
namespace server {
class TThreadedServer;
}
}  // namespace apache::thrift

namespace mooncake {

struct RpcSession {
    Credentials credentials;  // set by Hello (node/access.h)
    // The tenant every key the session names belongs to (set by the master's Hello).
    KeyScope scope = KeyScope::Default();
};
// The calling connection's session (valid inside a handler).
RpcSession& CurrentRpcSession();

struct RpcServerOptions {
    net::HostPort listen;
    int max_connections = 1024;
};

class RpcServer {
public:
    // Binds now (a taken port fails here, not in a background thread) and starts serving.
    static Result<std::unique_ptr<RpcServer>> Start(
        std::shared_ptr<apache::thrift::TProcessor> processor, const RpcServerOptions& options);
    ~RpcServer();
    // Stops accepting, interrupts every connection and joins them.
    void Stop();

private:
    RpcServer() = default;
    std::shared_ptr<apache::thrift::server::TThreadedServer> server_;
    std::thread thread_;
};

}  // namespace mooncake
