// Metrics: counters, gauges and histograms kept in a registry that renders the Prometheus text
// exposition format 0.0.4 (what `/metrics` serves and `mooncakectl metrics` prints).
//
// Look a metric up once, at setup, and keep the reference; the hot path then touches only
// atomics:
//
//   Counter& queued = registry.GetCounter("promotion_queued_total", "Promotion tasks queued.");
//   ...
//   queued.Inc();
//
// Thread-safety: every method here may be called from any thread. Counter, Gauge and
// Histogram updates are lock-free. Registry lookups, Value() and rendering take a mutex.
//
// Names. Metric names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*
// and must not start with "__" (reserved by Prometheus); "le" is reserved on histograms; a
// label name may appear once per series. Names are registered without the render prefix
// ("promotion_queued_total", rendered "mooncake_promotion_queued_total"). A counter name is
// rendered as given: end it in "_total", nothing is appended.
//
// Misuse is a programming error, reported the same way for: an invalid metric or label name,
// a name already registered with another type, a name that clashes with a histogram's
// _bucket/_sum/_count series, a plain gauge and a callback gauge on the same series. Debug
// builds print the reason and abort (an assert). Release builds (NDEBUG) keep going: the
// call returns a working metric that is *detached* -- never rendered, never found by
// Value() -- so one bad name cannot make the whole exposition unparseable. The help text of a
// family is the one given first; later differing help is ignored.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/mutex.h"
#include "core/base/thread_stripe.h"

namespace mooncake {

// Label (name, value) pairs. A series is identified by the set: {a,b} and {b,a} are the same
// series, rendered with names sorted. Values may be any text; invalid UTF-8 is rendered as
// U+FFFD, so a stray byte cannot break the scrape.
using Labels = std::vector<std::pair<std::string, std::string>>;

bool IsValidMetricName(std::string_view name);  // [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidLabelName(std::string_view name);   // [a-zA-Z_][a-zA-Z0-9_]*, not "__..."

// Monotonic. Whole-number increments (the usual Inc() and byte counts) are one atomic integer
// add on the calling thread's stripe (core/base/thread_stripe.h: a counter every Get bumps would
// otherwise bounce one cache line between cores); fractional ones go through a CAS loop on a
// double. Value() adds the stripes up. Exact up to 2^64 whole units.
class Counter {
public:
    Counter() = default;
    Counter(const Counter&) = delete;
    Counter& operator=(const Counter&) = delete;

    // Adds v. A negative or NaN v is a programming error: asserts in debug, ignored in release.
    void Inc(double v = 1) {
        if (v >= 0 && v < 0x1p53) {
            const auto whole = static_cast<uint64_t>(v);
            if (static_cast<double>(whole) == v) {
                stripes_[ThreadStripe()].whole.fetch_add(whole, std::memory_order_relaxed);
                return;
            }
        }
        IncSlow(v);
    }
    double Value() const;

private:
    void IncSlow(double v);

    struct alignas(64) Stripe {
        std::atomic<uint64_t> whole{0};
    };
    std::array<Stripe, kThreadStripes> stripes_;
    alignas(64) std::atomic<double> fraction_{0};
};

class alignas(64) Gauge {
public:
    Gauge() = default;
    Gauge(const Gauge&) = delete;
    Gauge& operator=(const Gauge&) = delete;

    void Set(double v) { value_.store(v, std::memory_order_relaxed); }
    void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
    void Dec(double v = 1) { value_.fetch_sub(v, std::memory_order_relaxed); }
    double Value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0};
};

// Bucket i counts observations v <= bounds[i]; a last +Inf bucket counts the rest (and NaN).
class Histogram {
public:
    // `bounds`: finite upper bounds, strictly increasing. A trailing +Inf is accepted and
    // dropped (the +Inf bucket is always there). Unsorted, duplicate or NaN bounds are a
    // programming error: assert in debug; release sorts, de-duplicates and drops NaN.
    explicit Histogram(std::vector<double> bounds);
    Histogram(const Histogram&) = delete;
    Histogram& operator=(const Histogram&) = delete;

    void Observe(double v);

    struct Snapshot {
        std::vector<double> bounds;        // finite upper bounds, as normalized
        std::vector<uint64_t> cumulative;  // bounds.size() + 1 entries; the last (+Inf) == count
        double sum = 0;
        uint64_t count = 0;

