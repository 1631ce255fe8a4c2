// Standalone daemon: the whole external API against one process.
#include <httplib.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace mooncake::test {
namespace {

class StandaloneTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        // 256 MiB of DRAM (lazily committed) so the 64 MiB value fits with room to spare.
        server_ = new Standalone({"--dram_size=256MiB"});
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        ASSERT_NE(server_->client, nullptr) << "standalone daemon did not come up";
    }
    Client& client() { return *server_->client; }
    static Standalone* server_;
};
Standalone* StandaloneTest::server_ = nullptr;

TEST_F(StandaloneTest, ConnectReportsRole) {
    EXPECT_EQ(client().server_role(), "standalone");
    EXPECT_NE(client().client_id(), 0);
}

TEST_F(StandaloneTest, PutGetRemoveRoundTripFromOneByteTo64MiB) {
    const size_t sizes[] = {1, 2, 100, 4095, 4096, 4097, 65536, (1 << 20) + 3, 16 << 20, 64 << 20};
    for (size_t size : sizes) {
        std::string key = "rt/" + std::to_string(size);
        std::string value = Pattern(size, size);
        Status put = client().Put(key, value);
        ASSERT_TRUE(put.ok()) << size << ": " << put.ToString();
        auto got = client().Get(key);
        ASSERT_TRUE(got.ok()) << size << ": " << got.status().ToString();
        ASSERT_EQ(got->size(), size);
        ASSERT_TRUE(*got == value) << "bytes differ at size " << size;
        ASSERT_TRUE(client().Remove(key, /*force=*/true).ok()) << size;
        auto gone = client().Get(key);
        EXPECT_TRUE(gone.status().Is(StatusCode::kNotFound)) << gone.status().ToString();
    }
}

TEST_F(StandaloneTest, GetIntoNeedsRoomAndReturnsSize) {
    std::string value = Pattern(7, 10000);
    ASSERT_TRUE(client().Put("into", value).ok());
    std::vector<std::byte> small(100);
    auto r = client().GetInto("into", small);
    EXPECT_TRUE(r.status().Is(StatusCode::kInvalidArgument));
    std::vector<std::byte> big(20000);
    auto ok = client().GetInto("into", big);
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(*ok, value.size());
    EXPECT_EQ(std::memcmp(big.data(), value.data(), value.size()), 0);
}

TEST_F(StandaloneTest, PutOfExistingKeyIsRefusedAndRemoveFreesIt) {
    ASSERT_TRUE(client().Put("dup", "first").ok());
    EXPECT_TRUE(client().Put("dup", "second").Is(StatusCode::kAlreadyExists));
    ASSERT_TRUE(client().Remove("dup", true).ok());
    ASSERT_TRUE(client().Put("dup", "second").ok());
    EXPECT_EQ(*client().Get("dup"), "second");
}

TEST_F(StandaloneTest, BadKeysAndEmptyValuesAreRefused) {
    EXPECT_TRUE(client().Put("", "x").Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(client().Put(std::string("a\0b", 3), "x").Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(client().Put(std::string(4097, 'k'), "x").Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(client().Put("empty", "").Is(StatusCode::kInvalidArgument));
    EXPECT_TRUE(client().Get("never-put").status().Is(StatusCode::kNotFound));
    // Binary (non-UTF-8) keys of the full length are fine.
    std::string key(4096, '\xff');
    ASSERT_TRUE(client().Put(key, "bin").ok());
    EXPECT_EQ(*client().Get(key), "bin");
}

TEST_F(StandaloneTest, InspectionIsNotAnAccess) {
    ASSERT_TRUE(client().Put("quiet", "value").ok());
    auto before = client().Stat("quiet");
    ASSERT_TRUE(before.ok());
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(client().Stat("quiet").ok());
        ASSERT_TRUE(client().Exists("quiet").ok());
        ASSERT_TRUE(client().List({}).ok());
    }
    auto after = client().Stat("quiet");
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->object.recency, before->object.recency);
    EXPECT_EQ(after->object.lease_expiry.count(), 0);  // no lease granted by inspection
    ASSERT_TRUE(client().Get("quiet").ok());
    auto read = client().Stat("quiet");
    EXPECT_GT(read->object.recency, before->object.recency);
    EXPECT_GT(read->object.lease_expiry.count(), 0);
}

TEST_F(StandaloneTest, ListPagesThroughKeysInOrder) {
    for (int i = 0; i < 25; ++i) {
        char key[32];
        std::snprintf(key, sizeof key, "page/%03d", i);
        ASSERT_TRUE(client().Put(key, "v").ok());
    }
    ListOptions options;
    options.prefix = "page/";
    options.limit = 10;
    auto first = client().List(options);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->objects.size(), 10u);
    EXPECT_TRUE(first->more);
    auto all = client().ListAll(options);
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 25u);
    for (int i = 0; i < 25; ++i) {
        char key[32];
        std::snprintf(key, sizeof key, "page/%03d", i);
        EXPECT_EQ((*all)[i].object.key, key);
        EXPECT_TRUE(HasTier((*all)[i], Tier::kMemory));
    }
    auto removed = client().RemoveByPrefix("page/", true);
    ASSERT_TRUE(removed.ok());
    EXPECT_EQ(removed->removed, 25u);
}

