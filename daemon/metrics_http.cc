#include "daemon/metrics_http.h"

#include <httplib.h>

#include <chrono>

#include "core/base/metrics.h"

namespace mooncake {

MetricsHttp::MetricsHttp(MetricsRegistry& metrics) : metrics_(metrics) {}

MetricsHttp::~MetricsHttp() { Stop(); }

void MetricsHttp::ServeMaster(MasterHttpView view) { master_ = std::move(view); }

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
    if (master_.nodes) {
        // Mooncake's content type for these text listings.
        static constexpr const char* kText = "text/plain; version=0.0.4";
        server_->Get("/get_all_segments", [this](const httplib::Request&, httplib::Response& res) {
            std::string body;
            for (const NodeInfo& n : master_.nodes()) {
                if (n.spec.segment_capacity > 0) body += n.spec.name + "\n";
            }
            res.set_content(body, kText);
        });
        server_->Get("/query_segment", [this](const httplib::Request& req, httplib::Response& res) {
            const std::string name = req.get_param_value("segment");
            for (const NodeInfo& n : master_.nodes()) {
                if (n.spec.name != name || n.spec.segment_capacity == 0) continue;
                res.set_content(
                    name + "\nUsed(bytes): " + std::to_string(n.segment_used) +
                        "\nCapacity(bytes) : " + std::to_string(n.spec.segment_capacity) + "\n",
                    kText);
                return;
            }
            res.status = 500;
            res.set_content("Segment not found: " + name + "\n", "text/plain");
        });
        server_->Get("/get_all_keys", [this](const httplib::Request&, httplib::Response& res) {
            if (!master_.keys) {
                res.status = 403;
                res.set_content("the cluster has an auth token: list keys with mooncakectl ls\n",
                                "text/plain");
                return;
            }
            std::string body;
            for (const std::string& key : master_.keys()) body += key + "\n";
            res.set_content(body, kText);
        });
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
