// Mooncake's drain jobs on the master's HTTP port (daemon/drain_jobs.h, core/master/
// store_drain.cc), against real daemons: a drained node's MEMORY copies move to the other
// node byte for byte, new data stays off it until the job is cancelled, a drain that finds
// no room fails and gives the segment back, and bad requests get Mooncake's errors.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "thrift/client.h"

namespace mooncake::test {
namespace {

using nlohmann::json;

struct Http {
    int status = 0;
    json body;
};

Http Call(uint16_t port, const std::string& method, const std::string& path,
          const std::string& body = "") {
    httplib::Client http("127.0.0.1", port);
    auto res = method == "POST" ? http.Post(path, body, "application/json") : http.Get(path);
    if (!res) return {};
    return {res->status, json::parse(res->body, nullptr, false)};
}

// A master with its HTTP port, and two nodes without disks (what leaves DRAM is gone).
struct DrainCluster {
    explicit DrainCluster(const std::string& second_dram = "16MiB")
        : http_port(FreePort()),
          c({"--metrics_port=" + std::to_string(http_port)}),
          a(c.AddNode("16MiB", false)),
          b(c.AddNode(second_dram, false)) {}
    uint16_t http_port;
    Cluster c;
    Cluster::NodeProcess& a;
    Cluster::NodeProcess& b;
};

std::string StartDrain(uint16_t port, const std::string& segment) {
    Http created = Call(port, "POST", "/api/v1/drain_jobs", json{{"segments", {segment}}}.dump());
    EXPECT_EQ(created.status, 200) << created.body.dump();
    EXPECT_EQ(created.body.value("status", ""), "CREATED");
    return created.body.value("job_id", "");
}

// The job's last answer once it ended (SUCCEEDED, FAILED), or the last one at the timeout.
json WaitForEnd(uint16_t port, const std::string& id) {
    json job;
    WaitFor([&] {
        job = Call(port, "GET", "/api/v1/drain_jobs/query?job_id=" + id).body;
        const std::string s = job.value("status_name", "");
        return s == "SUCCEEDED" || s == "FAILED";
    });
    return job;
}

std::string SegmentStatus(uint16_t port, const std::string& segment) {
    return Call(port, "GET", "/api/v1/segments/status?segment=" + segment)
        .body.value("status_name", "");
}

std::vector<std::string> MemoryNodes(Client& client, const std::string& key) {
    std::vector<std::string> nodes;
    auto info = client.Stat(key);
    if (!info.ok()) return nodes;
    for (size_t i = 0; i < info->object.replicas.size(); ++i) {
        if (info->object.replicas[i].tier == Tier::kMemory) {
            nodes.push_back(info->locations[i].node_name);
        }
    }
    return nodes;
}

TEST(DrainJobTest, EveryMemoryCopyMovesOffTheNodeAndNewDataStaysAwayUntilCancelled) {
    DrainCluster d;
    Client& client = *d.c.client;
    ASSERT_TRUE(d.c.WaitForNodes(2));
    constexpr int kKeys = 20;
    constexpr size_t kSize = 256 << 10;
    for (int i = 0; i < kKeys; ++i) {
        const std::string v = Pattern(i, kSize);
        ASSERT_TRUE(
            client.Put("moved-" + std::to_string(i), std::as_bytes(std::span(v)), d.c.IdOf(d.a))
                .ok());
    }
    PutConfig two;
    two.replicas = 2;
    const std::string copied = Pattern(99, kSize);
    ASSERT_TRUE(client.Put("copied", std::as_bytes(std::span(copied)), d.c.IdOf(d.a), two).ok());
    ASSERT_EQ(MemoryNodes(client, "moved-0"), std::vector<std::string>{d.a.name});
    EXPECT_EQ(SegmentStatus(d.http_port, d.a.name), "OK");

    const std::string id = StartDrain(d.http_port, d.a.name);
    const json job = WaitForEnd(d.http_port, id);
    ASSERT_EQ(job.value("status_name", ""), "SUCCEEDED") << job.dump();
    EXPECT_EQ(job.value("status", -1), 3);
    EXPECT_EQ(job.value("type_name", ""), "DRAIN");
    EXPECT_EQ(job["segments"], json({d.a.name}));
    EXPECT_EQ(job.value("succeeded_units", 0u), kKeys + 1u);
    EXPECT_EQ(job.value("failed_units", 1u), 0u);
    // The copies were moved; the object with a copy elsewhere lost only its copy here.
    EXPECT_EQ(job.value("migrated_bytes", 0u), kKeys * kSize);
    EXPECT_EQ(SegmentStatus(d.http_port, d.a.name), "DRAINED");
    EXPECT_EQ(SegmentStatus(d.http_port, d.b.name), "OK");

    for (int i = 0; i < kKeys; ++i) {
        const std::string key = "moved-" + std::to_string(i);
        EXPECT_EQ(MemoryNodes(client, key), std::vector<std::string>{d.b.name}) << key;
        auto got = client.Get(key);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(*got, Pattern(i, kSize)) << key;
    }
    EXPECT_EQ(MemoryNodes(client, "copied"), std::vector<std::string>{d.b.name});
    auto got = client.Get("copied");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, copied);
    auto nodes = client.Nodes();
    ASSERT_TRUE(nodes.ok());
    for (const NodeInfo& n : *nodes) {
        if (n.spec.name == d.a.name) {
            EXPECT_EQ(n.segment_used, 0u) << "DRAM left behind";
        }
        // What `mooncakectl nodes` shows as STATE comes over the wire too.
        EXPECT_EQ(n.segment_state,
                  n.spec.name == d.a.name ? SegmentState::kDrained : SegmentState::kOk)
            << n.spec.name;
        EXPECT_FALSE(n.reporting) << n.spec.name;
    }
    Http detail = Call(d.http_port, "GET", "/get_segments_detail");
    for (const json& s : detail.body["segments"]) {
        EXPECT_EQ(s.value("status", ""),
                  s.value("segment_name", "") == d.a.name ? "DRAINED" : "OK");
    }

