#include "cli/text.h"

#include <cstdio>

namespace mooncake::cli {

bool IsValidUtf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        size_t n = Utf8SequenceLength(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

namespace {
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string Base64Encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    auto at = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
    for (; i + 3 <= bytes.size(); i += 3) {
        uint32_t v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
        out += kBase64[v >> 18];
        out += kBase64[(v >> 12) & 63];
        out += kBase64[(v >> 6) & 63];
        out += kBase64[v & 63];
    }
    size_t rest = bytes.size() - i;
    if (rest == 1) {
        uint32_t v = at(i) << 16;
        out += kBase64[v >> 18];
        out += kBase64[(v >> 12) & 63];
        out += "==";
    } else if (rest == 2) {
        uint32_t v = (at(i) << 16) | (at(i + 1) << 8);
        out += kBase64[v >> 18];
        out += kBase64[(v >> 12) & 63];
        out += kBase64[(v >> 6) & 63];
        out += '=';
    }
    return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        bool last = i + 4 == text.size();
        int pad = 0;
        if (last && text[i + 3] == '=') pad = text[i + 2] == '=' ? 2 : 1;
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            int d = 0;
            if (k >= 4 - pad) {
                if (text[i + k] != '=') return std::nullopt;
            } else {
                d = value(text[i + k]);
                if (d < 0) return std::nullopt;
            }
            v = (v << 6) | static_cast<uint32_t>(d);
        }
        out += static_cast<char>(v >> 16);
        if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
        if (pad < 1) out += static_cast<char>(v & 0xff);
    }
    return out;
}

std::string DisplayKey(std::string_view key) {
    std::string out;
    out.reserve(key.size());
    for (size_t i = 0; i < key.size();) {
        unsigned char c = static_cast<unsigned char>(key[i]);
        size_t n = Utf8SequenceLength(key, i);
        if (n == 0 || c < 0x20 || c == 0x7f || c == '\\') {
            char buf[5];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
            ++i;
            continue;
        }
        out.append(key.substr(i, n));
        i += n;
    }
    return out;
}

size_t DisplayWidth(std::string_view text) {
    size_t width = 0;
    for (size_t i = 0; i < text.size();) {
        size_t n = Utf8SequenceLength(text, i);
        i += n == 0 ? 1 : n;
        ++width;
    }
    return width;
}

std::string HumanSize(uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    int unit = 0;
    double value = static_cast<double>(bytes);
    while (value >= 1024 && unit < 6) {
        value /= 1024;
        ++unit;
    }
    char buf[32];
    if (value >= 100) {
        std::snprintf(buf, sizeof buf, "%.0f %s", value, kUnits[unit]);
        return buf;
    }
    std::snprintf(buf, sizeof buf, "%.1f", value);
    std::string number = buf;
    if (number.size() > 2 && number.compare(number.size() - 2, 2, ".0") == 0) {
        number.resize(number.size() - 2);
    }
    return number + " " + kUnits[unit];
}

std::string HumanDuration(std::chrono::nanoseconds d) {
    using namespace std::chrono;
    if (d.count() < 0) d = nanoseconds(0);
    int64_t ms = duration_cast<milliseconds>(d).count();
    char buf[32];
    if (ms == 0) return "0s";
    if (ms < 1000) return std::to_string(ms) + "ms";
    if (ms < 60'000) {
        std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
        return buf;
    }
    int64_t s = ms / 1000;
    if (s < 3600) {
        std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                      static_cast<long long>(s % 60));
    } else if (s < 86400) {
        std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                      static_cast<long long>((s % 3600) / 60));
    } else {
        std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                      static_cast<long long>((s % 86400) / 3600));
    }
    return buf;
}

}  // namespace mooncake::cli
