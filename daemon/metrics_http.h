// MetricsHttp: Prometheus `/metrics` over HTTP (cpp-httplib), the same text as
// `mooncakectl metrics`. On a master (ServeMaster, ServeHaMaster) also the admin endpoints of
// Mooncake's master HTTP port that engines and operators probe, in Mooncake's formats:
//   GET /get_all_segments          live nodes that contribute DRAM, one name a line
//                                  (SGLang's MOONCAKE_CHECK_SERVER waits for it to be non-empty)
//   GET /query_segment?segment=N   "N\nUsed(bytes): U\nCapacity(bytes) : C\n"; 500 if no such node
//   GET /get_all_keys              every key, one a line (403 when the cluster has an auth token:
//                                  this port is unauthenticated)
//   GET /query_key?key=K           one JSON line per COMPLETE replica (tier, node, size); 404 if
//                                  no such key. Inspection: no lease, no recency, no promotion
//   GET /batch_query_keys?keys=A,B {"success":true,"data":{"A":{"ok":true,"values":[MEMORY
//                                  replicas],"local_disk_values":[...]},"B":{"ok":false,
//                                  "error":"OBJECT_NOT_FOUND"}}} (403 with a token, as above)
//   GET /get_segments_detail       {"total_segments":N,"segments":[...]}: each DRAM segment with
//                                  its use (Mooncake's fields) and its node's LOCAL_DISK figures
//   GET /metrics/summary           one line: role, leader, nodes, segment use, keys
//   GET /health                    200 while the process serves (liveness): {"status":"ok",
//                                  "role":R,"ha_state":S,"service_ready":B[,"leader_address":A]}
//                                  as Mooncake's newest master; a node: {"status":"ok","role":"node"}
//   GET /role                      "master" (no HA), "leader" or "standby"
//   GET /ha_status                 "serving", "leader_warmup" (a new leader's nodes are still
//                                  registering again) or "standby"
//   GET /leader                    {"present":true,"leader_address":"HOST:PORT"} (HA: from etcd)
// The cluster endpoints (the first six) are answered by a master that serves the cluster: a
// single master, or the HA leader once its nodes registered again. Any other master answers
// them 503 with why and the leader's address (also in the X-Mooncake-Leader header), never an
// empty list that would read as "no segments". Anything else is 404.
//
// Thread-safety: Start/Stop/Serve* from one thread; SetMasterView/ClearMasterView from any
// (ClearMasterView waits for the requests that use the view it drops); requests are served
// on httplib's pool.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/master_types.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "net/net.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace mooncake {

class DrainJobs;
class MetricsRegistry;

// What a master lets the HTTP port see (read-only; each call is inspection, never an access).
struct MasterHttpView {
    std::function<std::vector<NodeInfo>()> nodes;    // live nodes
    std::function<std::vector<std::string>()> keys;  // every key; empty: /get_all_keys is 403
    std::function<Result<ObjectView>(const std::string&)> stat;  // one key, never an access
    // Whether this master answers for the cluster now (empty: always). Not ok: the cluster
    // endpoints answer 503 with its message (a leader whose nodes are still registering again).
    std::function<Status()> serving;
    // Mooncake's drain jobs over this store (null: the drain endpoints answer 404).
    std::shared_ptr<DrainJobs> drains;
};

// Where a master stands in its HA cluster, for /role, /leader and the 503s.
struct MasterRole {
    std::string role;    // "master" (no HA), "leader", "standby"
    std::string leader;  // the leader's address as etcd names it; "" if none known
};

class MetricsHttp {
  public:
    explicit MetricsHttp(MetricsRegistry& metrics);
    ~MetricsHttp();
    // A single master: the endpoints above over `view` for the process's life. Before Start.
    void ServeMaster(MasterHttpView view);
    // An HA master: the endpoints above, answered from the view of the current term
    // (SetMasterView), 503 while there is none. `role` is asked at each request. Before Start.
    void ServeHaMaster(std::function<MasterRole()> role);
    void SetMasterView(MasterHttpView view) MC_EXCLUDES(view_mu_);
    void ClearMasterView() MC_EXCLUDES(view_mu_);  // returns once no request uses the old view
    Status Start(const net::HostPort& listen);     // binds now; a taken port fails here
    void Stop();

  private:
    using ClusterAnswer =
        std::function<void(const MasterHttpView&, const httplib::Request&, httplib::Response&)>;
    // A cluster endpoint: answered from the view while this master serves the cluster, else
    // 503 naming the leader. The view is held (shared) for the whole answer, so a term that
    // ends meanwhile waits for it (ClearMasterView) before its store goes.
    std::function<void(const httplib::Request&, httplib::Response&)> Cluster(ClusterAnswer answer);
    void AddMasterEndpoints();
    void AddDrainEndpoints();  // daemon/drain_http.cc
    // Mooncake's runtime state name for /ha_status and /health: "serving", "leader_warmup"
    // (a new leader's nodes are still registering again) or "standby".
    std::string HaState(const MasterRole& role) MC_EXCLUDES(view_mu_);

    MetricsRegistry& metrics_;
    bool master_ = false;               // serve the master endpoints (set before Start)
    std::function<MasterRole()> role_;  // set before Start; empty for a single master
    SharedMutex view_mu_;               // a request holds it shared while it uses view_
    std::optional<MasterHttpView> view_ MC_GUARDED_BY(view_mu_);
    std::unique_ptr<httplib::Server> server_;
    std::thread thread_;
    std::atomic<bool> served_{false};  // the server's thread returned (see Stop)
};

}  // namespace mooncake
