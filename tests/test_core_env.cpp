// env_choice: unset gives the fallback, an allowed value passes, anything else is an error that
// names the variable and the choices.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/env.h"

namespace orochi {
namespace {

TEST(EnvChoice, FallbackAllowedValueAndError) {
  const char* name = "OROCHI_TEST_ENV_CHOICE";
  unsetenv(name);
  Expected<std::string> unset = env_choice(name, {"cudnn", "flash"}, "flash");
  ASSERT_TRUE(unset.has_value());
  EXPECT_EQ(*unset, "flash");

  setenv(name, "cudnn", 1);
  Expected<std::string> allowed = env_choice(name, {"cudnn", "flash"}, "flash");
  ASSERT_TRUE(allowed.has_value());
  EXPECT_EQ(*allowed, "cudnn");

  setenv(name, "fast", 1);
  Expected<std::string> bad = env_choice(name, {"a", "b", "c"}, "a");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "OROCHI_TEST_ENV_CHOICE must be a, b or c, got 'fast'");
  unsetenv(name);
}

}  // namespace
}  // namespace orochi
