// The FUSE name codec (fuse/name_codec.h): the input is used both as a key and as a file name.
//
// Properties, for every key: Encode gives a usable file name (1..255 bytes, no '/' or NUL,
// not "." or ".."); a plain name decodes back to the key; a hashed name is recognised as one,
// ends in the key's SHA-256 and its prefix stands for a prefix of the key. For every name:
// whatever Decode accepts is canonical (Encode(Decode(n)) == n) and is not a hashed name.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuse/name_codec.h"
#include "fuse/sha256.h"
#include "fuzz/fuzz_check.h"

namespace nc = mooncake::tierfs::name_codec;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);

    // ---- as a key ----
    if (!input.empty()) {
        const std::string name = nc::Encode(input);
        FUZZ_CHECK(!name.empty());
        FUZZ_CHECK(name.size() <= nc::kMaxNameBytes);
        FUZZ_CHECK(name.find('/') == std::string::npos);
        FUZZ_CHECK(name.find('\0') == std::string::npos);
        FUZZ_CHECK(name != "." && name != "..");
        const std::string escaped = nc::EscapeKey(input);
        if (escaped.size() <= nc::kMaxNameBytes) {
            FUZZ_CHECK(name == escaped);
            FUZZ_CHECK(!nc::IsHashedName(name));
            auto back = nc::Decode(name);
            FUZZ_CHECK(back.has_value());
            FUZZ_CHECK(*back == input);
        } else {
            FUZZ_CHECK(nc::IsHashedName(name));
            FUZZ_CHECK(name.size() <= nc::kHashedPrefixMaxBytes + nc::kHashMarker.size() +
                                          nc::kHashHexDigits);
            FUZZ_CHECK(!nc::Decode(name).has_value());
            FUZZ_CHECK(std::string_view(name).substr(name.size() - nc::kHashHexDigits) ==
                       mooncake::tierfs::Sha256Hex(input));
            auto prefix = nc::HashedNameKeyPrefix(name);
            FUZZ_CHECK(prefix.has_value());
            FUZZ_CHECK(input.substr(0, prefix->size()) == *prefix);
            // The readable part is the escaped key's own start, never a torn escape.
            std::string_view readable =
                std::string_view(name).substr(0, name.size() - nc::kHashMarker.size() -
                                                     nc::kHashHexDigits);
            FUZZ_CHECK(std::string_view(escaped).substr(0, readable.size()) == readable);
            FUZZ_CHECK(nc::EscapeKey(*prefix) == readable);
        }
    }

    // ---- as a file name ----
    auto key = nc::Decode(input);
    if (key.has_value()) {
        FUZZ_CHECK(!key->empty());
        FUZZ_CHECK(nc::Encode(*key) == input);
        FUZZ_CHECK(!nc::IsHashedName(input));
    }
    auto prefix = nc::HashedNameKeyPrefix(input);
    if (prefix.has_value()) FUZZ_CHECK(nc::IsHashedName(input));
    return 0;
}
