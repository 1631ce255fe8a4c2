#include "core/base/metrics.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/base/text_encoding.h"  // Utf8SequenceLength

namespace mooncake {
namespace {

// Debug builds stop at a misuse with its reason; release builds carry on (see metrics.h).
void ReportMisuse([[maybe_unused]] const char* what, [[maybe_unused]] std::string_view name) {
#ifndef NDEBUG
    std::fprintf(stderr, "metrics: %s: '%.*s'\n", what, static_cast<int>(name.size()), name.data());
    std::abort();
#endif
}

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Sorted by name; nullopt if a name is invalid, repeated, or reserved for this type.
std::optional<Labels> CanonicalLabels(const Labels& labels, bool histogram) {
    Labels sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
        const std::string& name = sorted[i].first;
        if (!IsValidLabelName(name)) return std::nullopt;
        if (histogram && name == "le") return std::nullopt;
        if (i > 0 && sorted[i - 1].first == name) return std::nullopt;
    }
    return sorted;
}

// Like Go's strconv 'g' with shortest digits, but plain notation up to 1e21 so that byte
// counts stay readable: 0.0001, 5e-05, 1, 2.5, 68719476736, 1e+21, NaN, +Inf.
void AppendDouble(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "NaN";
        return;
    }
    if (std::isinf(v)) {
        out += v > 0 ? "+Inf" : "-Inf";
        return;
    }
    if (v == 0) {  // also -0
        out += '0';
        return;
    }
    const double magnitude = std::fabs(v);
    const auto format = (magnitude >= 1e-4 && magnitude < 1e21) ? std::chars_format::fixed
                                                                : std::chars_format::scientific;
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof(buf), v, format);
    out.append(buf, result.ptr);
}

// Escapes backslash and newline (and '"' in label values); invalid UTF-8 becomes U+FFFD.
void AppendEscaped(std::string& out, std::string_view text, bool escape_quote) {
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '"' && escape_quote) {
            out += "\\\"";
        } else {
            const size_t length = Utf8SequenceLength(text, i);
            if (length == 0) {
                out += "\xEF\xBF\xBD";
                ++i;
            } else {
                out.append(text, i, length);
                i += length;
            }
            continue;
        }
        ++i;
    }
}

// name{a="x",b="y"} -- `le` (histogram buckets) goes last, as Prometheus clients do.
void AppendSeriesName(std::string& out, std::string_view prefix, std::string_view name,
                      std::string_view suffix, const Labels& labels, const double* le) {
    out += prefix;
    out += name;
    out += suffix;
    if (labels.empty() && le == nullptr) return;
    out += '{';
    bool first = true;
    for (const auto& [label, value] : labels) {
        if (!first) out += ',';
        first = false;
        out += label;
        out += "=\"";
        AppendEscaped(out, value, /*escape_quote=*/true);
        out += '"';
    }
    if (le != nullptr) {
        if (!first) out += ',';
        out += "le=\"";
        AppendDouble(out, *le);
        out += '"';
    }
    out += '}';
}

void AppendSample(std::string& out, std::string_view prefix, std::string_view name,
                  std::string_view suffix, const Labels& labels, double value,
                  const double* le = nullptr) {
    AppendSeriesName(out, prefix, name, suffix, labels, le);
    out += ' ';
    AppendDouble(out, value);
    out += '\n';
}

double RunCallback(const std::function<double()>& fn) {
    try {
        return fn();
    } catch (...) {
        return std::numeric_limits<double>::quiet_NaN();
    }
}

std::vector<double> NormalizeBounds(std::vector<double> bounds) {
    if (!bounds.empty() && bounds.back() == std::numeric_limits<double>::infinity()) {
        bounds.pop_back();
    }
    bool valid = true;
    for (size_t i = 0; i < bounds.size(); ++i) {
        if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i - 1] < bounds[i]))) valid = false;
    }
    if (!valid) {
        ReportMisuse("histogram bounds must be finite and strictly increasing", "");
        std::erase_if(bounds, [](double b) { return !std::isfinite(b); });
        std::sort(bounds.begin(), bounds.end());
        bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    }
    return bounds;
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
    if (name.empty()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        const bool ok = IsAsciiLetter(c) || c == '_' || c == ':' || (i > 0 && IsDigit(c));
        if (!ok) return false;
    }
    return true;
}

bool IsValidLabelName(std::string_view name) {
    if (name.empty() || name.starts_with("__")) return false;
    for (size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        if (!(IsAsciiLetter(c) || c == '_' || (i > 0 && IsDigit(c)))) return false;
    }
    return true;
}

// ---- Counter ----

void Counter::IncSlow(double v) {
    if (!(v >= 0)) {
        ReportMisuse("counter increment must be >= 0", "");
        return;
    }
    fraction_.fetch_add(v, std::memory_order_relaxed);
}

double Counter::Value() const {
    uint64_t whole = 0;
    for (const Stripe& stripe : stripes_) whole += stripe.whole.load(std::memory_order_relaxed);
    return static_cast<double>(whole) + fraction_.load(std::memory_order_relaxed);
}

