#include "core/base/metrics.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace mooncake {
namespace {

TEST(MetricsTest, CounterCountsWholeAndFractionalIncrements) {
    Counter counter;
    EXPECT_EQ(counter.Value(), 0);
    counter.Inc();
    counter.Inc(4096);
    counter.Inc(0.25);
    counter.Inc(0);
    EXPECT_EQ(counter.Value(), 4097.25);
}

TEST(MetricsTest, NegativeCounterIncrementAssertsInDebugAndIsIgnoredInRelease) {
    Counter counter;
    counter.Inc(2);
    EXPECT_DEBUG_DEATH(counter.Inc(-1), "counter increment must be >= 0");
    EXPECT_DEBUG_DEATH(counter.Inc(std::nan("")), "counter increment must be >= 0");
    EXPECT_EQ(counter.Value(), 2);
}

TEST(MetricsTest, GaugeSetsIncrementsAndDecrements) {
    Gauge gauge;
    EXPECT_EQ(gauge.Value(), 0);
    gauge.Set(10);
    gauge.Inc();
    gauge.Inc(2.5);
    gauge.Dec(4);
    EXPECT_EQ(gauge.Value(), 9.5);
    gauge.Dec(20);
    EXPECT_EQ(gauge.Value(), -10.5);
}

TEST(MetricsTest, HistogramBucketsAreCumulativeAndInclusive) {
    Histogram histogram({1, 2, 4});
    for (double v : {0.5, 1.0, 1.5, 2.0, 3.0, 100.0}) histogram.Observe(v);
    histogram.Observe(std::nan(""));  // lands in +Inf only, as the Go client does
    const Histogram::Snapshot snap = histogram.Snap();
    EXPECT_EQ(snap.bounds, (std::vector<double>{1, 2, 4}));
    EXPECT_EQ(snap.cumulative, (std::vector<uint64_t>{2, 4, 5, 7}));
    EXPECT_EQ(snap.count, 7u);
    EXPECT_TRUE(std::isnan(snap.sum));

    Histogram clean({1, 2, 4, std::numeric_limits<double>::infinity()});  // trailing +Inf dropped
    EXPECT_EQ(clean.bounds(), (std::vector<double>{1, 2, 4}));
    clean.Observe(0.5);
    clean.Observe(8);
    EXPECT_EQ(clean.Snap().sum, 8.5);
    EXPECT_EQ(clean.Snap().cumulative, (std::vector<uint64_t>{1, 1, 1, 2}));
}

TEST(MetricsTest, HistogramWithoutFiniteBoundsHasOnlyInf) {
    Histogram histogram({});
    histogram.Observe(3);
    EXPECT_EQ(histogram.Snap().cumulative, (std::vector<uint64_t>{1}));
    EXPECT_TRUE(std::isnan(histogram.Quantile(0.5)));
}

TEST(MetricsTest, UnsortedHistogramBoundsAssertInDebugAndAreSortedInRelease) {
    EXPECT_DEBUG_DEATH(
        {
            Histogram histogram({4, 1, 2, 2, std::nan("")});
            EXPECT_EQ(histogram.bounds(), (std::vector<double>{1, 2, 4}));
        },
        "strictly increasing");
}

TEST(MetricsTest, HistogramQuantileInterpolatesWithinBuckets) {
    Histogram histogram({1, 2, 4});
    EXPECT_TRUE(std::isnan(histogram.Quantile(0.5)));     // empty
    for (int i = 0; i < 10; ++i) histogram.Observe(0.5);  // bucket (0, 1]
    for (int i = 0; i < 10; ++i) histogram.Observe(3);    // bucket (2, 4]
    EXPECT_DOUBLE_EQ(histogram.Quantile(0.25), 0.5);      // halfway through (0, 1]
    EXPECT_DOUBLE_EQ(histogram.Quantile(0.5), 1.0);
    EXPECT_DOUBLE_EQ(histogram.Quantile(0.75), 3.0);  // halfway through (2, 4]
    EXPECT_DOUBLE_EQ(histogram.Quantile(1.0), 4.0);
    EXPECT_DOUBLE_EQ(histogram.Quantile(7.0), 4.0);  // clamped
    EXPECT_DOUBLE_EQ(histogram.Quantile(0.0), 0.0);  // lower edge of the first non-empty bucket

    Histogram tail({1, 2});
    tail.Observe(1.5);
    tail.Observe(50);
    EXPECT_DOUBLE_EQ(tail.Quantile(0.0), 1.0);   // (0, 1] is empty: starts at (1, 2]
    EXPECT_DOUBLE_EQ(tail.Quantile(0.99), 2.0);  // in +Inf: largest finite bound
}

TEST(MetricsTest, LatencyBucketsSpan50MicrosecondsTo10Seconds) {
    const std::vector<double> bounds = LatencyBucketsSeconds();
    ASSERT_FALSE(bounds.empty());
    EXPECT_DOUBLE_EQ(bounds.front(), 50e-6);
    EXPECT_DOUBLE_EQ(bounds.back(), 10.0);
    for (size_t i = 1; i < bounds.size(); ++i) EXPECT_LT(bounds[i - 1], bounds[i]);
    EXPECT_EQ(Histogram(bounds).bounds(), bounds);  // valid as given
}

TEST(MetricsTest, SameNameAndLabelsReturnTheSameObject) {
    MetricsRegistry registry;
    Counter& a = registry.GetCounter("ops_total", "Ops.", {{"op", "get"}, {"tier", "MEMORY"}});
    Counter& b = registry.GetCounter("ops_total", "Ops.", {{"op", "get"}, {"tier", "MEMORY"}});
    Counter& reordered =
        registry.GetCounter("ops_total", "Other help.", {{"tier", "MEMORY"}, {"op", "get"}});
    EXPECT_EQ(&a, &b);
    EXPECT_EQ(&a, &reordered);
    EXPECT_EQ(&registry.GetGauge("depth", "Depth."), &registry.GetGauge("depth", "Depth."));
    Histogram& h1 = registry.GetHistogram("wait_seconds", "Wait.", {1, 2});
    Histogram& h2 = registry.GetHistogram("wait_seconds", "Wait.", {1, 2});
    EXPECT_EQ(&h1, &h2);
}

TEST(MetricsTest, LabelsMakeDistinctSeries) {
    MetricsRegistry registry;
    Counter& get = registry.GetCounter("ops_total", "Ops.", {{"op", "get"}});
    Counter& put = registry.GetCounter("ops_total", "Ops.", {{"op", "put"}});
    Counter& bare = registry.GetCounter("ops_total", "Ops.");
    EXPECT_NE(&get, &put);
    EXPECT_NE(&get, &bare);
    get.Inc(3);
    put.Inc(5);
    EXPECT_EQ(registry.Value("ops_total", {{"op", "get"}}), 3);
    EXPECT_EQ(registry.Value("ops_total", {{"op", "put"}}), 5);
    EXPECT_EQ(registry.Value("ops_total"), 0);
    EXPECT_EQ(registry.Value("ops_total", {{"op", "rm"}}), std::nullopt);
}

TEST(MetricsTest, ValueReadsCountersGaugesAndCallbacksOnly) {
    MetricsRegistry registry;
    registry.GetCounter("hits_total", "Hits.", {{"a", "1"}, {"b", "2"}}).Inc(7);
    registry.GetGauge("used_bytes", "Used.").Set(42);
    registry.AddCallbackGauge("queue_length", "Queue.", {}, [] { return 9.0; });
    registry.GetHistogram("lat_seconds", "Latency.", {1}).Observe(0.5);
    EXPECT_EQ(registry.Value("hits_total", {{"b", "2"}, {"a", "1"}}), 7);
    EXPECT_EQ(registry.Value("used_bytes"), 42);
    EXPECT_EQ(registry.Value("queue_length"), 9);
    EXPECT_EQ(registry.Value("lat_seconds"), std::nullopt);
    EXPECT_EQ(registry.Value("missing"), std::nullopt);
    EXPECT_EQ(registry.Value("mooncake_used_bytes"), std::nullopt);  // registered names only
}

TEST(MetricsTest, RendersExactText) {
    MetricsRegistry registry;
    registry.GetCounter("requests_total", "Requests served.", {{"op", "put"}}).Inc();
    registry.GetCounter("requests_total", "Requests served.", {{"op", "get"}}).Inc(3);
    registry.GetCounter("bytes_total", "Bytes moved.").Inc(0.5);
    registry.GetCounter("bytes_total", "Bytes moved.").Inc(68719476736.0);
    registry.GetGauge("in_flight", "Tasks in flight.\nSecond line: C:\\tmp \"quoted\"").Set(2);
    registry.GetGauge("escaped", "Escaping.", {{"z", "last"}, {"key", "a\"b\\c\nd"}}).Set(-1.5);
    registry.AddCallbackGauge("dram_used_bytes", "DRAM used.", {{"node", "n1"}},
                              [] { return 1048576.0; });
    Histogram& latency =
        registry.GetHistogram("latency_seconds", "Latency.", {0.25, 0.5, 1}, {{"tier", "MEMORY"}});
    for (double v : {0.125, 0.25, 0.75, 4.0}) latency.Observe(v);
    registry.GetHistogram("latency_seconds", "Latency.", {0.25, 0.5, 1}, {{"tier", "LOCAL_DISK"}});

    EXPECT_EQ(registry.RenderPrometheus(),
              "# HELP mooncake_bytes_total Bytes moved.\n"
              "# TYPE mooncake_bytes_total counter\n"
              "mooncake_bytes_total 68719476736.5\n"
              "# HELP mooncake_dram_used_bytes DRAM used.\n"
              "# TYPE mooncake_dram_used_bytes gauge\n"
              "mooncake_dram_used_bytes{node=\"n1\"} 1048576\n"
              "# HELP mooncake_escaped Escaping.\n"
              "# TYPE mooncake_escaped gauge\n"
              "mooncake_escaped{key=\"a\\\"b\\\\c\\nd\",z=\"last\"} -1.5\n"
              "# HELP mooncake_in_flight Tasks in flight.\\nSecond line: C:\\\\tmp \"quoted\"\n"
              "# TYPE mooncake_in_flight gauge\n"
              "mooncake_in_flight 2\n"
              "# HELP mooncake_latency_seconds Latency.\n"
              "# TYPE mooncake_latency_seconds histogram\n"
              "mooncake_latency_seconds_bucket{tier=\"LOCAL_DISK\",le=\"0.25\"} 0\n"
              "mooncake_latency_seconds_bucket{tier=\"LOCAL_DISK\",le=\"0.5\"} 0\n"
              "mooncake_latency_seconds_bucket{tier=\"LOCAL_DISK\",le=\"1\"} 0\n"
              "mooncake_latency_seconds_bucket{tier=\"LOCAL_DISK\",le=\"+Inf\"} 0\n"
              "mooncake_latency_seconds_sum{tier=\"LOCAL_DISK\"} 0\n"
              "mooncake_latency_seconds_count{tier=\"LOCAL_DISK\"} 0\n"
              "mooncake_latency_seconds_bucket{tier=\"MEMORY\",le=\"0.25\"} 2\n"
              "mooncake_latency_seconds_bucket{tier=\"MEMORY\",le=\"0.5\"} 2\n"
              "mooncake_latency_seconds_bucket{tier=\"MEMORY\",le=\"1\"} 3\n"
              "mooncake_latency_seconds_bucket{tier=\"MEMORY\",le=\"+Inf\"} 4\n"
              "mooncake_latency_seconds_sum{tier=\"MEMORY\"} 5.125\n"
              "mooncake_latency_seconds_count{tier=\"MEMORY\"} 4\n"
              "# HELP mooncake_requests_total Requests served.\n"
              "# TYPE mooncake_requests_total counter\n"
              "mooncake_requests_total{op=\"get\"} 3\n"
              "mooncake_requests_total{op=\"put\"} 1\n");

    const std::string bare = registry.RenderPrometheus("");
    EXPECT_NE(bare.find("\nrequests_total{op=\"get\"} 3\n"), std::string::npos) << bare;
    EXPECT_EQ(bare.find("mooncake_"), std::string::npos);
}

TEST(MetricsTest, RendersSpecialAndExtremeValues) {
    MetricsRegistry registry;
    const double inf = std::numeric_limits<double>::infinity();
    registry.GetGauge("a", "").Set(std::nan(""));
    registry.GetGauge("b", "").Set(inf);
    registry.GetGauge("c", "").Set(-inf);
    registry.GetGauge("d", "").Set(0.0001);
    registry.GetGauge("e", "").Set(0.00005);
    registry.GetGauge("f", "").Set(1e21);
    registry.GetGauge("g", "").Set(-0.0);
    registry.GetGauge("h", "").Set(0.1);
    const std::string bad_utf8 = std::string("bad\xff") + "byte";
    registry.GetGauge("i", "", {{"v", bad_utf8}}).Set(1);
    // Empty help: no HELP line. Invalid UTF-8 becomes U+FFFD.
    const std::string replaced = std::string("bad\xEF\xBF\xBD") + "byte";
    EXPECT_EQ(registry.RenderPrometheus("x_"),
              "# TYPE x_a gauge\nx_a NaN\n"
              "# TYPE x_b gauge\nx_b +Inf\n"
              "# TYPE x_c gauge\nx_c -Inf\n"
              "# TYPE x_d gauge\nx_d 0.0001\n"
              "# TYPE x_e gauge\nx_e 5e-05\n"
              "# TYPE x_f gauge\nx_f 1e+21\n"
              "# TYPE x_g gauge\nx_g 0\n"
              "# TYPE x_h gauge\nx_h 0.1\n"
              "# TYPE x_i gauge\nx_i{v=\"" +
                  replaced + "\"} 1\n");
}

TEST(MetricsTest, CallbackGaugesAreReadAtRenderTimeReplacedAndRemoved) {
    MetricsRegistry registry;
    double owned = 1;
    registry.AddCallbackGauge("owned", "Owned elsewhere.", {{"k", "v"}}, [&] { return owned; });
    EXPECT_NE(registry.RenderPrometheus().find("mooncake_owned{k=\"v\"} 1\n"), std::string::npos);
    owned = 5;
    EXPECT_EQ(registry.Value("owned", {{"k", "v"}}), 5);
    registry.AddCallbackGauge("owned", "Owned elsewhere.", {{"k", "v"}}, [] { return 7.0; });
    EXPECT_EQ(registry.Value("owned", {{"k", "v"}}), 7);
    registry.AddCallbackGauge("throws", "Throws.", {},
                              []() -> double { throw std::runtime_error("boom"); });
    EXPECT_NE(registry.RenderPrometheus().find("mooncake_throws NaN\n"), std::string::npos);

    EXPECT_TRUE(registry.RemoveCallbackGauge("owned", {{"k", "v"}}));
    EXPECT_FALSE(registry.RemoveCallbackGauge("owned", {{"k", "v"}}));
    EXPECT_EQ(registry.Value("owned", {{"k", "v"}}), std::nullopt);
    EXPECT_EQ(registry.RenderPrometheus().find("owned"), std::string::npos);  // empty family
}

TEST(MetricsTest, InvalidNamesAssertInDebugAndAreDetachedInRelease) {
    MetricsRegistry registry;
    EXPECT_DEBUG_DEATH(registry.GetCounter("bad-name_total", "x").Inc(), "invalid metric name");
    EXPECT_DEBUG_DEATH(registry.GetGauge("9lives", "x").Set(1), "invalid metric name");
    EXPECT_DEBUG_DEATH(registry.GetGauge("ok", "x", {{"bad label", "v"}}).Set(1), "label name");
    EXPECT_DEBUG_DEATH(registry.GetGauge("ok", "x", {{"__reserved", "v"}}).Set(1), "label name");
    EXPECT_DEBUG_DEATH(registry.GetGauge("ok", "x", {{"a", "1"}, {"a", "2"}}).Set(1), "label name");
    EXPECT_DEBUG_DEATH(registry.GetHistogram("h_seconds", "x", {1}, {{"le", "1"}}).Observe(1),
                       "label name");
    // Nothing of the above is rendered: the exposition stays parseable.
    EXPECT_EQ(registry.RenderPrometheus(), "");
    EXPECT_TRUE(IsValidMetricName("a:b_c9"));
    EXPECT_TRUE(IsValidMetricName("_x"));
    EXPECT_FALSE(IsValidMetricName(""));
    EXPECT_FALSE(IsValidMetricName("a.b"));
    EXPECT_TRUE(IsValidLabelName("tier"));
    EXPECT_FALSE(IsValidLabelName("a:b"));
    EXPECT_FALSE(IsValidLabelName("__name__"));
#ifdef NDEBUG
    Counter& detached = registry.GetCounter("bad-name_total", "x");
    detached.Inc(2);
    EXPECT_EQ(detached.Value(), 2);  // works, but is nowhere to be seen
    EXPECT_EQ(registry.RenderPrometheus(), "");
#endif
}

TEST(MetricsTest, ConflictingRegistrationsAssertInDebugAndAreDetachedInRelease) {
    MetricsRegistry registry;
    registry.GetCounter("events_total", "Events.").Inc();
    registry.GetHistogram("wait_seconds", "Wait.", {1});
    registry.AddCallbackGauge("depth", "Depth.", {}, [] { return 1.0; });
    EXPECT_DEBUG_DEATH(registry.GetGauge("events_total", "x").Set(9), "another type");
    EXPECT_DEBUG_DEATH(registry.GetCounter("wait_seconds_count", "x").Inc(), "clashes");
    EXPECT_DEBUG_DEATH(registry.GetGauge("depth", "x").Set(9), "callback gauge");
    EXPECT_DEBUG_DEATH(registry.GetHistogram("wait_seconds", "Wait.", {2}), "other bounds");
    EXPECT_EQ(registry.Value("events_total"), 1);
    EXPECT_EQ(registry.Value("depth"), 1);
    registry.GetCounter("jobs_count", "Jobs.");
    EXPECT_DEBUG_DEATH(registry.GetHistogram("jobs", "x", {1}), "clashes");
    const std::string text = registry.RenderPrometheus();
    EXPECT_EQ(text.find("# TYPE mooncake_wait_seconds_count"), std::string::npos) << text;
    EXPECT_EQ(text.find("# TYPE mooncake_jobs "), std::string::npos) << text;
    EXPECT_NE(text.find("\nmooncake_events_total 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\nmooncake_wait_seconds_bucket{le=\"1\"} 0\n"), std::string::npos) << text;
}

TEST(MetricsTest, ConcurrentUpdatesAreExact) {
    MetricsRegistry registry;
    Counter& whole = registry.GetCounter("whole_total", "Whole.");
    Counter& halves = registry.GetCounter("halves_total", "Halves.");
    Gauge& gauge = registry.GetGauge("level", "Level.");
    Histogram& histogram = registry.GetHistogram("obs_seconds", "Obs.", {0.5, 1.5});
    constexpr int kThreads = 8;
    constexpr int kPerThread = 20000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kPerThread; ++i) {
                whole.Inc();
                halves.Inc(0.5);
                gauge.Inc(2);
                gauge.Dec();
                histogram.Observe(t % 2);
            }
        });
    }
    std::thread renderer([&] {
        for (int i = 0; i < 20; ++i) EXPECT_FALSE(registry.RenderPrometheus().empty());
    });
    for (std::thread& thread : threads) thread.join();
    renderer.join();
    constexpr double kTotal = double{kThreads} * kPerThread;
    EXPECT_EQ(whole.Value(), kTotal);
    EXPECT_EQ(halves.Value(), kTotal / 2);
    EXPECT_EQ(gauge.Value(), kTotal);
    const Histogram::Snapshot snap = histogram.Snap();
    EXPECT_EQ(snap.count, static_cast<uint64_t>(kTotal));
    EXPECT_EQ(snap.cumulative, (std::vector<uint64_t>{static_cast<uint64_t>(kTotal / 2),
                                                      static_cast<uint64_t>(kTotal),
                                                      static_cast<uint64_t>(kTotal)}));
    EXPECT_EQ(snap.sum, kTotal / 2);
}

