#include "core/base/knobs.h"

#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/base/types.h"

namespace mooncake {
namespace {

constexpr KnobDef kTable[] = {
#define KNOB_BOOL(name, def, rt, doc) \
    {KnobId::name, #name, KnobType::kBool, #def, 0, 1, "", rt, doc},
#define KNOB_INT(name, def, lo, hi, rt, doc) \
    {KnobId::name, #name, KnobType::kInt, #def, double(lo), double(hi), "", rt, doc},
#define KNOB_DOUBLE(name, def, lo, hi, rt, doc) \
    {KnobId::name, #name, KnobType::kDouble, #def, lo, hi, "", rt, doc},
#define KNOB_SIZE(name, def, lo, hi, rt, doc) \
    {KnobId::name, #name, KnobType::kSize, def, double(lo), double(hi), "", rt, doc},
#define KNOB_ENUM(name, def, allowed, rt, doc) \
    {KnobId::name, #name, KnobType::kEnum, def, 0, 0, allowed, rt, doc},
#define KNOB_STRING(name, def, rt, doc) \
    {KnobId::name, #name, KnobType::kString, def, 0, 0, "", rt, doc},
#include "core/base/knobs.def"
#undef KNOB_BOOL
#undef KNOB_INT
#undef KNOB_DOUBLE
#undef KNOB_SIZE
#undef KNOB_ENUM
#undef KNOB_STRING
};
static_assert(std::size(kTable) == kKnobCount);

std::string_view Trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

std::string FormatDouble(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    std::string out = buf;
    if (out.find_first_of(".eE") == std::string::npos) out += ".0";
    return out;
}

bool EnumAllows(std::string_view allowed, std::string_view value) {
    while (!allowed.empty()) {
        size_t bar = allowed.find('|');
        if (allowed.substr(0, bar) == value) return true;
        if (bar == std::string_view::npos) break;
        allowed.remove_prefix(bar + 1);
    }
    return false;
}

Status OutOfRange(const KnobDef& def, std::string_view text) {
    return Status::InvalidArgument("value '" + std::string(text) + "' for " +
                                   std::string(def.name) + " is out of range (allowed: " +
                                   def.RangeText() + ")");
}

}  // namespace

std::string KnobDef::RangeText() const {
    switch (type) {
        case KnobType::kBool: return "true|false";
        case KnobType::kInt:
            return std::to_string(static_cast<int64_t>(min)) + ".." +
                   std::to_string(static_cast<int64_t>(max));
        case KnobType::kDouble: return FormatDouble(min) + ".." + FormatDouble(max);
        case KnobType::kSize:
            return FormatSize(static_cast<uint64_t>(min)) + ".." +
                   FormatSize(static_cast<uint64_t>(max));
        case KnobType::kEnum: return std::string(allowed);
        case KnobType::kString: return "any text";
    }
    return "";
}

std::span<const KnobDef> KnobTable() { return kTable; }

const KnobDef* FindKnob(std::string_view name) {
    for (const KnobDef& def : kTable) {
        if (def.name == name) return &def;
    }
    return nullptr;
}

const KnobDef& KnobDefOf(KnobId id) { return kTable[static_cast<size_t>(id)]; }

Config::Config() {
    for (const KnobDef& def : kTable) {
        Result<Parsed> parsed = ParseValue(def, def.default_text);
        assert(parsed.ok() && "a knob default does not parse");
        Store(def, *parsed);
    }
}

Config::Config(const Config& other) { *this = other; }

Config& Config::operator=(const Config& other) {
    if (this == &other) return *this;
    for (size_t i = 0; i < kKnobCount; ++i) values_[i].store(other.values_[i].load());
    // One lock at a time: two Configs' mutexes have no order to get wrong.
    std::array<std::string, kKnobCount> strings;
    {
        MutexLock lock(other.strings_mu_);
        strings = other.strings_;
    }
    MutexLock lock(strings_mu_);
    strings_ = std::move(strings);
    return *this;
}

Result<Config::Parsed> Config::ParseValue(const KnobDef& def, std::string_view raw_text) {
    std::string_view text = Trim(raw_text);
    Parsed out;
    switch (def.type) {
        case KnobType::kBool: {
            // Case-insensitive: config files and shells write TRUE, True and true alike.
            std::string lower(text);
            for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") {
                out.raw = 1;
            } else if (lower == "false" || lower == "0" || lower == "no" || lower == "off") {
                out.raw = 0;
            } else {
                return Status::InvalidArgument(
                    "value '" + std::string(text) + "' for " + std::string(def.name) +
                    " is not a boolean (accepted, in any case: true|false, 1|0, yes|no, on|off)");
            }
            return out;
        }
        case KnobType::kInt: {
            int64_t v = 0;
            auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
                return Status::InvalidArgument("value '" + std::string(text) + "' for " +
                                               std::string(def.name) +
                                               " is not an integer (allowed: " +
                                               def.RangeText() + ")");
            }
            if (static_cast<double>(v) < def.min || static_cast<double>(v) > def.max) {
                return OutOfRange(def, text);
            }
            out.raw = v;
            return out;
        }
        case KnobType::kDouble: {
            std::string copy(text);
            char* end = nullptr;
            errno = 0;
            double v = std::strtod(copy.c_str(), &end);
            if (copy.empty() || end != copy.c_str() + copy.size() || errno != 0 ||
                !std::isfinite(v)) {
                return Status::InvalidArgument("value '" + copy + "' for " +
                                               std::string(def.name) +
                                               " is not a number (allowed: " + def.RangeText() +
                                               ")");
            }
            if (v < def.min || v > def.max) return OutOfRange(def, text);
            out.raw = std::bit_cast<int64_t>(v);
            return out;
        }
        case KnobType::kSize: {
            Result<uint64_t> v = ParseSize(text);
            if (!v.ok()) {
                return Status::InvalidArgument(std::string(def.name) + ": " +
                                               v.status().message());
            }
            if (static_cast<double>(*v) < def.min || static_cast<double>(*v) > def.max) {
                return OutOfRange(def, text);
            }
            out.raw = static_cast<int64_t>(*v);
            return out;
        }
        case KnobType::kEnum:
            if (!EnumAllows(def.allowed, text)) return OutOfRange(def, text);
            out.text = std::string(text);
            return out;
        case KnobType::kString:
            if (text.find('\n') != std::string_view::npos) {
                return Status::InvalidArgument("value for " + std::string(def.name) +
                                               " contains a newline");
            }
            out.text = std::string(text);
            return out;
    }
    return Status::Internal("unknown knob type");
}

void Config::Store(const KnobDef& def, const Parsed& parsed) {
    size_t i = static_cast<size_t>(def.id);
    if (def.type == KnobType::kEnum || def.type == KnobType::kString) {
        MutexLock lock(strings_mu_);
        strings_[i] = parsed.text;
    } else {
        values_[i].store(parsed.raw, std::memory_order_relaxed);
    }
}

Status Config::Set(std::string_view name, std::string_view text, SetMode mode) {
    return SetMany({{std::string(name), std::string(text)}}, mode);
}

Status Config::CheckAssignment(std::string_view name, std::string_view text, SetMode mode) {
    const KnobDef* def = FindKnob(name);
    if (def == nullptr) return Status::InvalidArgument("unknown knob '" + std::string(name) + "'");
    if (mode == SetMode::kRuntime && !def->runtime_tunable) {
        return Status::InvalidArgument("knob " + std::string(name) +
                                       " is set at start-up only (flag or config file)");
    }
    Result<Parsed> value = ParseValue(*def, text);
    return value.ok() ? Status::Ok() : value.status();
}

Status Config::SetMany(const std::vector<std::pair<std::string, std::string>>& assignments,
                       SetMode mode) {
    std::vector<std::pair<const KnobDef*, Parsed>> parsed;
    for (const auto& [name, text] : assignments) {
        const KnobDef* def = FindKnob(name);
        if (def == nullptr) return Status::InvalidArgument("unknown knob '" + name + "'");
        if (mode == SetMode::kRuntime && !def->runtime_tunable) {
            return Status::InvalidArgument("knob " + name +
                                           " is set at start-up only (flag or config file)");
        }
        Result<Parsed> value = ParseValue(*def, text);
        if (!value.ok()) return value.status();
        parsed.emplace_back(def, std::move(value).value());
    }
    // Cross-knob rules are checked against the would-be state before anything changes.
    Config trial(*this);
    for (const auto& [def, value] : parsed) trial.Store(*def, value);
    MC_RETURN_IF_ERROR(trial.Validate());
    for (const auto& [def, value] : parsed) Store(*def, value);
    return Status::Ok();
}

Status Config::ParseConfigText(std::string_view text, std::string_view origin) {
    std::vector<std::pair<std::string, std::string>> assignments;
    std::map<std::string, size_t> first_line;  // knob -> the line that set it
    size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        size_t hash = line.find('#');
        if (hash != std::string_view::npos) line = line.substr(0, hash);
        line = Trim(line);
        if (line.empty()) continue;
        size_t eq = line.find('=');
        std::string where = std::string(origin) + ":" + std::to_string(line_no) + ": ";
        if (eq == std::string_view::npos) {
            return Status::InvalidArgument(where + "expected 'name = value'");
        }
        std::string name(Trim(line.substr(0, eq)));
        std::string value(Trim(line.substr(eq + 1)));
        if (FindKnob(name) == nullptr) {
            return Status::InvalidArgument(where + "unknown knob '" + name + "'");
        }
        const KnobDef* def = FindKnob(name);
        // Two lines for one knob: an edit to the first would be silently overridden.
        if (auto [it, fresh] = first_line.emplace(name, line_no); !fresh) {
            return Status::InvalidArgument(where + "'" + name + "' is already set on line " +
                                           std::to_string(it->second));
        }
        Result<Parsed> check = ParseValue(*def, value);
        if (!check.ok()) return Status::InvalidArgument(where + check.status().message());
        assignments.emplace_back(std::move(name), std::move(value));
    }
    return SetMany(assignments, SetMode::kStartup);
}

Status Config::LoadFile(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Status::InvalidArgument("cannot read config file '" + path + "'");
    std::stringstream buf;
    buf << in.rdbuf();
    return ParseConfigText(buf.str(), path);
}

double Config::Double(KnobId id) const { return std::bit_cast<double>(Raw(id)); }

std::string Config::String(KnobId id) const {
    MutexLock lock(strings_mu_);
    return strings_[static_cast<size_t>(id)];
}

std::string Config::GetText(KnobId id) const {
    const KnobDef& def = KnobDefOf(id);
    switch (def.type) {
        case KnobType::kBool: return Bool(id) ? "true" : "false";
        case KnobType::kInt: return std::to_string(Int(id));
        case KnobType::kDouble: return FormatDouble(Double(id));
        case KnobType::kSize: return FormatSize(Size(id));
        case KnobType::kEnum:
        case KnobType::kString: return String(id);
    }
    return "";
}

Result<std::string> Config::GetText(std::string_view name) const {
    const KnobDef* def = FindKnob(name);
    if (def == nullptr) return Status::InvalidArgument("unknown knob '" + std::string(name) + "'");
    return GetText(def->id);
}

std::map<std::string, std::string> Config::Snapshot() const {
    std::map<std::string, std::string> out;
    for (const KnobDef& def : kTable) out.emplace(std::string(def.name), GetText(def.id));
    return out;
}

Status Config::Validate() const {
    if (eviction_ratio() > eviction_high_watermark_ratio()) {
        return Status::InvalidArgument(
            "eviction_ratio (" + GetText(KnobId::eviction_ratio) +
            ") must not exceed eviction_high_watermark_ratio (" +
            GetText(KnobId::eviction_high_watermark_ratio) + ")");
    }
    return Status::Ok();
}

}  // namespace mooncake
