#include "core/base/text_encoding.h"

#include <cstdio>

namespace mooncake {

size_t Utf8SequenceLength(std::string_view s, size_t i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    auto cont = [&](size_t k) { return k < s.size() && (byte(k) & 0xc0) == 0x80; };
    unsigned char c = byte(i);
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) return cont(i + 1) ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        if (!cont(i + 1) || !cont(i + 2)) return 0;
        unsigned char c1 = byte(i + 1);
        if (c == 0xe0 && c1 < 0xa0) return 0;   // overlong
        if (c == 0xed && c1 >= 0xa0) return 0;  // UTF-16 surrogates
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
        unsigned char c1 = byte(i + 1);
        if (c == 0xf0 && c1 < 0x90) return 0;   // overlong
        if (c == 0xf4 && c1 >= 0x90) return 0;  // above U+10FFFF
        return 4;
    }
    return 0;
}

namespace {

void AppendEscape(std::string& out, unsigned code) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", code);
    out += buf;
}

}  // namespace

void AppendJsonQuoted(std::string& out, std::string_view s) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '"':
                    out += "\\\"";
                    break;
                case '\\':
                    out += "\\\\";
                    break;
                case '\b':
                    out += "\\b";
                    break;
                case '\f':
                    out += "\\f";
                    break;
                case '\n':
                    out += "\\n";
                    break;
                case '\r':
                    out += "\\r";
                    break;
                case '\t':
                    out += "\\t";
                    break;
                default:
                    if (c < 0x20 || c == 0x7f) {
                        AppendEscape(out, c);
                    } else {
                        out += static_cast<char>(c);
                    }
            }
            ++i;
            continue;
        }
        size_t n = Utf8SequenceLength(s, i);
        if (n == 0) {
            AppendEscape(out, 0xdc00u + c);  // surrogateescape: one lone surrogate per byte
            ++i;
            continue;
        }
        // U+2028/U+2029 are valid JSON but end lines in JavaScript; escape them for safety.
        if (n == 3 && c == 0xe2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
            (static_cast<unsigned char>(s[i + 2]) == 0xa8 ||
             static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
            AppendEscape(out, static_cast<unsigned char>(s[i + 2]) == 0xa8 ? 0x2028 : 0x2029);
        } else {
            out.append(s.substr(i, n));
        }
        i += n;
    }
    out += '"';
}


std::string JsonQuote(std::string_view bytes) {
    std::string out;
    AppendJsonQuoted(out, bytes);
    return out;
}

}  // namespace mooncake