        // Estimated q-quantile (q clamped to [0, 1]) by linear interpolation inside the bucket
        // holding it, as PromQL's histogram_quantile does; the first bucket starts at 0 when
        // its bound is positive; q = 0 gives the lower edge of the first non-empty bucket. A
        // quantile in the +Inf bucket gives the largest finite bound. NaN when there are no
        // observations (or no finite bound to report).
        double Quantile(double q) const;
    };
    // Buckets are read one by one while writers may be running: each value is a true count at
    // some instant, `count` always equals the +Inf bucket, `sum` may trail by in-flight
    // observations.
    Snapshot Snap() const;
    double Quantile(double q) const { return Snap().Quantile(q); }
    const std::vector<double>& bounds() const { return bounds_; }

private:
    const std::vector<double> bounds_;
    const std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative
    std::atomic<double> sum_{0};
};

// 50us, 100us, 250us, 500us, 1ms, ... 5s, 10s: seventeen bounds in seconds, 1-2.5-5 steps.
std::vector<double> LatencyBucketsSeconds();

class MetricsRegistry {
public:
    MetricsRegistry();
    ~MetricsRegistry();
    MetricsRegistry(const MetricsRegistry&) = delete;
    MetricsRegistry& operator=(const MetricsRegistry&) = delete;

    // Same (name, labels) twice returns the same object. A name is one family with one type
    // and help. References stay valid for the registry's life.
    Counter& GetCounter(std::string_view name, std::string_view help, const Labels& labels = {});
    Gauge& GetGauge(std::string_view name, std::string_view help, const Labels& labels = {});
    // An existing series keeps the bounds it was created with (different bounds assert in
    // debug). Series of one family may have different bounds.
    Histogram& GetHistogram(std::string_view name, std::string_view help,
                            std::vector<double> bounds, const Labels& labels = {});

    // A gauge computed at render time, for values owned elsewhere (DRAM used, queue lengths).
    // Adding the same (name, labels) again replaces the function. `fn` runs on the rendering
    // (or Value()) thread; it must be cheap, must not call back into this registry, and
    // whatever it captures must stay valid until RemoveCallbackGauge() or the registry's end.
    // If it throws, the sample is rendered as NaN.
    void AddCallbackGauge(std::string_view name, std::string_view help, const Labels& labels,
                          std::function<double()> fn);
    // Returns once no render is running the function, so its owner may then be destroyed.
    // Don't call it while holding a lock that the function itself takes. False if absent.
    bool RemoveCallbackGauge(std::string_view name, const Labels& labels = {});

    // Text exposition 0.0.4: # HELP (omitted when empty) and # TYPE once per family, families
    // in name order, series in label order, every name given `prefix` (which must itself be
    // a valid start of a name, or empty). Histograms: _bucket{...,le=".."} cumulative up to
    // le="+Inf", then _sum and _count.
    std::string RenderPrometheus(std::string_view prefix = "mooncake_") const;

    // Current value of a counter, gauge or callback gauge by registered name (no prefix) and
    // labels; nullopt if absent or a histogram.
    std::optional<double> Value(std::string_view name, const Labels& labels = {}) const;

private:
    enum class Type { kCounter, kGauge, kHistogram };
    struct Series {
        std::unique_ptr<Counter> counter;
        std::unique_ptr<Gauge> gauge;
        std::unique_ptr<Histogram> histogram;
        std::function<double()> callback;  // GUARDED_BY(callback_mu_) and mu_ to change
    };
    struct Family {
        Type type;
        std::string help;
        std::map<Labels, Series> series;  // key: labels sorted by name
    };

    // The series for (name, labels), created empty if new; nullptr on misuse (reported).
    Series* FindOrAddSeries(std::string_view name, std::string_view help, Type type,
                            const Labels& labels) MC_REQUIRES(mu_);
    const Series* FindSeries(std::string_view name, const Labels& labels) const MC_REQUIRES(mu_);
    bool ClashesWithHistogram(std::string_view name, Type type) const MC_REQUIRES(mu_);
    template <typename T, typename... Args>
    T& Detached(Args&&... args) MC_REQUIRES(mu_);

    // Lock order: callback_mu_, then mu_. callback_mu_ is held while callbacks run and while
    // they are added or removed, so a removed callback is never running afterwards.
    mutable Mutex callback_mu_;
    mutable Mutex mu_;
    std::map<std::string, Family, std::less<>> families_ MC_GUARDED_BY(mu_);
    std::vector<std::shared_ptr<void>> detached_ MC_GUARDED_BY(mu_);
};

}  // namespace mooncake
