// The name codec of mooncake-tierfs (fuse/name_codec.h): exact encodings from DESIGN.md
// ("Contracts"), the hashed-name scheme, canonical decoding, and round trips of odd keys.
#include "fuse/name_codec.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "fuse/sha256.h"

namespace mooncake::tierfs {
namespace {

using name_codec::Decode;
using name_codec::Encode;
using name_codec::HashedNameKeyPrefix;
using name_codec::IsHashedName;

std::string Bytes(std::initializer_list<int> bytes) {
    std::string out;
    for (int b : bytes) out.push_back(static_cast<char>(b));
    return out;
}

TEST(TierFsSha256, KnownVectors) {
    EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(TierFsSha256, PaddingBoundaries) {
    // 55, 56 and 64 bytes straddle the one/two padding block boundary; all distinct.
    std::set<std::string> seen;
    for (size_t n : {55, 56, 57, 63, 64, 65, 119, 120}) {
        EXPECT_TRUE(seen.insert(Sha256Hex(std::string(n, 'x'))).second) << n;
    }
}

TEST(TierFsNameCodec, DesignExamples) {
    EXPECT_EQ(Encode("a/b%c"), "a%2Fb%25c");
    EXPECT_EQ(Encode("."), "%2E");
    EXPECT_EQ(Encode(".."), "%2E%2E");
}

TEST(TierFsNameCodec, ExactEncodings) {
    EXPECT_EQ(Encode("plain-key_01"), "plain-key_01");
    EXPECT_EQ(Encode("with space"), "with space");
    EXPECT_EQ(Encode("%"), "%25");
    EXPECT_EQ(Encode("/"), "%2F");
    EXPECT_EQ(Encode("//"), "%2F%2F");
    EXPECT_EQ(Encode("tab\there"), "tab%09here");
    EXPECT_EQ(Encode("line\nbreak\r"), "line%0Abreak%0D");
    EXPECT_EQ(Encode(Bytes({0x01, 0x1F, 0x20, 0x7E, 0x7F})), "%01%1F ~%7F");
    EXPECT_EQ(Encode(Bytes({0x00})), "%00");
    EXPECT_EQ(Encode("..."), "...");
    EXPECT_EQ(Encode(".a"), ".a");
    EXPECT_EQ(Encode("./"), ".%2F");
    EXPECT_EQ(Encode("/.."), "%2F..");
    EXPECT_EQ(Encode("%2E"), "%252E");
    EXPECT_EQ(Encode("a~b"), "a~b");
    EXPECT_EQ(Encode("\xC3\xA9t\xC3\xA9"), "\xC3\xA9t\xC3\xA9");              // UTF-8 kept
    EXPECT_EQ(Encode(Bytes({0xFF, 0xFE, 0x80})), Bytes({0xFF, 0xFE, 0x80}));  // not UTF-8: kept
    // Uppercase hex only.
    EXPECT_EQ(Encode(Bytes({0x1A, 0x1B, 0x0F})), "%1A%1B%0F");
}

TEST(TierFsNameCodec, EveryByte) {
    for (int b = 1; b < 256; ++b) {
        std::string key(1, static_cast<char>(b));
        std::string name = Encode(key);
        bool escaped = b == '%' || b == '/' || b < 0x20 || b == 0x7F;
        if (key == ".") {
            EXPECT_EQ(name, "%2E");
        } else if (escaped) {
            char expect[4];
            std::snprintf(expect, sizeof(expect), "%%%02X", b);
            EXPECT_EQ(name, expect) << b;
        } else {
            EXPECT_EQ(name, key) << b;
        }
        auto back = Decode(name);
        ASSERT_TRUE(back.has_value()) << b;
        EXPECT_EQ(*back, key) << b;
    }
}

TEST(TierFsNameCodec, LengthLimitIs255) {
    std::string k255(255, 'k');
    EXPECT_EQ(Encode(k255), k255);
    // 85 slashes escape to exactly 255 bytes: still a plain name.
    std::string slashes(85, '/');
    std::string name = Encode(slashes);
    EXPECT_EQ(name.size(), 255u);
    EXPECT_FALSE(IsHashedName(name));
    EXPECT_EQ(Decode(name), slashes);
    // One byte more and it is hashed.
    EXPECT_TRUE(IsHashedName(Encode(std::string(256, 'k'))));
    EXPECT_TRUE(IsHashedName(Encode(slashes + "a")));
}

TEST(TierFsNameCodec, HashedNameExact) {
    std::string key(300, 'a');
    EXPECT_EQ(Encode(key), std::string(128, 'a') + "%~" + Sha256Hex(key));
    EXPECT_EQ(HashedNameKeyPrefix(Encode(key)), std::string(128, 'a'));
}

TEST(TierFsNameCodec, HashedPrefixDoesNotSplitAnEscape) {
    // 86 slashes: 258 escaped bytes; byte 128 falls inside the 43rd "%2F".
    std::string key(86, '/');
    std::string name = Encode(key);
    std::string prefix;
    for (int i = 0; i < 42; ++i) prefix += "%2F";
    EXPECT_EQ(name, prefix + "%~" + Sha256Hex(key));
    EXPECT_EQ(HashedNameKeyPrefix(name), std::string(42, '/'));
}

TEST(TierFsNameCodec, HashedPrefixDoesNotSplitUtf8) {
    std::string key = "a";
    for (int i = 0; i < 150; ++i) key += "\xC3\xA9";  // é
    std::string name = Encode(key);
    std::string prefix = "a";
    for (int i = 0; i < 63; ++i) prefix += "\xC3\xA9";
    EXPECT_EQ(name, prefix + "%~" + Sha256Hex(key));
}

TEST(TierFsNameCodec, HashedPrefixBacksOverUtf8ThenOutOfAnEscape) {
    // The cut at 128 is before a continuation byte; one byte back it is inside "%2F".
    std::string key = std::string(125, 'a') + "/" + std::string(200, '\xA9');
    EXPECT_EQ(Encode(key), std::string(125, 'a') + "%~" + Sha256Hex(key));
}

TEST(TierFsNameCodec, HashedNamesAreDistinctAndShort) {
    std::string base(300, 'p');
    std::set<std::string> names;
    for (int i = 0; i < 1000; ++i) {
        std::string key = base + std::to_string(i);
        std::string name = Encode(key);
        EXPECT_LE(name.size(), 194u);
        EXPECT_TRUE(IsHashedName(name));
        EXPECT_FALSE(Decode(name).has_value());
        EXPECT_TRUE(names.insert(name).second);
        EXPECT_EQ(Encode(key), name);  // stable
    }
    // A 4096-byte key (the longest) also gets a short name.
    EXPECT_LE(Encode(std::string(4096, '/')).size(), 255u);
}

TEST(TierFsNameCodec, PlainNamesNeverLookHashed) {
    std::string hex = Sha256Hex("anything");
    // A key that spells a hashed name's marker gets its '%' escaped: never a hashed name.
    std::string tricky = "x%~" + hex;
    EXPECT_EQ(Encode(tricky), "x%25~" + hex);
    EXPECT_FALSE(IsHashedName(Encode(tricky)));
    EXPECT_EQ(Decode(Encode(tricky)), tricky);
    std::string tilde = "x~" + hex;
    EXPECT_EQ(Encode(tilde), tilde);
    EXPECT_FALSE(IsHashedName(tilde));
}

TEST(TierFsNameCodec, DecodeRefusesNonCanonicalNames) {
    EXPECT_FALSE(Decode("").has_value());
    EXPECT_FALSE(Decode(".").has_value());
    EXPECT_FALSE(Decode("..").has_value());
    EXPECT_FALSE(Decode("%41").has_value());  // 'A' is never escaped
    EXPECT_FALSE(Decode("%2f").has_value());  // lowercase hex
    EXPECT_FALSE(Decode("%2").has_value());   // truncated
    EXPECT_FALSE(Decode("%").has_value());
    EXPECT_FALSE(Decode("a%G0").has_value());
    EXPECT_FALSE(Decode("%2E.").has_value());  // only "." and ".." have their dots escaped
    EXPECT_FALSE(Decode("%2E%2E%2E").has_value());
    EXPECT_FALSE(Decode(Bytes({'a', 0x01})).has_value());  // raw control byte
    EXPECT_FALSE(Decode(Bytes({'a', 0x7F})).has_value());
    EXPECT_FALSE(Decode("a/b").has_value());
    EXPECT_FALSE(Decode(std::string(256, 'a')).has_value());
    EXPECT_FALSE(Decode(std::string(100, 'a') + "%~" + Sha256Hex("k")).has_value());
}

TEST(TierFsNameCodec, DecodeExamples) {
    EXPECT_EQ(Decode("a%2Fb%25c"), "a/b%c");
    EXPECT_EQ(Decode("%2E"), ".");
    EXPECT_EQ(Decode("%2E%2E"), "..");
    EXPECT_EQ(Decode("with space"), "with space");
    EXPECT_EQ(Decode("%00"), Bytes({0}));
}

TEST(TierFsNameCodec, IsHashedNameShape) {
    std::string hex = Sha256Hex("k");
    EXPECT_TRUE(IsHashedName("%~" + hex));
    EXPECT_TRUE(IsHashedName(std::string(128, 'a') + "%~" + hex));
    EXPECT_FALSE(IsHashedName(std::string(129, 'a') + "%~" + hex));  // prefix too long
    EXPECT_FALSE(IsHashedName("a%~" + hex.substr(1)));               // 63 digits
    std::string upper = hex;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (upper != hex) {
        EXPECT_FALSE(IsHashedName("a%~" + upper));
    }
    EXPECT_FALSE(IsHashedName("a~" + hex));
    EXPECT_FALSE(IsHashedName("plain"));
}

// Round trip of the odd keys the mount tests also use.
TEST(TierFsNameCodec, OddKeysRoundTrip) {
    std::vector<std::string> keys = {
        "a/b%c",
        "/",
        "%",
        "%%",
        "%25",
        " ",
        " lead",
        "trail ",
        "two  spaces",
        ".",
        "..",
        "...",
        ".hidden",
        "a/../b",
        Bytes({0x01, 0x02, 0x1F}),
        Bytes({'x', 0x7F, 'y'}),
        "new\nline",
        Bytes({0xFF, 0xFE, 0xFD}),
        "\xC3\xA9\xE2\x82\xAC",
        "~",
        "%~",
        std::string(300, 'z'),
        std::string(300, '/'),
        std::string(300, '%'),
        std::string(4096, 'q'),
        std::string(254, 'x') + "/",
    };
    std::set<std::string> names;
    for (const std::string& key : keys) {
        std::string name = Encode(key);
        SCOPED_TRACE(name);
        EXPECT_FALSE(name.empty());
        EXPECT_LE(name.size(), 255u);
        EXPECT_EQ(name.find('/'), std::string::npos);
        EXPECT_EQ(name.find('\0'), std::string::npos);
        EXPECT_NE(name, ".");
        EXPECT_NE(name, "..");
        EXPECT_TRUE(names.insert(name).second);
        if (IsHashedName(name)) {
            auto prefix = HashedNameKeyPrefix(name);
            ASSERT_TRUE(prefix.has_value());
            EXPECT_EQ(key.substr(0, prefix->size()), *prefix);
        } else {
            EXPECT_EQ(Decode(name), key);
        }
    }
}

// A seeded fuzz: random keys round trip; random names that decode re-encode to themselves.
TEST(TierFsNameCodec, RandomRoundTrips) {
    std::mt19937 rng(20240601);
    std::uniform_int_distribution<int> byte(1, 255);
    std::uniform_int_distribution<int> length(1, 400);
    const std::string alphabet = "%/.~aZ09 \x01\x7F\xC3\xA9";
    std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
    for (int i = 0; i < 5000; ++i) {
        std::string key;
        int n = length(rng);
        for (int j = 0; j < n; ++j) {
            key.push_back(i % 2 ? static_cast<char>(byte(rng)) : alphabet[pick(rng)]);
        }
        std::string name = Encode(key);
        ASSERT_LE(name.size(), 255u);
        ASSERT_EQ(name.find('/'), std::string::npos);
        if (IsHashedName(name)) {
            auto prefix = HashedNameKeyPrefix(name);
            ASSERT_TRUE(prefix.has_value());
            ASSERT_EQ(key.compare(0, prefix->size(), *prefix), 0);
        } else {
            ASSERT_EQ(Decode(name), key);
        }
        // Mutate the name: whatever decodes must be canonical.
        std::string mutated = name;
        if (!mutated.empty()) mutated[rng() % mutated.size()] = alphabet[pick(rng)];
        if (auto back = Decode(mutated)) {
            ASSERT_EQ(Encode(*back), mutated);
        }
    }
}

}  // namespace
}  // namespace mooncake::tierfs