TEST_F(StandaloneTest, BatchCallsReportPerKey) {
    std::vector<std::string> values = {Pattern(1, 10), Pattern(2, 5000), Pattern(3, 70000)};
    std::vector<std::pair<std::string, std::span<const std::byte>>> items;
    for (size_t i = 0; i < values.size(); ++i) {
        items.emplace_back("batch/" + std::to_string(i), std::as_bytes(std::span(values[i])));
    }
    items.emplace_back("", std::as_bytes(std::span(values[0])));  // a bad key among good ones
    auto put = client().BatchPut(items);
    ASSERT_EQ(put.size(), 4u);
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(put[i].ok()) << put[i].ToString();
    EXPECT_TRUE(put[3].Is(StatusCode::kInvalidArgument));
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(*client().Get(items[i].first), values[i]);
    std::vector<std::string> to_get = {"batch/2", "missing", "batch/0"};
    auto got = client().BatchGet(to_get);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(*got[0], values[2]);
    EXPECT_TRUE(got[1].status().Is(StatusCode::kNotFound));
    EXPECT_EQ(*got[2], values[0]);
    std::vector<std::string> keys = {"batch/0", "batch/1", "nope"};
    auto exists = client().BatchExists(keys);
    EXPECT_TRUE(*exists[0]);
    EXPECT_TRUE(*exists[1]);
    EXPECT_FALSE(*exists[2]);
    auto removed = client().BatchRemove(keys, true);
    EXPECT_TRUE(removed[0].ok());
    EXPECT_TRUE(removed[1].ok());
    EXPECT_TRUE(removed[2].Is(StatusCode::kNotFound));
}

TEST_F(StandaloneTest, TuneGetAndSetGoThroughTheKnobTable) {
    auto table = client().TuneGet();
    ASSERT_TRUE(table.ok());
    bool found = false;
    for (const KnobInfo& k : *table) {
        if (k.name == "promotion_admission_threshold") {
            found = true;
            EXPECT_EQ(k.default_value, "2");
            EXPECT_EQ(k.range, "0..255");
            EXPECT_TRUE(k.tunable);
        }
    }
    EXPECT_TRUE(found);
    auto set = client().TuneSet({{"promotion_admission_threshold", "3"}});
    ASSERT_TRUE(set.ok()) << set.status().ToString();
    auto bad = client().TuneSet({{"promotion_admission_threshold", "256"}});
    EXPECT_TRUE(bad.status().Is(StatusCode::kInvalidArgument));
    EXPECT_NE(bad.status().message().find("0..255"), std::string::npos);
    auto startup_only = client().TuneSet({{"dram_size", "1GiB"}});
    EXPECT_TRUE(startup_only.status().Is(StatusCode::kInvalidArgument));
    auto unknown = client().TuneSet({{"no_such_knob", "1"}});
    EXPECT_TRUE(unknown.status().Is(StatusCode::kInvalidArgument));
    // All or nothing: a bad second assignment leaves the first unapplied.
    auto mixed = client().TuneSet({{"promotion_admission_threshold", "4"}, {"eviction_ratio", "7"}});
    EXPECT_FALSE(mixed.ok());
    auto now = client().TuneGet();
    ASSERT_TRUE(now.ok());
    for (const KnobInfo& k : *now) {
        if (k.name == "promotion_admission_threshold") {
            EXPECT_EQ(k.value, "3");
        }
    }
    ASSERT_TRUE(client().TuneSet({{"promotion_admission_threshold", "2"}}).ok());
}

