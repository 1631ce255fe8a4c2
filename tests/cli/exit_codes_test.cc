#include "cli/exit_codes.h"

#include <gtest/gtest.h>

#include <vector>

#include "cli/commands.h"

namespace mooncake::cli {
namespace {

TEST(ExitCodes, AreTheContractNumbers) {
    EXPECT_EQ(kExitOk, 0);
    EXPECT_EQ(kExitFailed, 1);
    EXPECT_EQ(kExitUsage, 2);
    EXPECT_EQ(kExitNotFound, 3);
    EXPECT_EQ(kExitUnreachable, 4);
}

TEST(ExitCodes, FromStatus) {
    EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
    EXPECT_EQ(ExitCodeFor(Status::NotFound("x")), 3);
    EXPECT_EQ(ExitCodeFor(Status::Unavailable("x")), 4);
    EXPECT_EQ(ExitCodeFor(Status::Timeout("x")), 4);
    for (StatusCode code :
         {StatusCode::kAlreadyExists, StatusCode::kNoSpace, StatusCode::kInvalidArgument,
          StatusCode::kHasLease, StatusCode::kNotReady, StatusCode::kIllegalClient,
          StatusCode::kStaleGeneration, StatusCode::kUnknownNode, StatusCode::kBusy,
          StatusCode::kIoError, StatusCode::kCorruption, StatusCode::kInternal}) {
        EXPECT_EQ(ExitCodeFor(code), 1) << StatusCodeName(code);
    }
}

TEST(ExitCodes, FromCli11) {
    EXPECT_EQ(ExitCodeFromCli11(0), 0);  // --help
    for (int code : {100, 105, 106, 107, 108, 109, 110, 112, 113, 127, 255}) {
        EXPECT_EQ(ExitCodeFromCli11(code), 2) << code;
    }
    // And for real: CLI11 codes of actual parse errors.
    EXPECT_EQ(ExitCodeFromCli11(CLI::ExtrasError(std::vector<std::string>{"x"}).get_exit_code()),
              2);
    EXPECT_EQ(ExitCodeFromCli11(CLI::RequiredError("x").get_exit_code()), 2);
    EXPECT_EQ(ExitCodeFromCli11(CLI::ValidationError("x").get_exit_code()), 2);
    EXPECT_EQ(ExitCodeFromCli11(CLI::CallForHelp().get_exit_code()), 0);
}

TEST(ExitCodes, Combine) {
    auto combine = [](std::vector<int> codes) { return CombineExitCodes(codes); };
    EXPECT_EQ(combine({}), 0);
    EXPECT_EQ(combine({0, 0}), 0);
    EXPECT_EQ(combine({0, 3}), 3);
    EXPECT_EQ(combine({3, 3}), 3);
    EXPECT_EQ(combine({3, 1, 0}), 1);
    EXPECT_EQ(combine({1, 4, 3}), 4);
}

int RunCtl(std::vector<const char*> args) {
    args.insert(args.begin(), "mooncakectl");
    return RunMooncakectl(static_cast<int>(args.size()), args.data());
}

// Nothing listens on port 1 of loopback: connection refused at once.
constexpr const char* kDeadMaster = "127.0.0.1:1";

TEST(CommandLine, UsageErrorsAre2) {
    EXPECT_EQ(RunCtl({}), 2);
    EXPECT_EQ(RunCtl({"frob"}), 2);
    EXPECT_EQ(RunCtl({"--bogus", "ls"}), 2);
    EXPECT_EQ(RunCtl({"ls", "--tier", "DRAM"}), 2);
    EXPECT_EQ(RunCtl({"ls", "--limit", "0"}), 2);
    EXPECT_EQ(RunCtl({"ls", "--limit", "x"}), 2);
    EXPECT_EQ(RunCtl({"stat"}), 2);
    EXPECT_EQ(RunCtl({"stat", "a", "b"}), 2);
    EXPECT_EQ(RunCtl({"--master", "nohost", "ls"}), 2);
    EXPECT_EQ(RunCtl({"--master", "h:70000", "ls"}), 2);
    EXPECT_EQ(RunCtl({"tune"}), 2);
    EXPECT_EQ(RunCtl({"tune", "frob"}), 2);
    EXPECT_EQ(RunCtl({"tune", "set"}), 2);
    EXPECT_EQ(RunCtl({"--master", kDeadMaster, "tune", "set", "novalue"}), 2);
    EXPECT_EQ(RunCtl({"--master", kDeadMaster, "promote"}), 2);
    EXPECT_EQ(RunCtl({"--master", kDeadMaster, "promote", "k", "--prefix", "p"}), 2);
    EXPECT_EQ(RunCtl({"--master", kDeadMaster, "rm"}), 2);
    EXPECT_EQ(RunCtl({"promote", "--timeout", "5", "k"}), 2);  // --timeout needs --wait
    EXPECT_EQ(RunCtl({"promote", "--wait", "--timeout", "-1", "k"}), 2);
    EXPECT_EQ(RunCtl({"--master", kDeadMaster, "stat", ""}), 2);  // empty key
    std::string long_key(4097, 'k');
    EXPECT_EQ(RunCtl({"--master", kDeadMaster, "stat", long_key.c_str()}), 2);
}

TEST(CommandLine, HelpIs0) {
    testing::internal::CaptureStdout();
    EXPECT_EQ(RunCtl({"--help"}), 0);
    EXPECT_EQ(RunCtl({"promote", "--help"}), 0);
    EXPECT_EQ(RunCtl({"--version"}), 0);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("mooncakectl (mooncake-tier)"), std::string::npos);
}

TEST(CommandLine, UnreachableDaemonIs4) {
    EXPECT_EQ(RunCtl({"--master", kDeadMaster, "nodes"}), 4);
    EXPECT_EQ(RunCtl({"--master", kDeadMaster, "--json", "stat", "k"}), 4);
    EXPECT_EQ(RunCtl({"stat", "k", "--master", kDeadMaster}),
              4);  // global options after the command
}

}  // namespace
}  // namespace mooncake::cli
