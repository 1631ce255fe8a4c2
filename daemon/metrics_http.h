// MetricsHttp: Prometheus `/metrics` over HTTP (cpp-httplib), the same text as
// `mooncakectl metrics`. On a master (ServeMaster) also the admin endpoints of Mooncake's
// master HTTP port that engines and operators probe, in Mooncake's formats:
//   GET /get_all_segments          live nodes that contribute DRAM, one name a line
//                                  (SGLang's MOONCAKE_CHECK_SERVER waits for it to be non-empty)
//   GET /query_segment?segment=N   "N\nUsed(bytes): U\nCapacity(bytes) : C\n"; 500 if no such node
//   GET /get_all_keys              every key, one a line (403 when the cluster has an auth token:
//                                  this port is unauthenticated)
//   GET /health                    "OK" while the process serves
// Anything else is 404.
//
// Thread-safety: Start/Stop from one thread; requests are served on httplib's pool.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/master_types.h"
#include "core/base/status.h"
#include "net/net.h"

namespace httplib {
class Server;
}

namespace mooncake {

class MetricsRegistry;

// What a master lets the HTTP port see (read-only; each call is inspection, never an access).
struct MasterHttpView {
    std::function<std::vector<NodeInfo>()> nodes;    // live nodes
    std::function<std::vector<std::string>()> keys;  // every key; empty: /get_all_keys is 403
};

class MetricsHttp {
public:
    explicit MetricsHttp(MetricsRegistry& metrics);
    ~MetricsHttp();
    // Adds the master endpoints above; call before Start.
    void ServeMaster(MasterHttpView view);
    Status Start(const net::HostPort& listen);  // binds now; a taken port fails here
    void Stop();

private:
    MetricsRegistry& metrics_;
    MasterHttpView master_;  // set before Start, read by the server's threads
    std::unique_ptr<httplib::Server> server_;
    std::thread thread_;
    std::atomic<bool> served_{false};  // the server's thread returned (see Stop)
};

}  // namespace mooncake
