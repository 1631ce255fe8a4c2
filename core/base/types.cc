#include "core/base/types.h"

#include <cctype>
#include <cstdio>

#include "core/base/tenant.h"

namespace mooncake {

std::string_view TierName(Tier tier) {
    return tier == Tier::kMemory ? "MEMORY" : "LOCAL_DISK";
}

std::optional<Tier> ParseTier(std::string_view name) {
    if (name == "MEMORY") return Tier::kMemory;
    if (name == "LOCAL_DISK") return Tier::kLocalDisk;
    return std::nullopt;
}

std::string_view ReplicaStateName(ReplicaState state) {
    return state == ReplicaState::kProcessing ? "PROCESSING" : "COMPLETE";
}

Status ValidateKey(std::string_view key) {
    if (key.empty() || key[0] != '\0') return ValidateUserKey(key);
    if (key.size() > kMaxKeyBytes) return ValidateUserKey(key);  // the same message
    const std::string_view tenant = TenantOfKey(key);
    if (tenant.data() == nullptr) {
        return Status::InvalidArgument("key starts with a NUL byte but names no tenant");
    }
    MC_RETURN_IF_ERROR(ValidateTenant(tenant));
    return ValidateUserKey(UserPartOfKey(key));
}

Status ValidateUserKey(std::string_view key) {
    if (key.empty()) return Status::InvalidArgument("key is empty");
    if (key.size() > kMaxKeyBytes) {
        return Status::InvalidArgument("key is " + std::to_string(key.size()) +
                                       " bytes; the limit is 4096");
    }
    if (key.find('\0') != std::string_view::npos) {
        return Status::InvalidArgument("key contains a NUL byte");
    }
    return Status::Ok();
}

std::string QuoteKey(std::string_view key) {
    constexpr size_t kShown = 64;
    if (!key.empty() && key[0] == '\0' && ValidateKey(key).ok()) {
        return QuoteKey(UserPartOfKey(key)) + " (tenant " + std::string(TenantOfKey(key)) + ")";
    }
    std::string out = "'";
    for (size_t i = 0; i < key.size() && i < kShown; ++i) {
        unsigned char c = static_cast<unsigned char>(key[i]);
        if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
            char buf[5];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    if (key.size() > kShown) out += "...(" + std::to_string(key.size()) + " bytes)";
    out += "'";
    return out;
}

Result<uint64_t> ParseSize(std::string_view text) {
    size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t digits_start = i;
    uint64_t value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        uint64_t next = value * 10 + static_cast<uint64_t>(text[i] - '0');
        if (next / 10 != value) return Status::InvalidArgument("size is too large");
        value = next;
        ++i;
    }
    if (i == digits_start) {
        return Status::InvalidArgument("'" + std::string(text) +
                                       "' is not a size (examples: 4096, 64MiB, 1.5GiB)");
    }
    // A decimal fraction ("1.5GiB"): up to 6 digits, so fraction << 40 cannot overflow.
    uint64_t fraction = 0, scale = 1;
    if (i < text.size() && text[i] == '.') {
        ++i;
        size_t frac_start = i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
            if (i - frac_start >= 6) {
                return Status::InvalidArgument("'" + std::string(text) +
                                               "': at most 6 decimal digits");
            }
            fraction = fraction * 10 + static_cast<uint64_t>(text[i] - '0');
            scale *= 10;
            ++i;
        }
        if (i == frac_start) {
            return Status::InvalidArgument("'" + std::string(text) +
                                           "' is not a size (examples: 4096, 64MiB, 1.5GiB)");
        }
    }
    std::string unit;
    for (; i < text.size(); ++i) {
        if (std::isspace(static_cast<unsigned char>(text[i]))) continue;
        unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    }
    int shift = -1;
    if (unit.empty() || unit == "b") shift = 0;
    else if (unit == "k" || unit == "kib") shift = 10;
    else if (unit == "m" || unit == "mib") shift = 20;
    else if (unit == "g" || unit == "gib") shift = 30;
    else if (unit == "t" || unit == "tib") shift = 40;
    if (shift < 0) {
        return Status::InvalidArgument("unknown size unit in '" + std::string(text) +
                                       "' (use B, KiB, MiB, GiB or TiB)");
    }
    if (shift > 0 && (value >> (64 - shift)) != 0) {
        return Status::InvalidArgument("size is too large");
    }
    // The fraction of a unit, rounded down to whole bytes ("0.5KiB" = 512).
    const uint64_t extra = (fraction << shift) / scale;
    if (fraction != 0 && shift == 0) {
        return Status::InvalidArgument("'" + std::string(text) +
                                       "': a size in bytes is a whole number");
    }
    const uint64_t whole = value << shift;
    if (whole + extra < whole) return Status::InvalidArgument("size is too large");
    return whole + extra;
}

std::string FormatSize(uint64_t bytes) {
    static constexpr const char* kUnits[] = {"TiB", "GiB", "MiB", "KiB"};
    static constexpr int kShifts[] = {40, 30, 20, 10};
    for (int u = 0; u < 4; ++u) {
        uint64_t unit = uint64_t{1} << kShifts[u];
        if (bytes >= unit && bytes % unit == 0) {
            return std::to_string(bytes / unit) + kUnits[u];
        }
    }
    return std::to_string(bytes);
}

}  // namespace mooncake
