#include "cli/text.h"

#include <gtest/gtest.h>

#include <chrono>

namespace mooncake::cli {
namespace {

using namespace std::chrono_literals;

TEST(Utf8, Validity) {
    EXPECT_TRUE(IsValidUtf8(""));
    EXPECT_TRUE(IsValidUtf8("plain/key with spaces"));
    EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
    EXPECT_FALSE(IsValidUtf8("\xff"));
    EXPECT_FALSE(IsValidUtf8("\xc3"));
    EXPECT_FALSE(IsValidUtf8("\xe2\x82"));
    EXPECT_FALSE(IsValidUtf8("\xc1\xbf"));          // overlong
    EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong
    EXPECT_FALSE(IsValidUtf8("\xed\xb0\x80"));      // surrogate
    EXPECT_FALSE(IsValidUtf8("\xf5\x80\x80\x80"));  // beyond U+10FFFF
}

TEST(Base64, RoundTripsEveryLength) {
    std::string bytes;
    for (int i = 0; i < 300; ++i) {
        std::string encoded = Base64Encode(bytes);
        EXPECT_EQ(encoded.size() % 4, 0u);
        auto decoded = Base64Decode(encoded);
        ASSERT_TRUE(decoded.has_value()) << encoded;
        EXPECT_EQ(*decoded, bytes);
        bytes += static_cast<char>(i * 37 + 11);
    }
}

TEST(Base64, KnownVectors) {
    EXPECT_EQ(Base64Encode("f"), "Zg==");
    EXPECT_EQ(Base64Encode("fo"), "Zm8=");
    EXPECT_EQ(Base64Encode("foo"), "Zm9v");
    EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(Base64Encode("\xff\xfe"), "//4=");
    EXPECT_FALSE(Base64Decode("Zg=").has_value());
    EXPECT_FALSE(Base64Decode("Z!==").has_value());
}

TEST(DisplayKey, EscapesWhatATerminalWouldMangle) {
    EXPECT_EQ(DisplayKey("a b/c"), "a b/c");
    EXPECT_EQ(DisplayKey("caf\xc3\xa9"), "caf\xc3\xa9");
    EXPECT_EQ(DisplayKey("a\nb\x7f"), "a\\x0Ab\\x7F");
    EXPECT_EQ(DisplayKey("a\\b"), "a\\x5Cb");
    EXPECT_EQ(DisplayKey("\xff"), "\\xFF");
}

TEST(DisplayWidth, CountsCodePoints) {
    EXPECT_EQ(DisplayWidth("abc"), 3u);
    EXPECT_EQ(DisplayWidth("caf\xc3\xa9"), 4u);
    EXPECT_EQ(DisplayWidth("\xff\xfe"), 2u);
}

TEST(HumanSize, BinaryUnits) {
    EXPECT_EQ(HumanSize(0), "0 B");
    EXPECT_EQ(HumanSize(1023), "1023 B");
    EXPECT_EQ(HumanSize(1024), "1 KiB");
    EXPECT_EQ(HumanSize(1536), "1.5 KiB");
    EXPECT_EQ(HumanSize(64ull << 20), "64 MiB");
    EXPECT_EQ(HumanSize((21ull << 20) + 6), "21 MiB");
    EXPECT_EQ(HumanSize(247ull << 20), "247 MiB");
    EXPECT_EQ(HumanSize((1ull << 30) + (1ull << 29)), "1.5 GiB");
    EXPECT_EQ(HumanSize(1ull << 40), "1 TiB");
}

TEST(HumanDuration, Units) {
    EXPECT_EQ(HumanDuration(0ns), "0s");
    EXPECT_EQ(HumanDuration(-5ms), "0s");
    EXPECT_EQ(HumanDuration(850ms), "850ms");
    EXPECT_EQ(HumanDuration(3200ms), "3.2s");
    EXPECT_EQ(HumanDuration(125s), "2m05s");
    EXPECT_EQ(HumanDuration(3720s), "1h02m");
    EXPECT_EQ(HumanDuration(std::chrono::hours(76)), "3d04h");
}

}  // namespace
}  // namespace mooncake::cli