    // A drained segment takes no new data, even asked for by name.
    const std::string after(4096, 'n');
    ASSERT_TRUE(client.Put("new", std::as_bytes(std::span(after)), d.c.IdOf(d.a)).ok());
    EXPECT_EQ(MemoryNodes(client, "new"), std::vector<std::string>{d.b.name});

    // Cancelling puts it back in service.
    Http cancelled = Call(d.http_port, "POST", "/api/v1/drain_jobs/cancel?job_id=" + id);
    EXPECT_EQ(cancelled.status, 200);
    EXPECT_EQ(cancelled.body.value("status", ""), "CANCELED");
    EXPECT_EQ(cancelled.body.value("job_id", ""), id);
    EXPECT_EQ(SegmentStatus(d.http_port, d.a.name), "OK");
    ASSERT_TRUE(client.Put("back", std::as_bytes(std::span(after)), d.c.IdOf(d.a)).ok());
    EXPECT_EQ(MemoryNodes(client, "back"), std::vector<std::string>{d.a.name});
    EXPECT_EQ(Call(d.http_port, "GET", "/api/v1/drain_jobs/query?job_id=" + id)
                  .body.value("status_name", ""),
              "CANCELED");
}

TEST(DrainJobTest, ADrainWithNoRoomElsewhereFailsAndGivesTheSegmentBack) {
    DrainCluster d("1MiB");  // the other node holds 4 of the 12 values
    Client& client = *d.c.client;
    ASSERT_TRUE(d.c.WaitForNodes(2));
    constexpr int kKeys = 12;
    constexpr size_t kSize = 256 << 10;
    for (int i = 0; i < kKeys; ++i) {
        const std::string v = Pattern(i, kSize);
        ASSERT_TRUE(
            client.Put("stay-" + std::to_string(i), std::as_bytes(std::span(v)), d.c.IdOf(d.a))
                .ok());
    }
    const json job = WaitForEnd(d.http_port, StartDrain(d.http_port, d.a.name));
    ASSERT_EQ(job.value("status_name", ""), "FAILED") << job.dump();
    EXPECT_GT(job.value("failed_units", 0u), 0u);
    EXPECT_NE(job.value("message", "").find("no node has room"), std::string::npos) << job.dump();
    EXPECT_EQ(SegmentStatus(d.http_port, d.a.name), "OK");
    // Nothing was lost: the hottest (the last put) moved into the room there was, and evicted
    // nothing hotter than themselves; the rest stayed where they were.
    for (int i = 0; i < kKeys; ++i) {
        const std::string key = "stay-" + std::to_string(i);
        auto got = client.Get(key);
        ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
        EXPECT_EQ(*got, Pattern(i, kSize)) << key;
        EXPECT_EQ(MemoryNodes(client, key),
                  std::vector<std::string>{i >= kKeys - 4 ? d.b.name : d.a.name})
            << key;
    }
}

TEST(DrainJobTest, BadRequestsGetMooncakesErrors) {
    DrainCluster d;
    ASSERT_TRUE(d.c.WaitForNodes(2));
    const uint16_t p = d.http_port;
    Http bad_json = Call(p, "POST", "/api/v1/drain_jobs", "not json");
    EXPECT_EQ(bad_json.status, 400);
    EXPECT_EQ(bad_json.body.value("success", true), false);
    EXPECT_EQ(bad_json.body.value("error_code", 0), -600);
    EXPECT_EQ(Call(p, "POST", "/api/v1/drain_jobs", "{}").status, 400);  // no segments
    EXPECT_EQ(Call(p, "POST", "/api/v1/drain_jobs", R"({"segments":"x"})").status, 400);
    Http unknown = Call(p, "POST", "/api/v1/drain_jobs", R"({"segments":["no-such-node"]})");
    EXPECT_EQ(unknown.status, 404);
    EXPECT_EQ(unknown.body.value("error_code", 0), -101);
    EXPECT_EQ(Call(p, "POST", "/api/v1/drain_jobs",
                   json{{"segments", {d.a.name}}, {"max_concurrency", 0}}.dump())
                  .status,
              400);
    EXPECT_EQ(Call(p, "GET", "/api/v1/drain_jobs/query").status, 400);
    EXPECT_EQ(Call(p, "GET", "/api/v1/drain_jobs/query?job_id=not-a-uuid").status, 400);
    EXPECT_EQ(Call(p, "GET", "/api/v1/drain_jobs/query?job_id=0b7e3f0e-8c1a-4c4e-9a1e-1f2d3c4b5a69")
                  .status,
              404);
    EXPECT_EQ(Call(p, "POST", "/api/v1/drain_jobs/cancel?job_id=bad").status, 400);
    EXPECT_EQ(Call(p, "GET", "/api/v1/segments/status").status, 400);
    EXPECT_EQ(Call(p, "GET", "/api/v1/segments/status?segment=nope").status, 404);
    Http ok = Call(p, "GET", "/api/v1/segments/status?segment=" + d.b.name);
    EXPECT_EQ(ok.status, 200);
    EXPECT_EQ(ok.body.value("status", 0), 1);
    EXPECT_EQ(ok.body.value("segment", ""), d.b.name);
}

}  // namespace
}  // namespace mooncake::test
