#include "core/base/knobs.h"

#include <gtest/gtest.h>

#include "core/base/types.h"

namespace mooncake {
namespace {

TEST(KnobsTest, DefaultsMatchTheTable) {
    Config config;
    EXPECT_EQ(config.promotion_admission_threshold(), 2);
    EXPECT_EQ(config.promotion_queue_limit(), 50000);
    EXPECT_EQ(config.promotion_task_timeout_sec(), 30);
    EXPECT_FALSE(config.promotion_drop_source());
    EXPECT_DOUBLE_EQ(config.eviction_high_watermark_ratio(), 0.95);
    EXPECT_EQ(config.role(), "standalone");
    EXPECT_EQ(config.listen(), "127.0.0.1:50051");
    EXPECT_EQ(config.metrics_port(), 9003);
    for (const KnobDef& def : KnobTable()) {
        EXPECT_EQ(*config.GetText(def.name), config.GetText(def.id)) << def.name;
        EXPECT_FALSE(def.doc.empty()) << def.name;
    }
}

TEST(KnobsTest, SetParsesEachType) {
    Config config;
    ASSERT_TRUE(config.Set("promotion_on_hit", "false").ok());
    EXPECT_FALSE(config.promotion_on_hit());
    ASSERT_TRUE(config.Set("promotion_on_hit", "true").ok());
    EXPECT_TRUE(config.promotion_on_hit());
    ASSERT_TRUE(config.Set("promotion_admission_threshold", "255").ok());
    EXPECT_EQ(config.promotion_admission_threshold(), 255);
    ASSERT_TRUE(config.Set("eviction_high_watermark_ratio", "0.8").ok());
    EXPECT_DOUBLE_EQ(config.eviction_high_watermark_ratio(), 0.8);
    ASSERT_TRUE(config.Set("dram_size", "64MiB").ok());
    EXPECT_EQ(config.dram_size(), 64u << 20);
    EXPECT_EQ(config.GetText(KnobId::dram_size), "64MiB");
    ASSERT_TRUE(config.Set("role", "master").ok());
    EXPECT_EQ(config.role(), "master");
}

TEST(KnobsTest, BadValuesAreRefusedNamingTheRangeAndChangeNothing) {
    Config config;
    Status st = config.Set("promotion_admission_threshold", "256");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("0..255"), std::string::npos) << st.message();
    EXPECT_EQ(config.promotion_admission_threshold(), 2);
    EXPECT_FALSE(config.Set("promotion_admission_threshold", "two").ok());
    EXPECT_FALSE(config.Set("promotion_admission_threshold", "").ok());
    EXPECT_FALSE(config.Set("promotion_on_hit", "maybe").ok());
    EXPECT_FALSE(config.Set("eviction_ratio", "nan").ok());
    EXPECT_FALSE(config.Set("role", "worker").ok());
    EXPECT_FALSE(config.Set("dram_size", "12 parsecs").ok());
    Status unknown = config.Set("no_such_knob", "1");
    EXPECT_NE(unknown.message().find("unknown knob"), std::string::npos);
}

TEST(KnobsTest, RuntimeModeRefusesStartOnlyKnobs) {
    Config config;
    Status st = config.Set("dram_size", "1GiB", SetMode::kRuntime);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("start-up only"), std::string::npos);
    EXPECT_TRUE(config.Set("promotion_admission_threshold", "5", SetMode::kRuntime).ok());
}

TEST(KnobsTest, SetManyIsAllOrNothing) {
    Config config;
    Status st = config.SetMany({{"promotion_admission_threshold", "7"}, {"eviction_ratio", "2"}},
                               SetMode::kRuntime);
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(config.promotion_admission_threshold(), 2);
}

TEST(KnobsTest, CrossKnobRuleEvictionRatioBelowWatermark) {
    Config config;
    Status st = config.Set("eviction_ratio", "0.99");
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("eviction_high_watermark_ratio"), std::string::npos);
}

