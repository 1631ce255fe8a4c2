#include "fuse/name_codec.h"

#include "fuse/sha256.h"

namespace mooncake::tierfs::name_codec {
namespace {

constexpr char kUpperHex[] = "0123456789ABCDEF";

bool MustEscape(unsigned char b) { return b == '%' || b == '/' || b < 0x20 || b == 0x7F; }

// Value of an uppercase hex digit, or -1.
int UpperHexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool IsUtf8Continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

std::string HashedName(const std::string& escaped, std::string_view key) {
    size_t cut = std::min(escaped.size(), kHashedPrefixMaxBytes);
    // Not in the middle of a UTF-8 character (at most 3 bytes back: a UTF-8 character has at
    // most 3 continuation bytes; other bytes >= 0x80 need not form characters at all).
    for (int i = 0; i < 3 && cut > 0 && cut < escaped.size() &&
                    IsUtf8Continuation(static_cast<unsigned char>(escaped[cut]));
         ++i) {
        --cut;
    }
    // Not inside a %XX escape: in the escaped form every '%' starts one. If this moves the cut,
    // the next byte is that '%', so the UTF-8 rule still holds.
    while (cut > 0 && (escaped[cut - 1] == '%' || (cut >= 2 && escaped[cut - 2] == '%'))) --cut;
    std::string name = escaped.substr(0, cut);
    name.append(kHashMarker);
    name.append(Sha256Hex(key));
    return name;
}

}  // namespace

std::string EscapeKey(std::string_view key) {
    if (key == ".") return "%2E";
    if (key == "..") return "%2E%2E";
    std::string out;
    out.reserve(key.size());
    for (char c : key) {
        auto b = static_cast<unsigned char>(c);
        if (MustEscape(b)) {
            out.push_back('%');
            out.push_back(kUpperHex[b >> 4]);
            out.push_back(kUpperHex[b & 0xF]);
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::string Encode(std::string_view key) {
    std::string escaped = EscapeKey(key);
    if (escaped.size() <= kMaxNameBytes) return escaped;
    return HashedName(escaped, key);
}

std::optional<std::string> Decode(std::string_view name) {
    if (name.empty() || name.size() > kMaxNameBytes) return std::nullopt;
    if (name == "%2E") return std::string(".");
    if (name == "%2E%2E") return std::string("..");
    if (name == "." || name == "..") return std::nullopt;
    std::string key;
    key.reserve(name.size());
    for (size_t i = 0; i < name.size(); ++i) {
        auto b = static_cast<unsigned char>(name[i]);
        if (b != '%') {
            if (MustEscape(b)) return std::nullopt;  // a raw '/', control byte or 0x7F
            key.push_back(name[i]);
            continue;
        }
        if (i + 2 >= name.size()) return std::nullopt;
        int hi = UpperHexValue(name[i + 1]);
        int lo = UpperHexValue(name[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;  // also refuses "%~", i.e. hashed names
        auto value = static_cast<unsigned char>(hi * 16 + lo);
        if (!MustEscape(value)) return std::nullopt;  // "%41" is not how "A" is written
        key.push_back(static_cast<char>(value));
        i += 2;
    }
    return key;
}

bool IsHashedName(std::string_view name) {
    constexpr size_t kSuffix = kHashMarker.size() + kHashHexDigits;
    if (name.size() > kMaxNameBytes || name.size() < kSuffix) return false;
    size_t prefix = name.size() - kSuffix;
    if (prefix > kHashedPrefixMaxBytes) return false;
    if (name.substr(prefix, kHashMarker.size()) != kHashMarker) return false;
    for (char c : name.substr(prefix + kHashMarker.size())) {
        if (!IsLowerHex(c)) return false;
    }
    return true;
}

std::optional<std::string> HashedNameKeyPrefix(std::string_view name) {
    if (!IsHashedName(name)) return std::nullopt;
    std::string_view prefix = name.substr(0, name.size() - kHashMarker.size() - kHashHexDigits);
    std::string key;
    for (size_t i = 0; i < prefix.size(); ++i) {
        auto b = static_cast<unsigned char>(prefix[i]);
        if (b != '%') {
            if (MustEscape(b)) return std::nullopt;
            key.push_back(prefix[i]);
            continue;
        }
        if (i + 2 >= prefix.size()) return std::nullopt;
        int hi = UpperHexValue(prefix[i + 1]);
        int lo = UpperHexValue(prefix[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        key.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
    }
    return key;
}

}  // namespace mooncake::tierfs::name_codec
