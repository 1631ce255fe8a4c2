#include "daemon/metrics_http.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/base/metrics.h"
#include "core/base/text_encoding.h"

namespace mooncake {
namespace {

// Mooncake's content type for its text listings.
constexpr const char* kText = "text/plain; version=0.0.4";
constexpr const char* kJson = "application/json; charset=utf-8";

std::string NodeName(const std::vector<NodeInfo>& nodes, NodeId id) {
    for (const NodeInfo& n : nodes) {
        if (n.id == id) return n.spec.name;
    }
    return "";
}

// One COMPLETE replica as /query_key and /batch_query_keys describe it.
std::string ReplicaJson(const ReplicaDesc& r, uint64_t size, const std::vector<NodeInfo>& nodes) {
    return "{\"tier\":" + JsonQuote(TierName(r.tier)) +
           ",\"node\":" + JsonQuote(NodeName(nodes, r.node)) + ",\"size\":" + std::to_string(size) +
           "}";
}

// A key's COMPLETE replicas on `tier`, as a JSON array.
std::string ReplicasOnTier(const ObjectView& o, Tier tier, const std::vector<NodeInfo>& nodes) {
    std::string out = "[";
    for (const ReplicaDesc& r : o.replicas) {
        if (r.state != ReplicaState::kComplete || r.tier != tier) continue;
        if (out.size() > 1) out += ",";
        out += ReplicaJson(r, o.size, nodes);
    }
    return out + "]";
}

// Mooncake's error names for what a key lookup can answer (its ErrorCode's toString).
std::string LookupErrorName(const Status& st) {
    if (st.Is(StatusCode::kNotFound)) return "OBJECT_NOT_FOUND";
    if (st.Is(StatusCode::kInvalidArgument)) return "INVALID_KEY";
    return "INTERNAL_ERROR";
}

// Keys are not secrets the way values are, but a cluster with a token lists none over this
// unauthenticated port; naming one's replicas is the same disclosure.
bool RefuseKeysUnderToken(const MasterHttpView& v, httplib::Response& res) {
    if (v.keys) return false;
    res.status = 403;
    res.set_content("the cluster has an auth token: inspect keys with mooncakectl stat\n",
                    "text/plain");
    return true;
}

}  // namespace

MetricsHttp::MetricsHttp(MetricsRegistry& metrics) : metrics_(metrics) {}

MetricsHttp::~MetricsHttp() { Stop(); }

void MetricsHttp::ServeMaster(MasterHttpView view) {
    master_ = true;
    SetMasterView(std::move(view));
}

void MetricsHttp::ServeHaMaster(std::function<MasterRole()> role) {
    master_ = true;
    role_ = std::move(role);
}

void MetricsHttp::SetMasterView(MasterHttpView view) {
    std::optional<MasterHttpView> old;
    {
        WriterLock lock(view_mu_);
        old = std::move(view_);
        view_ = std::move(view);
    }
}  // `old` goes here, outside the lock: its drain jobs' threads are joined with no request kept

void MetricsHttp::ClearMasterView() {
    std::optional<MasterHttpView> old;
    {
        WriterLock lock(view_mu_);  // waits for the requests that hold it shared
        old = std::move(view_);
        view_.reset();
    }
}  // as above

std::string MetricsHttp::HaState(const MasterRole& role) {
    if (role.role == "standby") return "standby";
    ReaderLock lock(view_mu_);
    const bool serving = view_ && (!view_->serving || view_->serving().ok());
    return serving ? "serving" : "leader_warmup";
}

std::function<void(const httplib::Request&, httplib::Response&)> MetricsHttp::Cluster(
    ClusterAnswer answer) {
    return [this, answer](const httplib::Request& req, httplib::Response& res) {
        MasterRole role = role_ ? role_() : MasterRole{"master", ""};
        ReaderLock lock(view_mu_);
        Status st = Status::Ok();
        if (!view_) {
            st = Status::NotLeader(role.role == "standby"
                                       ? "this master is a standby of its HA cluster"
                                       : "this master is not serving the cluster yet");
        } else if (view_->serving) {
            st = view_->serving();
        }
        if (st.ok()) {
            answer(*view_, req, res);
            return;
        }
        std::string body = "503 " + role.role + ": " + st.message();
        if (role.role != "leader") {  // a leader still warming up: ask it again
            body += role.leader.empty() ? "; no leader is known yet"
                                        : "; ask the leader at " + role.leader;
            if (!role.leader.empty()) res.set_header("X-Mooncake-Leader", role.leader);
        }
        res.status = 503;
        res.set_content(body + "\n", "text/plain");
    };
}

void MetricsHttp::AddMasterEndpoints() {
    auto cluster = [this](ClusterAnswer answer) { return Cluster(std::move(answer)); };
    server_->Get("/get_all_segments", cluster([](const MasterHttpView& v, const httplib::Request&,
                                                 httplib::Response& res) {
                     std::string body;
                     for (const NodeInfo& n : v.nodes()) {
                         if (n.spec.segment_capacity > 0) body += n.spec.name + "\n";
                     }
                     res.set_content(body, kText);
                 }));
    server_->Get(
        "/query_segment",
        cluster([](const MasterHttpView& v, const httplib::Request& req, httplib::Response& res) {
            const std::string name = req.get_param_value("segment");
            for (const NodeInfo& n : v.nodes()) {
                if (n.spec.name != name || n.spec.segment_capacity == 0) continue;
                res.set_content(
                    name + "\nUsed(bytes): " + std::to_string(n.segment_used) +
                        "\nCapacity(bytes) : " + std::to_string(n.spec.segment_capacity) + "\n",
                    kText);
                return;
            }
            res.status = 500;
            res.set_content("Segment not found: " + name + "\n", "text/plain");
        }));
    server_->Get(
        "/get_all_keys",
        cluster([](const MasterHttpView& v, const httplib::Request&, httplib::Response& res) {
            if (!v.keys) {
                res.status = 403;
                res.set_content("the cluster has an auth token: list keys with mooncakectl ls\n",
                                "text/plain");
                return;
            }
            std::string body;
            for (const std::string& key : v.keys()) body += key + "\n";
            res.set_content(body, kText);
        }));
    server_->Get("/query_key", cluster([](const MasterHttpView& v, const httplib::Request& req,
                                          httplib::Response& res) {
                     if (RefuseKeysUnderToken(v, res)) return;
                     const std::string key = req.get_param_value("key");
                     auto o = v.stat(key);
                     if (!o.ok()) {
                         // A malformed key is the asker's error; a well-formed one not stored, 404.
                         res.status = o.status().Is(StatusCode::kInvalidArgument) ? 400 : 404;
                         res.set_content(o.status().ToString() + "\n", "text/plain");
                         return;
                     }
                     std::vector<NodeInfo> nodes = v.nodes();
                     std::string body;
                     for (const ReplicaDesc& r : o->replicas) {
                         if (r.state != ReplicaState::kComplete) continue;
                         body += ReplicaJson(r, o->size, nodes) + "\n";
                     }
                     res.set_content(body, kText);
                 }));
    // Mooncake's shape: {"success":true,"data":{KEY:{"ok":true,"values":[MEMORY replicas]},
    // KEY2:{"ok":false,"error":"OBJECT_NOT_FOUND"}}}, keys comma-separated in ?keys=. Its
    // "values" are transfer-engine buffer descriptors; here they are the replicas as /query_key
    // names them, and "local_disk_values" (as Mooncake's newer masters) the LOCAL_DISK ones.
    // The request line is at most 8 KiB (httplib answers 414 past it), which bounds a call.
    server_->Get(
        "/batch_query_keys",
        cluster([](const MasterHttpView& v, const httplib::Request& req, httplib::Response& res) {
            if (RefuseKeysUnderToken(v, res)) return;
            std::vector<std::string> keys;
            const std::string list = req.get_param_value("keys");
            for (size_t at = 0; !list.empty() && at <= list.size();) {
                size_t comma = std::min(list.find(',', at), list.size());
                keys.push_back(list.substr(at, comma - at));
                at = comma + 1;
            }
            if (keys.empty()) {
                res.status = 400;
                res.set_content(
                    R"({"success":false,"error":"No keys provided. Use ?keys=key1,key2,..."})",
                    kJson);
                return;
            }
            std::vector<NodeInfo> nodes = v.nodes();
            std::string body = R"({"success":true,"data":{)";
            for (size_t i = 0; i < keys.size(); ++i) {
                if (i > 0) body += ",";
                AppendJsonQuoted(body, keys[i]);
                body += ":";
                auto o = v.stat(keys[i]);
                if (!o.ok()) {
                    body +=
                        R"({"ok":false,"error":)" + JsonQuote(LookupErrorName(o.status())) + "}";
                    continue;
                }
                const std::string memory = ReplicasOnTier(*o, Tier::kMemory, nodes);
                const std::string disk = ReplicasOnTier(*o, Tier::kLocalDisk, nodes);
                if (memory == "[]" && disk == "[]") {  // its first write has not ended
                    body += R"({"ok":false,"error":"REPLICA_IS_NOT_READY"})";
                    continue;
                }
                body +=
                    R"({"ok":true,"values":)" + memory + R"(,"local_disk_values":)" + disk + "}";
            }
            res.set_content(body + "}}", kJson);
        }));
    // Mooncake's shape: {"total_segments":N,"segments":[{segment_name, segment_id, client_id,
    // base_address, size_bytes, size_human, te_endpoint, protocol, status,
    // allocator_used_bytes, allocator_capacity_bytes, allocator_usage_percent}]}. A segment is
    // a node's DRAM: its id is the node's, te_endpoint its data channel, base_address "0x0"
    // (offsets, not addresses, cross the wire here). Added: the node's LOCAL_DISK figures.
    server_->Get(
        "/get_segments_detail",
        cluster([](const MasterHttpView& v, const httplib::Request&, httplib::Response& res) {
            std::string items;
            size_t count = 0;
            for (const NodeInfo& n : v.nodes()) {
                if (n.spec.segment_capacity == 0) continue;
                const uint64_t cap = n.spec.segment_capacity;
                char human[32], percent[32];
                std::snprintf(human, sizeof human, "%g GiB",
                              static_cast<double>(cap) / (1024.0 * 1024.0 * 1024.0));
                std::snprintf(
                    percent, sizeof percent, "%.4g",
                    100.0 * static_cast<double>(n.segment_used) / static_cast<double>(cap));
                const std::string id = JsonQuote(std::to_string(n.id));
                if (count++ > 0) items += ",";
                items += "{\"segment_name\":" + JsonQuote(n.spec.name) + ",\"segment_id\":" + id +
                         ",\"client_id\":" + id +
                         ",\"base_address\":\"0x0\",\"size_bytes\":" + std::to_string(cap) +
                         ",\"size_human\":" + JsonQuote(human) +
                         ",\"te_endpoint\":" + JsonQuote(n.spec.data_address) +
                         ",\"protocol\":\"tcp\",\"status\":" +
                         JsonQuote(SegmentStateName(n.segment_state)) +
                         ",\"allocator_used_bytes\":" +
                         std::to_string(n.segment_used) +
                         ",\"allocator_capacity_bytes\":" + std::to_string(cap) +
                         ",\"allocator_usage_percent\":" + percent +
                         ",\"disk_used_bytes\":" + std::to_string(n.disk_used) +
                         ",\"disk_capacity_bytes\":" + std::to_string(n.spec.disk_capacity) +
                         ",\"memory_objects\":" + std::to_string(n.memory_objects) +
                         ",\"disk_objects\":" + std::to_string(n.disk_objects) + "}";
            }
            res.set_content(
                "{\"total_segments\":" + std::to_string(count) + ",\"segments\":[" + items + "]}",
                kJson);
        }));
    server_->Get("/role", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content((role_ ? role_().role : "master") + "\n", "text/plain");
    });
    // Mooncake's runtime state names: "serving" while this master answers for the cluster,
    // "leader_warmup" for a leader whose term's nodes are still registering again, "standby".
    server_->Get("/ha_status", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(HaState(role_ ? role_() : MasterRole{"master", ""}) + "\n", "text/plain");
    });
    server_->Get("/leader", [this](const httplib::Request&, httplib::Response& res) {
        MasterRole role = role_ ? role_() : MasterRole{"master", ""};
        res.set_content(
            role.leader.empty()
                ? std::string("{\"present\":false}")
                : "{\"present\":true,\"leader_address\":" + JsonQuote(role.leader) + "}",
            "application/json");
    });
    // Answered by every master: a standby says so, with no figures of its own.
    server_->Get("/metrics/summary", [this](const httplib::Request&, httplib::Response& res) {
        MasterRole role = role_ ? role_() : MasterRole{"master", ""};
        std::string line = "role=" + role.role;
        if (!role.leader.empty()) line += ", leader=" + role.leader;
        ReaderLock lock(view_mu_);
        Status st = view_ ? (view_->serving ? view_->serving() : Status::Ok())
                          : Status::NotLeader("no metadata on this master");
        line += std::string(", serving=") + (st.ok() ? "true" : "false");
        if (st.ok()) {
            uint64_t segments = 0, used = 0, capacity = 0, disk = 0, mem_objects = 0,
                     disk_objects = 0;
            std::vector<NodeInfo> nodes = view_->nodes();
            for (const NodeInfo& n : nodes) {
                if (n.spec.segment_capacity > 0) ++segments;
                used += n.segment_used;
                capacity += n.spec.segment_capacity;
                disk += n.disk_used;
                mem_objects += n.memory_objects;
                disk_objects += n.disk_objects;
            }
            line += ", nodes=" + std::to_string(nodes.size()) +
                    ", segments=" + std::to_string(segments) +
                    ", segment_used_bytes=" + std::to_string(used) +
                    ", segment_capacity_bytes=" + std::to_string(capacity) +
                    ", disk_used_bytes=" + std::to_string(disk) +
                    ", memory_replicas=" + std::to_string(mem_objects) +
                    ", disk_replicas=" + std::to_string(disk_objects);
        } else {
            line += ", reason=\"" + st.message() + "\"";
        }
        res.set_content(line + "\n", kText);
    });
}