// ---- Histogram ----

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(NormalizeBounds(std::move(bounds))),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::Observe(double v) {
    // First bound >= v; NaN compares false everywhere and lands in +Inf.
    const auto it = std::partition_point(bounds_.begin(), bounds_.end(),
                                         [v](double bound) { return !(bound >= v); });
    counts_[it - bounds_.begin()].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Snap() const {
    Snapshot snap;
    snap.bounds = bounds_;
    snap.cumulative.resize(bounds_.size() + 1);
    uint64_t running = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
        running += counts_[i].load(std::memory_order_relaxed);
        snap.cumulative[i] = running;
    }
    snap.count = running;
    snap.sum = sum_.load(std::memory_order_relaxed);
    return snap;
}

double Histogram::Snapshot::Quantile(double q) const {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (count == 0 || std::isnan(q) || cumulative.size() != bounds.size() + 1) return nan;
    q = std::clamp(q, 0.0, 1.0);
    const double rank = q * static_cast<double>(count);
    // The first non-empty bucket whose cumulative count reaches the rank.
    size_t b = 0;
    while (b < bounds.size() &&
           !(static_cast<double>(cumulative[b]) >= rank && cumulative[b] > 0)) {
        ++b;
    }
    if (b == bounds.size()) return bounds.empty() ? nan : bounds.back();  // +Inf bucket
    if (b == 0 && bounds[0] <= 0) return bounds[0];
    const double start = b == 0 ? 0.0 : bounds[b - 1];
    const double below = b == 0 ? 0.0 : static_cast<double>(cumulative[b - 1]);
    const double in_bucket = static_cast<double>(cumulative[b]) - below;
    return start + (bounds[b] - start) * ((rank - below) / in_bucket);
}

std::vector<double> LatencyBucketsSeconds() {
    return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
            0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,     10};
}

// ---- MetricsRegistry ----

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

template <typename T, typename... Args>
T& MetricsRegistry::Detached(Args&&... args) {
    auto metric = std::make_shared<T>(std::forward<Args>(args)...);
    detached_.push_back(metric);
    return *metric;
}

bool MetricsRegistry::ClashesWithHistogram(std::string_view name, Type type) const {
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        if (type == Type::kHistogram && families_.contains(std::string(name).append(suffix))) {
            return true;
        }
        if (name.size() > suffix.size() && name.ends_with(suffix)) {
            const auto it = families_.find(name.substr(0, name.size() - suffix.size()));
            if (it != families_.end() && it->second.type == Type::kHistogram) return true;
        }
    }
    return false;
}

MetricsRegistry::Series* MetricsRegistry::FindOrAddSeries(std::string_view name,
                                                          std::string_view help, Type type,
                                                          const Labels& labels) {
    if (!IsValidMetricName(name)) {
        ReportMisuse("invalid metric name", name);
        return nullptr;
    }
    std::optional<Labels> canonical = CanonicalLabels(labels, type == Type::kHistogram);
    if (!canonical) {
        ReportMisuse("invalid, repeated or reserved label name", name);
        return nullptr;
    }
    auto it = families_.find(name);
    if (it == families_.end()) {
        if (ClashesWithHistogram(name, type)) {
            ReportMisuse("metric name clashes with a histogram's series", name);
            return nullptr;
        }
        it = families_.emplace(std::string(name), Family{type, std::string(help), {}}).first;
    } else if (it->second.type != type) {
        ReportMisuse("metric name already registered with another type", name);
        return nullptr;
    }
    return &it->second.series[std::move(*canonical)];
}

const MetricsRegistry::Series* MetricsRegistry::FindSeries(std::string_view name,
                                                           const Labels& labels) const {
    const auto family = families_.find(name);
    if (family == families_.end()) return nullptr;
    Labels sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    const auto series = family->second.series.find(sorted);
    return series == family->second.series.end() ? nullptr : &series->second;
}

Counter& MetricsRegistry::GetCounter(std::string_view name, std::string_view help,
                                     const Labels& labels) {
    MutexLock lock(mu_);
    Series* series = FindOrAddSeries(name, help, Type::kCounter, labels);
    if (series == nullptr) return Detached<Counter>();
    if (!series->counter) series->counter = std::make_unique<Counter>();
    return *series->counter;
}

Gauge& MetricsRegistry::GetGauge(std::string_view name, std::string_view help,
                                 const Labels& labels) {
    MutexLock lock(mu_);
    Series* series = FindOrAddSeries(name, help, Type::kGauge, labels);
    if (series == nullptr) return Detached<Gauge>();
    if (series->callback) {
        ReportMisuse("a callback gauge already has these labels", name);
        return Detached<Gauge>();
    }
    if (!series->gauge) series->gauge = std::make_unique<Gauge>();
    return *series->gauge;
}

