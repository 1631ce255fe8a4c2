// etc/mooncake.conf.example documents every knob at its default, and parses.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/base/knobs.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace mooncake {
namespace {

TEST(ConfigExampleTest, ListsEveryKnobAtItsDefaultAndParses) {
    std::ifstream in(std::string(MOONCAKE_SOURCE_DIR) + "/etc/mooncake.conf.example");
    ASSERT_TRUE(in) << "etc/mooncake.conf.example missing";
    std::regex setting(R"(^# ([a-z_]+) =(.*)$)");
    std::set<std::string> listed;
    std::string uncommented;
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!std::regex_match(line, m, setting)) continue;
        const KnobDef* def = FindKnob(m[1].str());
        ASSERT_NE(def, nullptr) << "unknown knob in the example: " << m[1];
        std::string value = m[2].str();
        if (!value.empty() && value.front() == ' ') value.erase(0, 1);
        EXPECT_EQ(value, def->default_text) << def->name;
        listed.insert(m[1].str());
        uncommented += line.substr(2) + "\n";
    }
    for (const KnobDef& def : KnobTable()) {
        EXPECT_TRUE(listed.count(std::string(def.name))) << "not in the example: " << def.name;
    }
    Config config;
    Status st = config.ParseConfigText(uncommented, "mooncake.conf.example");
    EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(ConfigExampleTest, IsWhatPrintConfigWrites) {
    std::string path = std::string(MOONCAKE_SOURCE_DIR) + "/etc/mooncake.conf.example";
    std::ifstream in(path);
    std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    FILE* pipe = ::popen((test::MooncakedPath() + " --print_config").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string printed;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) printed.append(buf, n);
    EXPECT_EQ(::pclose(pipe), 0);
    EXPECT_TRUE(file == printed)
        << "etc/mooncake.conf.example is stale; regenerate it with\n  mooncaked --print_config "
           "> etc/mooncake.conf.example";
}

}  // namespace
}  // namespace mooncake
