// core/format.h: the text helpers the plan, the reports and the progress lines are made of.
#include <gtest/gtest.h>

#include <string>

#include "core/format.h"

namespace orochi {
namespace {

// A plan's pool line lists every buffer of a pool: thousands of characters. It used to be cut at
// 511 (and its newline with it, so the next pool's line ran on after the cut).
TEST(CoreFormat, PrintfKeepsLongTextWhole) {
  const std::string long_text(3000, 'x');
  const std::string line = format_printf("    %-13s %6.2f  %s\n", "request state", 0.15, long_text.c_str());
  EXPECT_EQ(line.size(), 4 + 13 + 1 + 6 + 2 + long_text.size() + 1);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(format_printf("%d-%s", 7, "a"), "7-a");
  EXPECT_EQ(format_printf("%s", ""), "");
}

TEST(CoreFormat, BytesCountsAndGroups) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_grouped(117662), "117,662");
}

}  // namespace
}  // namespace orochi
