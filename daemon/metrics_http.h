// MetricsHttp: Prometheus `/metrics` over HTTP (cpp-httplib), the same text as
// `mooncakectl metrics`. Anything but GET /metrics (and GET / pointing there) is 404.
//
// Thread-safety: Start/Stop from one thread; requests are served on httplib's pool.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "core/status.h"
#include "net/net.h"

namespace httplib {
class Server;
}

namespace mooncake {

class MetricsRegistry;

class MetricsHttp {
public:
    explicit MetricsHttp(MetricsRegistry& metrics);
    ~MetricsHttp();
    Status Start(const net::HostPort& listen);  // binds now; a taken port fails here
    void Stop();

private:
    MetricsRegistry& metrics_;
    std::unique_ptr<httplib::Server> server_;
    std::thread thread_;
    std::atomic<bool> served_{false};  // the server's thread returned (see Stop)
};

}  // namespace mooncake