TEST(MetricsTest, ConcurrentRegistrationReturnsOneObjectPerSeries) {
    MetricsRegistry registry;
    constexpr int kThreads = 8;
    constexpr int kSeries = 200;
    std::vector<std::vector<Counter*>> seen(kThreads, std::vector<Counter*>(kSeries));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kSeries; ++i) {
                Counter& counter =
                    registry.GetCounter("series_total", "Series.", {{"id", std::to_string(i)}});
                counter.Inc();
                seen[t][i] = &counter;
                if (i % 50 == 0) {
                    registry.AddCallbackGauge("cb", "Callback.", {{"t", std::to_string(t)}},
                                              [i] { return double(i); });
                    (void)registry.RenderPrometheus();
                }
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    for (int i = 0; i < kSeries; ++i) {
        for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t][i], seen[0][i]);
        EXPECT_EQ(registry.Value("series_total", {{"id", std::to_string(i)}}), kThreads);
    }
}

// The exposition of a registry with every kind of metric must pass Prometheus' own checker
// (parse and lint). promtool comes from Debian's `prometheus` package.
TEST(MetricsTest, ExpositionPassesPromtoolCheckMetrics) {
    if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
    }
    MetricsRegistry registry;
    registry.GetCounter("promotion_queued_total", "Promotion tasks queued.").Inc(3);
    for (const char* reason :
         {"admission_gated", "watermark_gated", "queue_full", "alloc_failed", "io_failed"}) {
        registry.GetCounter("promotion_failed_total", "Promotion attempts refused or failed.",
                            {{"reason", reason}});
    }
    registry.GetCounter("read_bytes_total", "Bytes read.", {{"tier", "LOCAL_DISK"}}).Inc(0.5);
    registry.GetGauge("promotion_in_flight", "Promotion tasks in flight.").Set(2);
    registry
        .GetGauge("last_error_info", "Help with \\ backslash\nand newline.",
                  {{"message", "quote \" backslash \\ newline \n done"}, {"node", "n\xff"}})
        .Set(1);
    registry.AddCallbackGauge("dram_used_bytes", "DRAM in use.", {{"node", "127.0.0.1:50051"}},
                              [] { return 12345.0; });
    Histogram& latency = registry.GetHistogram("get_latency_seconds", "Get latency.",
                                               LatencyBucketsSeconds(), {{"tier", "MEMORY"}});
    for (double v : {0.00001, 0.0003, 0.002, 0.7, 20.0}) latency.Observe(v);
    registry.GetHistogram("get_latency_seconds", "Get latency.", LatencyBucketsSeconds(),
                          {{"tier", "LOCAL_DISK"}});
    registry.GetHistogram("plain_seconds", "No labels.", {1}).Observe(0.5);
    const std::string exposition = registry.RenderPrometheus();

    const std::string base = ::testing::TempDir() + "metrics_test_" + std::to_string(::getpid());
    const std::string input = base + ".prom";
    const std::string output = base + ".out";
    {
        std::ofstream file(input, std::ios::binary);
        file << exposition;
        ASSERT_TRUE(file.good()) << input;
    }
    const std::string command = "promtool check metrics < '" + input + "' > '" + output + "' 2>&1";
    const int status = std::system(command.c_str());
    std::stringstream promtool_said;
    promtool_said << std::ifstream(output).rdbuf();
    std::remove(input.c_str());
    std::remove(output.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << command;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "promtool: " << promtool_said.str() << "\nexposition:\n"
                                      << exposition;
}

}  // namespace
}  // namespace mooncake