Status MetricsHttp::Start(const net::HostPort& listen) {
    server_ = std::make_unique<httplib::Server>();
    server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
    server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_.RenderPrometheus(), "text/plain; version=0.0.4; charset=utf-8");
    });
    server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("mooncaked: metrics at /metrics\n", "text/plain");
    });
    // Liveness (200 while the process serves), in the JSON of Mooncake's newest master.
    server_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
        if (!master_) {
            res.set_content("{\"status\":\"ok\",\"role\":\"node\"}", kJson);
            return;
        }
        MasterRole role = role_ ? role_() : MasterRole{"master", ""};
        const std::string state = HaState(role);
        std::string body = "{\"status\":\"ok\",\"role\":" + JsonQuote(role.role) +
                           ",\"ha_state\":" + JsonQuote(state) +
                           ",\"service_ready\":" + (state == "serving" ? "true" : "false");
        if (!role.leader.empty()) body += ",\"leader_address\":" + JsonQuote(role.leader);
        res.set_content(body + "}", kJson);
    });
    if (master_) {
        AddMasterEndpoints();
        AddDrainEndpoints();
    }
    if (!server_->bind_to_port(listen.host, listen.port)) {
        return Status::IoError("cannot serve metrics on " + listen.ToString() +
                               " (port taken? --metrics_port=0 turns it off)");
    }
    thread_ = std::thread([this] {
        server_->listen_after_bind();
        served_.store(true);
    });
    return Status::Ok();
}

void MetricsHttp::Stop() {
    if (!thread_.joinable()) return;
    // httplib's stop() only stops an accept loop that has begun: asked a moment after Start
    // (a SIGTERM while the daemon starts), it would do nothing, the server would serve on and
    // the join below would never return. So wait for the loop (or the thread's end) first.
    while (!server_->is_running() && !served_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    server_->stop();
    thread_.join();
}

}  // namespace mooncake
