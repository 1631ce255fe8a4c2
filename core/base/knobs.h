// Config: the values of every knob in knobs.def, with the table that defines them.
//
// Thread-safety: every getter and Set() may be called from any thread at any time. Numeric
// values are atomics, so the hot path reads a knob without a lock; string values are copied
// under a mutex (they are start-only or rarely read).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/mutex.h"
#include "core/base/status.h"

namespace mooncake {

enum class KnobType { kBool, kInt, kDouble, kSize, kEnum, kString };

enum class KnobId : int {
#define KNOB_BOOL(name, ...) name,
#define KNOB_INT(name, ...) name,
#define KNOB_DOUBLE(name, ...) name,
#define KNOB_SIZE(name, ...) name,
#define KNOB_ENUM(name, ...) name,
#define KNOB_STRING(name, ...) name,
#include "core/base/knobs.def"
#undef KNOB_BOOL
#undef KNOB_INT
#undef KNOB_DOUBLE
#undef KNOB_SIZE
#undef KNOB_ENUM
#undef KNOB_STRING
    kCount
};
inline constexpr size_t kKnobCount = static_cast<size_t>(KnobId::kCount);

struct KnobDef {
    KnobId id;
    std::string_view name;
    KnobType type;
    std::string_view default_text;
    double min;  // numeric knobs: inclusive range
    double max;
    std::string_view allowed;  // enum knobs: "a|b|c"
    bool runtime_tunable;
    std::string_view doc;

    // "0..255", "0.0..1.0", "true|false", "standalone|master|node", "any text".
    std::string RangeText() const;
};

std::span<const KnobDef> KnobTable();
const KnobDef* FindKnob(std::string_view name);  // nullptr when unknown
const KnobDef& KnobDefOf(KnobId id);

enum class SetMode {
    kStartup,  // flags and config file: every knob may be set
    kRuntime,  // tune set: only runtime-tunable knobs
};

class Config {
public:
    Config();  // every knob at its default
    Config(const Config& other);
    Config& operator=(const Config& other);

    // Parses `text` for knob `name`, checks type and range, and stores it. On error nothing
    // changes and the message names the knob and its allowed range.
    Status Set(std::string_view name, std::string_view text, SetMode mode = SetMode::kStartup);
    // What Set() checks of one assignment by itself (name, tunability in `mode`, type and
    // range), without the cross-knob rules or changing anything: mooncakectl uses it to tell
    // a bad value (a usage error) from a refusal by the daemon.
    static Status CheckAssignment(std::string_view name, std::string_view text, SetMode mode);
    // Several at once, all or nothing: validated first, then applied.
    Status SetMany(const std::vector<std::pair<std::string, std::string>>& assignments,
                   SetMode mode);

    // "name = value" lines; '#' starts a comment; blank lines ignored. Errors name the line.
    Status ParseConfigText(std::string_view text, std::string_view origin = "config");
    Status LoadFile(const std::string& path);

    // Current value as text, in the form Set() accepts ("true", "0.95", "256MiB", ...).
    std::string GetText(KnobId id) const;
    Result<std::string> GetText(std::string_view name) const;
    std::map<std::string, std::string> Snapshot() const;  // every knob, name -> text

    // Cross-knob rules, checked once after flags and file are applied.
    Status Validate() const;

    bool Bool(KnobId id) const { return Raw(id) != 0; }
    int64_t Int(KnobId id) const { return Raw(id); }
    uint64_t Size(KnobId id) const { return static_cast<uint64_t>(Raw(id)); }
    double Double(KnobId id) const;
    std::string String(KnobId id) const;

    // Typed accessors, one per knob: config.promotion_on_hit(), config.dram_size(), ...
#define KNOB_BOOL(name, ...) \
    bool name() const { return Bool(KnobId::name); }
#define KNOB_INT(name, ...) \
    int64_t name() const { return Int(KnobId::name); }
#define KNOB_DOUBLE(name, ...) \
    double name() const { return Double(KnobId::name); }
#define KNOB_SIZE(name, ...) \
    uint64_t name() const { return Size(KnobId::name); }
#define KNOB_ENUM(name, ...) \
    std::string name() const { return String(KnobId::name); }
#define KNOB_STRING(name, ...) \
    std::string name() const { return String(KnobId::name); }
#include "core/base/knobs.def"
#undef KNOB_BOOL
#undef KNOB_INT
#undef KNOB_DOUBLE
#undef KNOB_SIZE
#undef KNOB_ENUM
#undef KNOB_STRING

private:
    int64_t Raw(KnobId id) const {
        return values_[static_cast<size_t>(id)].load(std::memory_order_relaxed);
    }
    struct Parsed {
        int64_t raw = 0;
        std::string text;  // string and enum knobs
    };
    static Result<Parsed> ParseValue(const KnobDef& def, std::string_view text);
    void Store(const KnobDef& def, const Parsed& parsed);

    std::array<std::atomic<int64_t>, kKnobCount> values_{};  // doubles stored bit-cast
    mutable Mutex strings_mu_;
    std::array<std::string, kKnobCount> strings_ MC_GUARDED_BY(strings_mu_);
};

}  // namespace mooncake
