// The orochi binary as a user runs it: exit codes and the words a user needs to see.
#include <gtest/gtest.h>

#include <string>

#include "support/cli.h"
#include "support/paths.h"

namespace {

using Result = orochi::testing::CliResult;
Result run(const std::string& args) { return orochi::testing::run_orochi(args); }

const std::string kData = orochi::testing::test_data_dir();

TEST(Cli, ForwardOnTheBuiltInDemoModel) {
  const Result r = run("forward");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("built-in tiny demo model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("video velocity [56, 16]"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("NOT FINITE"), std::string::npos) << r.output;
}

TEST(Cli, ForwardIsDeterministicAndJson) {
  const Result a = run("forward --json --seed 7"), b = run("forward --json --seed 7");
  ASSERT_EQ(a.code, 0) << a.output;
  auto strip_times = [](std::string s) {
    std::string out;
    for (size_t pos = 0; pos < s.size();) {
      size_t eol = s.find('\n', pos);
      if (eol == std::string::npos) eol = s.size();
      const std::string line = s.substr(pos, eol - pos);
      if (line.find("_s\"") == std::string::npos) out += line + "\n";
      pos = eol + 1;
    }
    return out;
  };
  EXPECT_EQ(strip_times(a.output), strip_times(b.output));
  EXPECT_NE(a.output.find("\"forward_s\""), std::string::npos);
}

TEST(Cli, ForwardOnACheckpointFolder) {
  const Result r = run("forward " + kData + "/h3_tiny/transformer --width 64 --height 64 --frames 5");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("packed sequence"), std::string::npos) << r.output;
}

TEST(Cli, InspectCheckpoint) {
  const Result r = run("inspect " + kData + "/h3_tiny/transformer");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("diffusers names"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("adaln"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("52.13 K"), std::string::npos) << r.output;  // 52,134 parameters
}

TEST(Cli, BadInputGetsAClearError) {
  Result r = run("inspect /nonexistent/model");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("not found"), std::string::npos) << r.output;
  r = run("forward --frames 100");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("90 and 107"), std::string::npos) << r.output;
  r = run("forward --width 100");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("multiple of 32"), std::string::npos) << r.output;
  r = run("forward --seed x");  // usage errors exit 2 (issue 21)
  EXPECT_EQ(r.code, 2);
  r = run("forward --bogus 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("--bogus"), std::string::npos) << r.output;
  r = run("frobnicate");
  EXPECT_EQ(r.code, 2);
}

// `bench text` checks its options before it looks for a GPU, so these hold on any build.
TEST(Cli, BenchTextRefusesInconsistentOptions) {
  struct Case {
    const char* args;
    const char* says;
    int code;  // 2: a value outside its option's range (usage); 1: options that do not go together
  };
  for (const Case& c : {Case{"bench text --layers 20 --stream-layers 21", "--stream-layers must be in 0..--layers", 1},
                        Case{"bench text --stream-layers 2 --slots 0", "--slots must be an integer in [1, 64]", 2},
                        Case{"bench text --tier disk", "--tier must be one of host, peer", 2},
                        Case{"bench text --write-checkpoint /tmp/x --stream-layers 3", "every layer resident", 1},
                        Case{"bench text --write-checkpoint /tmp/x --checkpoint /tmp/y", "every layer resident", 1},
                        Case{"bench text --layers 65", "--layers must be an integer in [1, 64]", 2}}) {
    const Result r = run(c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