TEST_F(StandaloneTest, MetricsOverRpcAndHttpAgreeAndParse) {
    // The per-node gauges appear at the master's first directory refresh after the node joins.
    Result<std::string> text = client().MetricsText();
    WaitFor([&] {
        text = client().MetricsText();
        return text.ok() && text->find("mooncake_node_dram_capacity_bytes") != std::string::npos;
    });
    ASSERT_TRUE(text.ok());
    for (const char* name :
         {"mooncake_promotion_attempts_total", "mooncake_promotion_queued_total",
          "mooncake_promotion_completed_total", "mooncake_promotion_in_flight",
          "mooncake_promotion_latency_seconds_bucket", "mooncake_rpc_request_seconds_bucket",
          "mooncake_data_reads_total", "mooncake_local_segment_capacity_bytes",
          "mooncake_node_dram_capacity_bytes"}) {
        EXPECT_NE(text->find(name), std::string::npos) << name;
    }
    for (const char* reason : {"admission_gated", "watermark_gated", "queue_full",
                               "alloc_failed", "io_failed"}) {
        EXPECT_NE(text->find(std::string("promotion_failed_total{reason=\"") + reason),
                  std::string::npos)
            << reason;
    }
    httplib::Client http("127.0.0.1", server_->metrics_port);
    auto res = http.Get("/metrics");
    ASSERT_TRUE(res) << "no answer on the metrics port";
    EXPECT_EQ(res->status, 200);
    EXPECT_NE(res->body.find("mooncake_promotion_queued_total"), std::string::npos);
    EXPECT_EQ(http.Get("/nope")->status, 404);

    // promtool (Debian package prometheus) must accept the exposition.
    if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "promtool not installed";
    }
    std::string path = server_->dir.Sub("metrics.txt");
    std::ofstream(path) << res->body;
    std::string cmd = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream out(path + ".out");
    std::string report((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
    // Lint warnings (naming advice) print but exit 0 only when clean; fail only on errors.
    EXPECT_EQ(report.find("error"), std::string::npos) << report;
    (void)rc;
}

TEST_F(StandaloneTest, ValueOverMaxValueSizeIsRefused) {
    ASSERT_TRUE(client().TuneSet({{"max_value_size", "1MiB"}}).ok());
    std::string big((1 << 20) + 1, 'x');
    Status st = client().Put("too-big", big);
    EXPECT_TRUE(st.Is(StatusCode::kInvalidArgument)) << st.ToString();
    ASSERT_TRUE(client().TuneSet({{"max_value_size", "1GiB"}}).ok());
    EXPECT_TRUE(client().Put("too-big", big).ok());
}

TEST_F(StandaloneTest, ConcurrentClientsShareOneDaemon) {
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) {
                std::string key = "conc/" + std::to_string(t) + "/" + std::to_string(i);
                std::string value = Pattern(t * 1000 + i, 1000 + i * 37);
                if (!client().Put(key, value).ok()) ++failures;
                auto got = client().Get(key);
                if (!got.ok() || *got != value) ++failures;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST_F(StandaloneTest, SigtermStopsCleanly) {
    // Runs last in this suite: a second daemon of our own, stopped with SIGTERM.
    Standalone other({"--dram_size=8MiB"});
    ASSERT_NE(other.client, nullptr);
    ASSERT_TRUE(other.client->Put("k", "v").ok());
    EXPECT_EQ(other.daemon->Stop(SIGTERM), 0);
    auto after = other.client->Get("k");
    EXPECT_TRUE(after.status().Is(StatusCode::kUnavailable)) << after.status().ToString();
}

// A SIGTERM while the daemon is still starting (a supervisor giving up on it, a test restarting
// it) ends it: each server it starts must stop even if asked before its accept loop ran. (The
// metrics server did not: the daemon hung until SIGKILL.)
TEST(StandaloneStartupTest, SigtermWhileStartingStopsCleanly) {
    TempDir dir;
    auto args_for = [](const std::string& role) {
        std::vector<std::string> args = {"--role=" + role,
                                         "--listen=127.0.0.1:" + std::to_string(FreePort()),
                                         "--metrics_port=" + std::to_string(FreePort())};
        if (role == "standalone") {
            args.push_back("--data_port=" + std::to_string(FreePort()));
            args.push_back("--dram_size=8MiB");
        }
        return args;
    };
    for (const std::string role : {"standalone", "master"}) {
        for (int delay_ms : {0, 2, 5, 10, 15, 20, 30, 40, 60}) {
            Daemon d(role, args_for(role), dir);
            ASSERT_TRUE(d.Start());
            std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
            // 0: it shut down; 128 + SIGTERM: the signal came before mooncaked blocked it (its
            // first steps), with nothing to clean up yet. Not 128 + SIGKILL: it hung, and the
            // harness killed it after 10 s.
            const int rc = d.Stop(SIGTERM);
            EXPECT_TRUE(rc == 0 || rc == 128 + SIGTERM)
                << role << ": SIGTERM " << delay_ms << " ms after the start: exit status " << rc;
        }
    }
}

}  // namespace
}  // namespace mooncake::test
