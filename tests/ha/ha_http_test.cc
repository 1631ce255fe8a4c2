// The master's HTTP admin endpoints on an HA cluster (daemon/metrics_http.h, docs/HA.md), with
// real etcd and mooncaked processes on loopback: the leader answers /get_all_segments and the
// other cluster endpoints; a standby answers them 503 naming the leader (never an empty list,
// which SGLang's MOONCAKE_CHECK_SERVER would read as "no segments"); after the leader is
// killed the new one answers 503 until the node registered again, then the node's segment.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "tests/fault/fault_util.h"
#include "tests/ha/ha_util.h"

namespace mooncake::test {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

struct Answer {
    int status = -1;  // -1: no answer
    std::string body;
    std::string leader_header;
};

Answer Get(uint16_t port, const std::string& path) {
    httplib::Client http("127.0.0.1", port);
    http.set_connection_timeout(2);
    http.set_read_timeout(5);
    Answer a;
    if (auto res = http.Get(path)) {
        a.status = res->status;
        a.body = res->body;
        a.leader_header = res->get_header_value("X-Mooncake-Leader");
    }
    return a;
}

HaCluster::Master* Standby(HaCluster& c, const HaCluster::Master* leader) {
    for (auto& m : c.masters) {
        if (m.get() != leader) return m.get();
    }
    return nullptr;
}

TEST(HaHttp, LeaderAnswersStandbyRefersFailoverServesSegmentsAgain) {
    HaCluster c(2);
    ASSERT_NE(c.client, nullptr);
    Cluster::NodeProcess& node = c.AddNode("4MiB", false);
    ASSERT_TRUE(c.WaitForNodes(1));
    HaCluster::Master* leader = c.Leader();
    ASSERT_NE(leader, nullptr);
    HaCluster::Master* standby = Standby(c, leader);
    ASSERT_NE(standby, nullptr);
    // The first put right after the node registered must succeed (the master's node
    // directory once answered it with no data address).
    Status first = c.client->Put("http/probe", "x");
    ASSERT_TRUE(first.ok()) << first.ToString();
    ASSERT_TRUE(c.client->Remove("http/probe", true).ok());
    std::vector<WrittenKey> keys = PutKeys(*c.client, "http/", 3, 5000, 7);
    // The standby learns the leader from etcd at its first campaign, once its own lease is
    // granted: it may still be starting when the leader already serves.
    const auto until = Steady::now() + 10s;
    while (Get(standby->metrics_port, "/leader").body.find("\"present\":true") ==
               std::string::npos &&
           Steady::now() < until) {
        std::this_thread::sleep_for(50ms);
    }

    // The leader: Mooncake's formats, over its metadata.
    Answer segs = Get(leader->metrics_port, "/get_all_segments");
    EXPECT_EQ(segs.status, 200);
    EXPECT_EQ(segs.body, node.name + "\n");
    Answer seg = Get(leader->metrics_port, "/query_segment?segment=" + node.name);
    EXPECT_EQ(seg.status, 200);
    EXPECT_NE(seg.body.find("Capacity(bytes) : 4194304"), std::string::npos) << seg.body;
    Answer all = Get(leader->metrics_port, "/get_all_keys");
    EXPECT_EQ(all.status, 200);
    EXPECT_NE(all.body.find(keys[0].key + "\n"), std::string::npos) << all.body;
    Answer key = Get(leader->metrics_port, "/query_key?key=" + keys[0].key);
    EXPECT_EQ(key.status, 200);
    EXPECT_EQ(key.body, "{\"tier\":\"MEMORY\",\"node\":\"" + node.name + "\",\"size\":5000}\n");
    EXPECT_EQ(Get(leader->metrics_port, "/query_key?key=http/none").status, 404);
    Answer batch =
        Get(leader->metrics_port, "/batch_query_keys?keys=" + keys[0].key + ",http/none");
    EXPECT_EQ(batch.status, 200);
    EXPECT_EQ(batch.body, "{\"success\":true,\"data\":{\"" + keys[0].key +
                              "\":{\"ok\":true,\"values\":[{\"tier\":\"MEMORY\",\"node\":\"" +
                              node.name +
                              "\",\"size\":5000}],\"local_disk_values\":[]},\"http/none\":{"
                              "\"ok\":false,\"error\":\"OBJECT_NOT_FOUND\"}}}");
    Answer detail = Get(leader->metrics_port, "/get_segments_detail");
    EXPECT_EQ(detail.status, 200);
    EXPECT_EQ(detail.body.rfind(
                  "{\"total_segments\":1,\"segments\":[{\"segment_name\":\"" + node.name + "\"", 0),
              0u)
        << detail.body;
    EXPECT_EQ(Get(leader->metrics_port, "/ha_status").body, "serving\n");
    EXPECT_EQ(Get(leader->metrics_port, "/role").body, "leader\n");
    EXPECT_EQ(Get(leader->metrics_port, "/health").body,
              "{\"status\":\"ok\",\"role\":\"leader\",\"ha_state\":\"serving\","
              "\"service_ready\":true,\"leader_address\":\"" +
                  leader->address + "\"}");
    EXPECT_EQ(Get(leader->metrics_port, "/leader").body,
              "{\"present\":true,\"leader_address\":\"" + leader->address + "\"}");
    Answer summary = Get(leader->metrics_port, "/metrics/summary");
    EXPECT_EQ(summary.status, 200);
    EXPECT_NE(summary.body.find("role=leader, leader=" + leader->address + ", serving=true"),
              std::string::npos)
        << summary.body;
    EXPECT_NE(summary.body.find("segments=1, "), std::string::npos) << summary.body;

    // The standby: alive, knows the leader, and answers no cluster endpoint from its own
    // (empty) metadata.
    EXPECT_EQ(Get(standby->metrics_port, "/health").body,
              "{\"status\":\"ok\",\"role\":\"standby\",\"ha_state\":\"standby\","
              "\"service_ready\":false,\"leader_address\":\"" +
                  leader->address + "\"}");
    EXPECT_EQ(Get(standby->metrics_port, "/role").body, "standby\n");
    EXPECT_EQ(Get(standby->metrics_port, "/ha_status").body, "standby\n");
    EXPECT_EQ(Get(standby->metrics_port, "/leader").body,
              "{\"present\":true,\"leader_address\":\"" + leader->address + "\"}");
    for (const char* path :
         {"/get_all_segments", "/get_all_keys", "/query_key?key=http/0", "/query_segment?segment=x",
          "/batch_query_keys?keys=http/0", "/get_segments_detail",
          "/api/v1/segments/status?segment=x"}) {
        Answer a = Get(standby->metrics_port, path);
        EXPECT_EQ(a.status, 503) << path << ": " << a.body;
        EXPECT_NE(a.body.find("ask the leader at " + leader->address), std::string::npos)
            << path << ": " << a.body;
        EXPECT_EQ(a.leader_header, leader->address) << path;
    }
    summary = Get(standby->metrics_port, "/metrics/summary");
    EXPECT_EQ(summary.status, 200);
    EXPECT_NE(summary.body.find("role=standby, leader=" + leader->address + ", serving=false"),
              std::string::npos)
        << summary.body;
    EXPECT_NE(Get(standby->metrics_port, "/metrics").body.find("# TYPE"), std::string::npos);

    // Failover: kill -9 of the leader. Until the node registered with the new leader, every
    // answer of the new leader's /get_all_segments is 503 (or none); never 200 and empty.
    const auto killed = Steady::now();
    leader->daemon->Kill();
    int refused = 0, empty = 0;
    Answer last;
    while (Steady::now() - killed < 30s) {
        last = Get(standby->metrics_port, "/get_all_segments");
        if (last.status == 200 && !last.body.empty()) break;
        if (last.status == 200) ++empty;
        if (last.status == 503) ++refused;
        std::this_thread::sleep_for(50ms);
    }
    const double ms = std::chrono::duration<double, std::milli>(Steady::now() - killed).count();
    ASSERT_EQ(last.status, 200) << last.body;
    EXPECT_EQ(last.body, node.name + "\n");
    EXPECT_EQ(empty, 0) << "the new leader listed no segment while its node re-registered";
    EXPECT_GT(refused, 0);
    std::printf(
        "failover: /get_all_segments non-empty on the new leader %.0f ms after kill -9 "
        "(%d answers 503 before)\n",
        ms, refused);
    EXPECT_EQ(Get(standby->metrics_port, "/role").body, "leader\n");
    EXPECT_EQ(Get(standby->metrics_port, "/ha_status").body, "serving\n");
    EXPECT_EQ(Get(standby->metrics_port, "/leader").body,
              "{\"present\":true,\"leader_address\":\"" + standby->address + "\"}");
    Answer after = Get(standby->metrics_port, "/query_key?key=" + keys[1].key);
    EXPECT_EQ(after.status, 200) << after.body;
    EXPECT_NE(after.body.find("\"node\":\"" + node.name + "\""), std::string::npos) << after.body;
    SettleAndCheck(*c.client, keys, "after the HTTP failover");
}

// Scenario: the leader has kept its node list in etcd (it does once a second) when it is
// killed; the new leader waits for those nodes (the RPC gate's warm-up), so its first 200 of
// /get_all_segments already lists every one of them, never a part.
TEST(HaHttp, NewLeaderListsAllItsPredecessorsNodesOnItsFirstAnswer) {
    HaCluster c(2);
    ASSERT_NE(c.client, nullptr);
    Cluster::NodeProcess& a = c.AddNode("4MiB", false);
    Cluster::NodeProcess& b = c.AddNode("4MiB", false);
    ASSERT_TRUE(c.WaitForNodes(2));
    std::this_thread::sleep_for(2500ms);  // the node list reaches etcd
    HaCluster::Master* leader = c.Leader();
    ASSERT_NE(leader, nullptr);
    HaCluster::Master* standby = Standby(c, leader);
    ASSERT_NE(standby, nullptr);
    Answer before = Get(leader->metrics_port, "/get_all_segments");
    ASSERT_EQ(before.status, 200);
    std::vector<std::string> want = {a.name, b.name};
    std::sort(want.begin(), want.end());
    auto lines = [](const std::string& body) {
        std::vector<std::string> out;
        size_t at = 0;
        while (at < body.size()) {
            size_t nl = body.find('\n', at);
            if (nl == std::string::npos) nl = body.size();
            out.push_back(body.substr(at, nl - at));
            at = nl + 1;
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    EXPECT_EQ(lines(before.body), want);

    const auto killed = Steady::now();
    leader->daemon->Kill();
    Answer first;
    int refused = 0;
    while (Steady::now() - killed < 30s) {
        first = Get(standby->metrics_port, "/get_all_segments");
        if (first.status == 200) break;
        if (first.status == 503) ++refused;
        std::this_thread::sleep_for(20ms);
    }
    ASSERT_EQ(first.status, 200) << first.body;
    EXPECT_EQ(lines(first.body), want) << "the new leader's first answer lists part of the nodes";
    EXPECT_GT(refused, 0);
    std::printf(
        "failover: first 200 of /get_all_segments on the new leader %.0f ms after "
        "kill -9, listing %zu of 2 nodes (%d answers 503 before)\n",
        std::chrono::duration<double, std::milli>(Steady::now() - killed).count(),
        lines(first.body).size(), refused);
}

}  // namespace
}  // namespace mooncake::test
