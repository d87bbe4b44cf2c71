// dist::ParallelContext on in-process CPU ranks: the groups of tp2, sp2 and tp2 x sp2 hold the
// ranks the layout says (checked by a collective), run() is the fan-out (a worker's error or
// exception comes back as a Status naming the rank, never std::terminate), a failing worker ends
// its peers' waits at once instead of at the deadline, and the workers are one kept thread per rank.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "dist/cpu_parallel_context.h"

namespace orochi {
namespace {

using dist::Comm;
using dist::ParallelContext;
using dist::RankGrid;
using Clock = std::chrono::steady_clock;

std::shared_ptr<ParallelContext> cpu_context(int ranks, RankGrid grid, dist::GroupSettings settings = {}) {
  auto ctx = dist::make_cpu_context(ranks, grid, settings);
  EXPECT_TRUE(ctx.has_value()) << ctx.status().to_string();
  return ctx.has_value() ? *ctx : nullptr;
}

// Every rank gathers the world ranks of its group's members: they must be the grid's group, in
// group rank order.
void expect_group(ParallelContext& ctx, bool tp) {
  const RankGrid grid = ctx.grid();
  const int size = tp ? grid.tp : grid.sp;
  std::vector<std::vector<float>> got(grid.world());
  ASSERT_TRUE(ctx.run(grid.world(), [&](int w) -> Status {
                   Comm* c = tp ? ctx.tp(w) : ctx.sp(w);
                   if (size == 1) return c == nullptr ? Status::ok() : Status(ErrorCode::kInternal, "a size-1 group");
                   if (c == nullptr) return Status(ErrorCode::kInternal, "no member");
                   const float mine = static_cast<float>(w);
                   got[w].resize(size);
                   return c->all_gather(&mine, got[w].data(), 1, DType::kF32);
                 }).is_ok());
  if (size == 1) return;
  for (int w = 0; w < grid.world(); ++w) {
    Comm* c = tp ? ctx.tp(w) : ctx.sp(w);
    const int g = tp ? grid.sp_rank(w) : grid.tp_rank(w);  // which group of its kind
    const std::vector<int> want = tp ? grid.tp_group(g) : grid.sp_group(g);
    EXPECT_EQ(c->size(), size);
    EXPECT_EQ(c->rank(), tp ? grid.tp_rank(w) : grid.sp_rank(w));
    const int groups = tp ? grid.sp : grid.tp;
    EXPECT_EQ(c->name(), std::string(tp ? "tp" : "sp") + (groups > 1 ? std::to_string(g) : ""));
    for (int m = 0; m < size; ++m) EXPECT_EQ(got[w][m], static_cast<float>(want[m])) << "rank " << w << " member " << m;
  }
}

TEST(ParallelContext, GroupsHoldTheLayoutsRanks) {
  for (const RankGrid grid : {RankGrid{2, 1}, RankGrid{1, 2}, RankGrid{2, 2}, RankGrid{1, 1}, RankGrid{4, 2}}) {
    SCOPED_TRACE("tp " + std::to_string(grid.tp) + " x sp " + std::to_string(grid.sp));
    auto ctx = cpu_context(grid.world(), grid);
    ASSERT_TRUE(ctx);
    EXPECT_EQ(ctx->workers(), grid.world());
    expect_group(*ctx, true);
    expect_group(*ctx, false);
  }
  // tp2 x sp2 by hand: TP groups {0,1},{2,3}; SP groups {0,2},{1,3}.
  EXPECT_EQ(RankGrid({2, 2}).tp_group(1), (std::vector<int>{2, 3}));
  EXPECT_EQ(RankGrid({2, 2}).sp_group(1), (std::vector<int>{1, 3}));
}

TEST(ParallelContext, ExtraWorkersHaveNoGroups) {
  auto ctx = cpu_context(3, {.tp = 2, .sp = 1});  // a decode may share more GPUs than the layout
  ASSERT_TRUE(ctx);
  EXPECT_EQ(ctx->workers(), 3);
  EXPECT_NE(ctx->tp(1), nullptr);
  EXPECT_EQ(ctx->tp(2), nullptr);
  EXPECT_EQ(ctx->sp(0), nullptr);
  std::vector<int> ran(3, 0);
  EXPECT_TRUE(ctx->run([&](int r) { ran[r]++; return Status::ok(); }).is_ok());
  EXPECT_TRUE(ctx->run(2, [&](int r) { ran[r]++; return Status::ok(); }).is_ok());
  EXPECT_EQ(ran, (std::vector<int>{2, 2, 1}));
}

TEST(ParallelContext, RefusesLayoutsItCannotHold) {
  auto small = dist::make_cpu_context(2, {.tp = 2, .sp = 2});
  ASSERT_FALSE(small.has_value());
  EXPECT_EQ(small.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(small.status().message().find("needs 4"), std::string::npos) << small.status().to_string();
  EXPECT_FALSE(dist::make_cpu_context(2, {.tp = 0, .sp = 2}).has_value());
  EXPECT_FALSE(dist::make_cpu_context(0, {}).has_value());
}

TEST(ParallelContext, RunReturnsTheFirstFailingRanksError) {
  auto ctx = cpu_context(4, {.tp = 2, .sp = 2});
  ASSERT_TRUE(ctx);
  Status s = ctx->run([](int r) { return r == 2 ? invalid_argument("bad rows") : Status::ok(); });
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("rank 2"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("bad rows"), std::string::npos) << s.to_string();
  // An exception (a failed OROCHI_CHECK) is that rank's kInternal, not std::terminate.
  s = ctx->run([](int r) -> Status {
    if (r == 1) throw std::runtime_error("check failed");
    return Status::ok();
  });
  EXPECT_EQ(s.code(), ErrorCode::kInternal) << s.to_string();
  EXPECT_NE(s.message().find("check failed"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.to_string();
  // A job too large for the workers, and a job started from inside a job (it would wait for itself).
  EXPECT_EQ(ctx->run(5, [](int) { return Status::ok(); }).code(), ErrorCode::kInternal);
  s = ctx->run([&](int) { return ctx->run([](int) { return Status::ok(); }); });
  EXPECT_EQ(s.code(), ErrorCode::kInternal) << s.to_string();
}

// Rank 0 fails before a collective its TP peer is already waiting in: the context aborts the
// groups, so rank 1 returns now (kDeadline, quoting rank 0's failure) instead of after the 60 s
// deadline; rank 3, waiting in an SP collective for rank 1, returns too.
TEST(ParallelContext, AFailingWorkerDoesNotHangItsPeers) {
  auto ctx = cpu_context(4, {.tp = 2, .sp = 2}, {.deadline = std::chrono::seconds(60)});
  ASSERT_TRUE(ctx);
  std::vector<Status> seen(4);
  const auto start = Clock::now();
  const Status s = ctx->run([&](int w) -> Status {
    if (w == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the peers are waiting by now
      return Status(ErrorCode::kIo, "rank 0's own failure");
    }
    float x = 1;
    if (w == 1) seen[w] = ctx->tp(w)->all_reduce_sum(&x, 1, DType::kF32);
    else seen[w] = ctx->sp(w)->all_reduce_sum(&x, 1, DType::kF32);  // 2 waits for 0, 3 for 1
    return seen[w];
  });
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);
  EXPECT_EQ(s.code(), ErrorCode::kIo) << s.to_string();  // rank order: rank 0's own error first
  EXPECT_NE(s.message().find("rank 0"), std::string::npos) << s.to_string();
  for (int w = 1; w < 4; ++w) {
    EXPECT_EQ(seen[w].code(), ErrorCode::kDeadline) << "rank " << w << ": " << seen[w].to_string();
    EXPECT_NE(seen[w].message().find("rank 0 failed"), std::string::npos) << seen[w].to_string();
  }
}

TEST(ParallelContext, FaultInjectionGoesToTheFirstGroup) {
  dist::GroupSettings settings;
  settings.fault = {dist::FaultInjection::Kind::kKill, 1, 0};
  auto ctx = cpu_context(2, {.tp = 1, .sp = 2}, settings);  // no TP group: the SP group gets it
  ASSERT_TRUE(ctx);
  const Status s = ctx->run([&](int w) {
    float x = 1;
    return ctx->sp(w)->all_reduce_sum(&x, 1, DType::kF32);
  });
  EXPECT_FALSE(s.is_ok());
}

TEST(Workers, OneKeptThreadPerRank) {
  dist::Workers workers(3);
  std::mutex mu;
  std::vector<std::set<std::thread::id>> ids(3);
  for (int job = 0; job < 50; ++job) {
    const std::vector<Status> got = workers.run([&](int r) {
      std::lock_guard<std::mutex> lock(mu);
      ids[r].insert(std::this_thread::get_id());
      return Status::ok();
    });
    ASSERT_EQ(got.size(), 3u);
    for (const Status& s : got) ASSERT_TRUE(s.is_ok());
  }
  std::set<std::thread::id> all;
  for (const auto& r : ids) {
    EXPECT_EQ(r.size(), 1u);
    all.insert(r.begin(), r.end());
  }
  EXPECT_EQ(all.size(), 3u);
  EXPECT_FALSE(all.count(std::this_thread::get_id()));
  // A smaller job, and every rank's own Status.
  const std::vector<Status> two = workers.run(2, [](int r) { return r == 1 ? not_found("x") : Status::ok(); });
  ASSERT_EQ(two.size(), 2u);
  EXPECT_TRUE(two[0].is_ok());
  EXPECT_EQ(two[1].code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace orochi
