// Sequence-parallel row shares from measured rank loads (dist/row_balance.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dist/row_balance.h"

namespace orochi {
namespace {

using dist::RankLoad;

void expect_cover(const std::vector<dist::Range>& shares, int64_t rows, int64_t capacity) {
  int64_t begin = 0;
  for (const dist::Range& s : shares) {
    EXPECT_EQ(s.begin, begin);
    EXPECT_GT(s.size(), 0);
    EXPECT_LE(s.size(), capacity);
    begin = s.end;
  }
  EXPECT_EQ(begin, rows);
}

double finish(const RankLoad& l, int64_t rows) { return l.fixed_ms + l.per_rows_ms / l.rows * rows; }

TEST(RowBalance, CapacityIsTheEvenShareAndASixteenth) {
  EXPECT_EQ(dist::share_capacity(37966, 1), 37966);
  EXPECT_EQ(dist::share_capacity(37966, 2), 18983 + 18983 / 16);
  EXPECT_EQ(dist::share_capacity(15101, 2), 7551 + 7551 / 16);
  EXPECT_EQ(dist::share_capacity(3, 4), 1);
}

TEST(RowBalance, EqualRanksKeepEvenShares) {
  const std::vector<RankLoad> loads(2, RankLoad{1700, 1100, 18983});
  auto b = dist::balanced_shares(37966, loads, dist::share_capacity(37966, 2));
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  ASSERT_EQ(b->shares.size(), 2u);
  EXPECT_EQ(b->shares[0].size(), 18983);
  EXPECT_DOUBLE_EQ(b->predicted_ms, b->current_ms);
}

// Session 9, call 1: SP2 at 1344x768 on an H200 pair, rank 1's GPU 8 C warmer and 45 MHz slower.
TEST(RowBalance, TheFasterRankTakesRowsUntilBothFinishTogether) {
  const int64_t S = 37966;
  const std::vector<RankLoad> loads = {{1740.8, 1080.5, 18983}, {1772.8, 1098.0, 18983}};
  auto b = dist::balanced_shares(S, loads, dist::share_capacity(S, 2));
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  expect_cover(b->shares, S, dist::share_capacity(S, 2));
  EXPECT_NEAR(b->shares[0].size(), 19415, 2);
  EXPECT_NEAR(finish(loads[0], b->shares[0].size()), finish(loads[1], b->shares[1].size()), 0.1);
  EXPECT_NEAR(b->current_ms, 2870.8, 0.01);
  EXPECT_NEAR(b->predicted_ms, 2845.9, 0.2);
}

TEST(RowBalance, AMuchSlowerRankStopsAtTheBound) {
  const int64_t S = 10000, cap = dist::share_capacity(S, 2);
  const std::vector<RankLoad> loads = {{100, 100, 5000}, {150, 150, 5000}};  // rank 1 50% slower
  auto b = dist::balanced_shares(S, loads, cap);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  expect_cover(b->shares, S, cap);
  EXPECT_EQ(b->shares[0].size(), cap);
  EXPECT_LT(b->predicted_ms, b->current_ms);
}

TEST(RowBalance, FourRanksCoverEveryRowOnce) {
  const int64_t S = 15101, cap = dist::share_capacity(S, 4);
  const std::vector<RankLoad> loads = {{500, 300, 3776}, {505, 303, 3775}, {510, 310, 3775}, {498, 301, 3775}};
  auto b = dist::balanced_shares(S, loads, cap);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  expect_cover(b->shares, S, cap);
  EXPECT_LT(b->shares[2].size(), b->shares[3].size());  // the slowest rank gets the fewest rows
  double lo = 1e9, hi = 0;
  for (int r = 0; r < 4; ++r) {
    const double t = finish(loads[r], b->shares[r].size());
    lo = std::min(lo, t), hi = std::max(hi, t);
  }
  EXPECT_LT(hi - lo, 0.2);  // within a row's cost
}

TEST(RowBalance, RefusesLoadsItCannotUse) {
  const int64_t S = 100, cap = dist::share_capacity(S, 2);
  for (const std::vector<RankLoad>& bad :
       {std::vector<RankLoad>{}, std::vector<RankLoad>{{1, 1, 50}, {1, 1, 0}}, std::vector<RankLoad>{{1, 0, 50}, {1, 1, 50}},
        std::vector<RankLoad>{{-1, 1, 50}, {1, 1, 50}}, std::vector<RankLoad>{{NAN, 1, 50}, {1, 1, 50}}}) {
    auto b = dist::balanced_shares(S, bad, cap);
    ASSERT_FALSE(b.has_value());
    EXPECT_EQ(b.status().code(), ErrorCode::kInvalidArgument);
  }
  auto small = dist::balanced_shares(S, {{1, 1, 50}, {1, 1, 50}}, 49);
  ASSERT_FALSE(small.has_value());
  EXPECT_NE(small.status().message().find("cannot hold"), std::string::npos) << small.status().to_string();
}

}  // namespace
}  // namespace orochi
