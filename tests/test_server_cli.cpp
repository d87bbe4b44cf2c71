// `orochi serve`'s command line: help like every command's, usage errors exit 2 before any model is
// opened or port taken, and a build without cpp-httplib says so.
#include <gtest/gtest.h>

#include <string>

#include "support/cli.h"

namespace orochi {
namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(ServerCli, HelpAndUsageErrors) {
  const testing::CliResult help = testing::run_orochi("serve --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(contains(help.output, "usage: orochi serve")) << help.output;
  EXPECT_EQ(testing::run_orochi("help serve").output, help.output);
  EXPECT_TRUE(contains(testing::run_orochi("help").output, "serve [DIR]"));
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{{"serve --bogus 1", "unknown option --bogus"},
                                         {"serve --port", "--port needs a value"},
                                         {"serve --port x", "--port wants an integer"},
                                         {"serve --port 70000", "--port must be"},
                                         {"serve --queue-max 0", "--queue-max must be"},
                                         {"serve --max-upload-mb 0", "--max-upload-mb must be"},
                                         {"serve a b", "serve takes at most one MODEL_DIR"},
                                         {"serve --api-key k --api-key-file f", "not both"},
                                         {"serve --api-key=", "--api-key needs a key"},
                                         {"serve --qkv-order thirds", "describe a --transformer FILE"},
                                         {"serve --quiet --quiet", "--quiet is given twice"}}) {
    const testing::CliResult r = testing::run_orochi(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.args << "\n" << r.output;
  }
  const testing::CliResult key_file = testing::run_orochi("serve --api-key-file /nonexistent/key");
  EXPECT_EQ(key_file.code, 1) << key_file.output;
  EXPECT_TRUE(contains(key_file.output, "cannot be read")) << key_file.output;
  const testing::CliResult lora_dir = testing::run_orochi("serve --lora-dir /nonexistent/loras");
  EXPECT_EQ(lora_dir.code, 1) << lora_dir.output;
  EXPECT_TRUE(contains(lora_dir.output, "--lora-dir /nonexistent/loras: not a folder")) << lora_dir.output;
}

}  // namespace
}  // namespace orochi
