// core/env: a set variable's value, none when unset, and the names under a prefix (what the options
// layer checks for typos).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/env.h"

namespace orochi {
namespace {

TEST(Env, ValueNoneAndNamesWithPrefix) {
  const char* name = "OROCHI_TEST_ENV_VALUE";
  unsetenv(name);
  EXPECT_FALSE(env_value(name).has_value());
  setenv(name, "", 1);
  ASSERT_TRUE(env_value(name).has_value());
  EXPECT_EQ(*env_value(name), "");
  setenv(name, "cudnn", 1);
  EXPECT_EQ(*env_value(name), "cudnn");
  const std::vector<std::string> names = env_names_with_prefix("OROCHI_TEST_ENV_");
  EXPECT_EQ(names, std::vector<std::string>{name});
  unsetenv(name);
  EXPECT_TRUE(env_names_with_prefix("OROCHI_TEST_ENV_").empty());
}

}  // namespace
}  // namespace orochi
