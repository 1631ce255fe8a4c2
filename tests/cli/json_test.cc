#include "cli/json.h"

#include <gtest/gtest.h>

namespace mooncake::cli {
namespace {

TEST(JsonQuote, EscapesQuotesBackslashAndControlCharacters) {
    EXPECT_EQ(JsonQuote("a\"b\\c"), R"("a\"b\\c")");
    EXPECT_EQ(JsonQuote("\b\f\n\r\t"), R"("\b\f\n\r\t")");
    EXPECT_EQ(JsonQuote(std::string("\x01\x1f\x7f", 3)), R"("\u0001\u001f\u007f")");
    EXPECT_EQ(JsonQuote(std::string("a\0b", 3)), R"("a\u0000b")");
}

TEST(JsonQuote, KeepsValidUtf8) {
    EXPECT_EQ(JsonQuote("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80"),
              "\"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80\"");
}

TEST(JsonQuote, EscapesLineSeparators) {
    EXPECT_EQ(JsonQuote("\xe2\x80\xa8\xe2\x80\xa9"), R"("\u2028\u2029")");
}

TEST(JsonQuote, InvalidBytesBecomeLoneSurrogates) {
    EXPECT_EQ(JsonQuote("a\xff"), R"("a\udcff")");
    EXPECT_EQ(JsonQuote("\xc3"), R"("\udcc3")");                      // truncated sequence
    EXPECT_EQ(JsonQuote("\xc0\xaf"), R"("\udcc0\udcaf")");            // overlong '/'
    EXPECT_EQ(JsonQuote("\xed\xa0\x80"), R"("\udced\udca0\udc80")");  // encoded surrogate
    EXPECT_EQ(JsonQuote("\xf4\x90\x80\x80"), R"("\udcf4\udc90\udc80\udc80")");  // > U+10FFFF
}

TEST(IsJsonNumber, FollowsTheGrammar) {
    for (const char* ok : {"0", "-0", "12", "0.95", "-1.5e-3", "1E10", "1e+2"}) {
        EXPECT_TRUE(IsJsonNumber(ok)) << ok;
    }
    for (const char* bad : {"", "-", "01", "1.", ".5", "+1", "1e", "inf", "nan", "0x10", "1 "}) {
        EXPECT_FALSE(IsJsonNumber(bad)) << bad;
    }
}

TEST(JsonWriter, WritesNestedDocumentsIndented) {
    JsonWriter json;
    json.BeginObject();
    json.Key("key");
    json.String("k");
    json.Key("size");
    json.Uint(18446744073709551615ull);
    json.Key("neg");
    json.Int(-5);
    json.Key("tiers");
    json.BeginArray();
    json.String("MEMORY");
    json.String("LOCAL_DISK");
    json.EndArray();
    json.Key("replicas");
    json.BeginArray();
    json.BeginObject();
    json.Key("ok");
    json.Bool(true);
    json.Key("none");
    json.Null();
    json.EndObject();
    json.EndArray();
    json.Key("empty");
    json.BeginArray();
    json.EndArray();
    json.Key("obj");
    json.BeginObject();
    json.EndObject();
    json.EndObject();
    EXPECT_EQ(json.Finish(), R"({
  "key": "k",
  "size": 18446744073709551615,
  "neg": -5,
  "tiers": ["MEMORY", "LOCAL_DISK"],
  "replicas": [
    {
      "ok": true,
      "none": null
    }
  ],
  "empty": [],
  "obj": {}
}
)");
}

TEST(JsonWriter, CompactMode) {
    JsonWriter json(/*pretty=*/false);
    json.BeginArray();
    json.Int(1);
    json.BeginObject();
    json.Key("a");
    json.String("x, y");
    json.EndObject();
    json.EndArray();
    EXPECT_EQ(json.Finish(), "[1,{\"a\":\"x, y\"}]\n");
}

TEST(JsonWriter, ScalarArrayFlatteningKeepsStringContents) {
    JsonWriter json;
    json.BeginArray();
    json.String("a,\n  b");  // the newline is escaped, so it survives flattening
    json.String("c");
    json.EndArray();
    EXPECT_EQ(json.Finish(), "[\"a,\\n  b\", \"c\"]\n");
}

TEST(JsonWriter, Doubles) {
    JsonWriter json;
    json.BeginArray();
    json.Double(0.95);
    json.Double(0.1);
    json.Double(1e300);
    json.Double(2.0);
    json.Double(std::numeric_limits<double>::infinity());
    json.EndArray();
    EXPECT_EQ(json.Finish(), "[0.95, 0.1, 1e+300, 2, null]\n");
}

TEST(JsonWriter, NumberOrString) {
    JsonWriter json;
    json.BeginArray();
    json.NumberOrString("0.95");
    json.NumberOrString("NaN");
    json.NumberOrString("+Inf");
    json.EndArray();
    EXPECT_EQ(json.Finish(), "[0.95, \"NaN\", \"+Inf\"]\n");
}

TEST(JsonWriter, TopLevelScalar) {
    JsonWriter json;
    json.String("x");
    EXPECT_EQ(json.Finish(), "\"x\"\n");
}

}  // namespace
}  // namespace mooncake::cli
