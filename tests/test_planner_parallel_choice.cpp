// --parallel's choice for --gpus N: forced layouts checked against the heads, and auto picking
// sequence parallel when the whole model fits on each GPU, else the least tensor parallel that fits.
#include <gtest/gtest.h>

#include "planner/parallel_choice.h"

namespace orochi {
namespace {

using planner::choose_parallel;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ParallelOption, AutoPrefersSequenceParallelWhenTheModelFits) {
  const h3::H3Config c;  // 56 heads
  auto d = choose_parallel("auto", c, 2, 139.0, 37.4, 7.5);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->tp, 1);
  EXPECT_EQ(d->sp, 2);
  EXPECT_TRUE(contains(d->why, "sequence parallel")) << d->why;
}

TEST(ParallelOption, AutoSplitsTheWeightsWhenTheyDoNotFit) {
  const h3::H3Config c;
  // 60 GiB of weights on 40 GiB GPUs: TP 2 needs 30 + 7.5/8, sp over the remaining 4.
  auto d = choose_parallel("auto", c, 8, 40.0, 60.0, 7.5);
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->tp, 2);
  EXPECT_EQ(d->sp, 4);
  auto none = choose_parallel("auto", c, 2, 10.0, 60.0, 7.5);
  ASSERT_FALSE(none.has_value());
  EXPECT_TRUE(contains(none.status().message(), "no layout of 2 GPUs fits")) << none.status().message();
}

TEST(ParallelOption, ForcedLayoutsAreCheckedAgainstTheHeads) {
  const h3::H3Config c;  // 56 = 2^3 x 7 heads
  auto tp = choose_parallel("tp", c, 7, 139.0, 37.4, 7.5);
  ASSERT_TRUE(tp.has_value());
  EXPECT_EQ(tp->tp, 7);
  auto bad = choose_parallel("tp", c, 3, 139.0, 37.4, 7.5);
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(contains(bad.status().message(), "1, 2, 4, 7, 8, 14, 28, 56")) << bad.status().message();
  auto both = choose_parallel("tpxsp", c, 4, 139.0, 37.4, 7.5);
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->tp, 2);
  EXPECT_EQ(both->sp, 2);
  EXPECT_FALSE(choose_parallel("tpxsp", c, 3, 139.0, 37.4, 7.5).has_value());
  EXPECT_FALSE(choose_parallel("ring", c, 2, 139.0, 37.4, 7.5).has_value());
  auto one = choose_parallel("tp", c, 1, 139.0, 37.4, 7.5);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->tp * one->sp, 1);
}

}  // namespace
}  // namespace orochi