Histogram& MetricsRegistry::GetHistogram(std::string_view name, std::string_view help,
                                         std::vector<double> bounds, const Labels& labels) {
    MutexLock lock(mu_);
    Series* series = FindOrAddSeries(name, help, Type::kHistogram, labels);
    if (series == nullptr) return Detached<Histogram>(std::move(bounds));
    if (!series->histogram) {
        series->histogram = std::make_unique<Histogram>(std::move(bounds));
    } else if (NormalizeBounds(std::move(bounds)) != series->histogram->bounds()) {
        ReportMisuse("histogram series already exists with other bounds", name);
    }
    return *series->histogram;
}

void MetricsRegistry::AddCallbackGauge(std::string_view name, std::string_view help,
                                       const Labels& labels, std::function<double()> fn) {
    if (!fn) {
        ReportMisuse("callback gauge without a function", name);
        return;
    }
    MutexLock callback_lock(callback_mu_);
    MutexLock lock(mu_);
    Series* series = FindOrAddSeries(name, help, Type::kGauge, labels);
    if (series == nullptr) return;
    if (series->gauge) {
        ReportMisuse("a plain gauge already has these labels", name);
        return;
    }
    series->callback = std::move(fn);
}

bool MetricsRegistry::RemoveCallbackGauge(std::string_view name, const Labels& labels) {
    MutexLock callback_lock(callback_mu_);
    MutexLock lock(mu_);
    const auto family = families_.find(name);
    if (family == families_.end()) return false;
    Labels sorted = labels;
    std::sort(sorted.begin(), sorted.end());
    const auto series = family->second.series.find(sorted);
    if (series == family->second.series.end() || !series->second.callback) return false;
    family->second.series.erase(series);  // the family (name, type, help) stays
    return true;
}

std::string MetricsRegistry::RenderPrometheus(std::string_view prefix) const {
    if (!prefix.empty() && !IsValidMetricName(prefix)) {
        ReportMisuse("invalid metric name prefix", prefix);
        prefix = {};
    }
    // Held throughout, so no callback is removed (and its series erased) under our feet.
    MutexLock callback_lock(callback_mu_);

    // Families and series are never moved once created, so pointers collected under mu_ stay
    // valid; values are atomics, read without the lock, and callbacks run without it.
    struct FamilyView {
        const std::string* name;
        const Family* family;
        std::vector<std::pair<const Labels*, const Series*>> series;
    };
    std::vector<FamilyView> views;
    {
        MutexLock lock(mu_);
        views.reserve(families_.size());
        for (const auto& [name, family] : families_) {
            if (family.series.empty()) continue;
            FamilyView& view = views.emplace_back(FamilyView{&name, &family, {}});
            view.series.reserve(family.series.size());
            for (const auto& [labels, series] : family.series) {
                view.series.emplace_back(&labels, &series);
            }
        }
    }

    std::string out;
    for (const FamilyView& view : views) {
        const std::string& name = *view.name;
        const Family& family = *view.family;
        if (!family.help.empty()) {
            out += "# HELP ";
            out += prefix;
            out += name;
            out += ' ';
            AppendEscaped(out, family.help, /*escape_quote=*/false);
            out += '\n';
        }
        out += "# TYPE ";
        out += prefix;
        out += name;
        switch (family.type) {
            case Type::kCounter:
                out += " counter\n";
                break;
            case Type::kGauge:
                out += " gauge\n";
                break;
            case Type::kHistogram:
                out += " histogram\n";
                break;
        }
        for (const auto& [labels, series] : view.series) {
            switch (family.type) {
                case Type::kCounter:
                    AppendSample(out, prefix, name, "", *labels, series->counter->Value());
                    break;
                case Type::kGauge:
                    AppendSample(
                        out, prefix, name, "", *labels,
                        series->gauge ? series->gauge->Value() : RunCallback(series->callback));
                    break;
                case Type::kHistogram: {
                    const Histogram::Snapshot snap = series->histogram->Snap();
                    const double inf = std::numeric_limits<double>::infinity();
                    for (size_t i = 0; i <= snap.bounds.size(); ++i) {
                        const double& le = i < snap.bounds.size() ? snap.bounds[i] : inf;
                        AppendSample(out, prefix, name, "_bucket", *labels,
                                     static_cast<double>(snap.cumulative[i]), &le);
                    }
                    AppendSample(out, prefix, name, "_sum", *labels, snap.sum);
                    AppendSample(out, prefix, name, "_count", *labels,
                                 static_cast<double>(snap.count));
                    break;
                }
            }
        }
    }
    return out;
}

std::optional<double> MetricsRegistry::Value(std::string_view name, const Labels& labels) const {
    MutexLock callback_lock(callback_mu_);
    const Series* series;
    {
        MutexLock lock(mu_);
        series = FindSeries(name, labels);
    }
    if (series == nullptr) return std::nullopt;
    if (series->counter) return series->counter->Value();
    if (series->gauge) return series->gauge->Value();
    if (series->callback) return RunCallback(series->callback);
    return std::nullopt;
}

}  // namespace mooncake