TEST(KnobsTest, ConfigTextWithCommentsAndErrorsNamingTheLine) {
    Config config;
    ASSERT_TRUE(config
                    .ParseConfigText("# comment\n\npromotion_queue_limit = 10  # inline\n"
                                     "enable_offload=false\n",
                                     "test.conf")
                    .ok());
    EXPECT_EQ(config.promotion_queue_limit(), 10);
    EXPECT_FALSE(config.enable_offload());
    Status st = config.ParseConfigText("promotion_queue_limit = 3\nbogus line\n", "x.conf");
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("x.conf:2"), std::string::npos) << st.message();
    EXPECT_EQ(config.promotion_queue_limit(), 10);  // nothing applied
}

TEST(TypesTest, ParseSizeUnits) {
    EXPECT_EQ(*ParseSize("4096"), 4096u);
    EXPECT_EQ(*ParseSize("64MiB"), 64u << 20);
    EXPECT_EQ(*ParseSize("1GiB"), 1u << 30);
    EXPECT_EQ(*ParseSize("512k"), 512u << 10);
    EXPECT_FALSE(ParseSize("").ok());
    EXPECT_FALSE(ParseSize("MiB").ok());
    EXPECT_FALSE(ParseSize("99999999999999999999").ok());
    EXPECT_FALSE(ParseSize("17179869184TiB").ok());
}

TEST(TypesTest, ParseSizeTakesADecimalFraction) {
    EXPECT_EQ(*ParseSize("1.5GiB"), 1610612736u);
    EXPECT_EQ(*ParseSize("0.5KiB"), 512u);
    EXPECT_EQ(*ParseSize("2.25 MiB"), (2u << 20) + (1u << 18));
    EXPECT_EQ(*ParseSize("1.1KiB"), 1126u);  // rounded down to whole bytes
    EXPECT_EQ(*ParseSize("1.0TiB"), uint64_t{1} << 40);
    EXPECT_FALSE(ParseSize("1.5").ok());   // a fraction of a byte
    EXPECT_FALSE(ParseSize("1.5B").ok());
    EXPECT_FALSE(ParseSize("1.GiB").ok());
    EXPECT_FALSE(ParseSize("1.5.5").ok());
    EXPECT_FALSE(ParseSize(".5GiB").ok());
    EXPECT_FALSE(ParseSize("1.1234567GiB").ok());
}

TEST(KnobsTest, BooleansInAnyCaseAndTheMessageListsWhatIsAccepted) {
    Config config;
    for (const char* yes : {"TRUE", "True", "true", "1", "YES", "On"}) {
        ASSERT_TRUE(config.Set("promotion_drop_source", "false").ok());
        ASSERT_TRUE(config.Set("promotion_drop_source", yes).ok()) << yes;
        EXPECT_TRUE(config.promotion_drop_source()) << yes;
    }
    for (const char* no : {"FALSE", "False", "0", "No", "OFF"}) {
        ASSERT_TRUE(config.Set("promotion_drop_source", "true").ok());
        ASSERT_TRUE(config.Set("promotion_drop_source", no).ok()) << no;
        EXPECT_FALSE(config.promotion_drop_source()) << no;
    }
    Status st = config.Set("promotion_drop_source", "maybe");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("true|false, 1|0, yes|no, on|off"), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("any case"), std::string::npos) << st.message();
}

TEST(KnobsTest, CheckAssignmentJudgesOneValueWithoutChangingAnything) {
    EXPECT_TRUE(Config::CheckAssignment("max_value_size", "1.5GiB", SetMode::kRuntime).ok());
    EXPECT_FALSE(Config::CheckAssignment("max_value_size", "lots", SetMode::kRuntime).ok());
    EXPECT_FALSE(
        Config::CheckAssignment("promotion_admission_threshold", "256", SetMode::kRuntime).ok());
    EXPECT_FALSE(Config::CheckAssignment("no_such_knob", "1", SetMode::kRuntime).ok());
    EXPECT_FALSE(Config::CheckAssignment("dram_size", "1GiB", SetMode::kRuntime).ok());
    EXPECT_TRUE(Config::CheckAssignment("dram_size", "1GiB", SetMode::kStartup).ok());
}

TEST(TypesTest, KeyRules) {
    EXPECT_TRUE(ValidateKey("a").ok());
    EXPECT_TRUE(ValidateKey(std::string(4096, 'k')).ok());
    EXPECT_EQ(ValidateKey("").code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(ValidateKey(std::string(4097, 'k')).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(ValidateKey(std::string("a\0b", 3)).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mooncake
