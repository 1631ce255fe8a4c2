#include "daemon/metrics_http.h"

#include <httplib.h>

#include <chrono>

#include "core/base/metrics.h"
#include "core/base/text_encoding.h"

namespace mooncake {
namespace {

// Mooncake's content type for its text listings.
constexpr const char* kText = "text/plain; version=0.0.4";

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
    WriterLock lock(view_mu_);
    view_ = std::move(view);
}

void MetricsHttp::ClearMasterView() {
    WriterLock lock(view_mu_);  // waits for the requests that hold it shared
    view_.reset();
}

void MetricsHttp::AddMasterEndpoints() {
    using Handler =
        std::function<void(const MasterHttpView&, const httplib::Request&, httplib::Response&)>;
    // A cluster endpoint: answered from the view while this master serves the cluster, else
    // 503 naming the leader. The view is held (shared) for the whole answer, so a term that
    // ends meanwhile waits for it (ClearMasterView) before its store goes.
    auto cluster = [this](Handler answer) {
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
    };
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
                     // Keys are not secrets the way values are, but a cluster with a token
                     // lists none here; naming one's replicas is the same disclosure.
                     if (!v.keys) {
                         res.status = 403;
                         res.set_content(
                             "the cluster has an auth token: inspect keys with mooncakectl stat\n",
                             "text/plain");
                         return;
                     }
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
                         std::string node;
                         for (const NodeInfo& n : nodes) {
                             if (n.id == r.node) node = n.spec.name;
                         }
                         body += "{\"tier\":" + JsonQuote(TierName(r.tier)) +
                                 ",\"node\":" + JsonQuote(node) +
                                 ",\"size\":" + std::to_string(o->size) + "}\n";
                     }
                     res.set_content(body, kText);
                 }));
    server_->Get("/role", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content((role_ ? role_().role : "master") + "\n", "text/plain");
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
    server_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("OK", "text/plain");
    });
    if (master_) AddMasterEndpoints();
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
