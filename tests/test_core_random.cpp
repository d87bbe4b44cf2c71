#include <gtest/gtest.h>

#include <cmath>

#include "core/random.h"

namespace orochi {
namespace {

TEST(Philox, KnownAnswerVectors) {
  // Random123's published philox4x32-10 test vectors.
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(CounterNormal, IndependentOfHowATensorIsSplit) {
  const Tensor whole = normal_tensor({1000}, 42, 7);
  for (int64_t i : {0, 1, 500, 999}) EXPECT_EQ(whole.data<float>()[i], counter_normal(42, 7, i));
  EXPECT_NE(counter_normal(42, 7, 0), counter_normal(42, 8, 0));
  EXPECT_NE(counter_normal(42, 7, 0), counter_normal(43, 7, 0));
}

TEST(CounterNormal, MomentsAreStandardNormal) {
  const Tensor t = normal_tensor({200000}, 1, 0);
  double sum = 0, sum2 = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(t.data<float>()[i]));
    sum += t.data<float>()[i];
    sum2 += static_cast<double>(t.data<float>()[i]) * t.data<float>()[i];
  }
  EXPECT_NEAR(sum / t.numel(), 0.0, 0.01);
  EXPECT_NEAR(sum2 / t.numel(), 1.0, 0.01);
}

}  // namespace
}  // namespace orochi
