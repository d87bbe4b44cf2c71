// dist::make_gpu_context: the parallel context of a GPU run. On one GPU: a worker with that GPU
// current, no groups, no comm stream, a worker's error named with its GPU; refusals before any
// NCCL call. On two: tp2 and sp2 groups of the right ranks on each rank's comm stream, and a
// failing rank that ends its peer's wait in a collective at once instead of at the deadline.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <chrono>

#include "backends/cuda/device.h"
#include "dist/cuda/gpu_parallel_context.h"

namespace orochi {
namespace {

int gpu_count() {
  auto devices = cuda::list_devices();
  return devices.has_value() ? static_cast<int>(devices->size()) : 0;
}

TEST(GpuParallelContext, OneGpuHasAWorkerAndNoGroups) {
  if (gpu_count() < 1) GTEST_SKIP() << "needs a GPU";
  auto ctx = dist::make_gpu_context({0});
  ASSERT_TRUE(ctx.has_value()) << ctx.status().to_string();
  EXPECT_EQ((*ctx)->workers(), 1);
  EXPECT_EQ((*ctx)->tp(0), nullptr);
  EXPECT_EQ((*ctx)->sp(0), nullptr);
  EXPECT_EQ(dist::comm_stream(**ctx, 0), nullptr);
  EXPECT_EQ((*ctx)->device(0), 0);
  Status s = (*ctx)->run([](int) -> Status {
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess || device != 0) return Status(ErrorCode::kInternal, "wrong device");
    return not_found("the worker's own error");
  });
  EXPECT_EQ(s.code(), ErrorCode::kNotFound) << s.to_string();
  EXPECT_NE(s.message().find("rank 0 (cuda:0)"), std::string::npos) << s.to_string();
}

TEST(GpuParallelContext, RefusesBadLayoutsBeforeAnyGroup) {
  auto twice = dist::make_gpu_context({0, 0}, {.tp = 2, .sp = 1});
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.status().message().find("listed twice"), std::string::npos) << twice.status().to_string();
  auto few = dist::make_gpu_context({0}, {.tp = 1, .sp = 2});
  ASSERT_FALSE(few.has_value());
  EXPECT_NE(few.status().message().find("needs 2 GPUs"), std::string::npos) << few.status().to_string();
}

TEST(GpuParallelContext, TwoGpuGroupsAndAFailingRank) {
  if (gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs";
  for (const dist::GpuParallelOptions layout : {dist::GpuParallelOptions{.tp = 2, .sp = 1},
                                                dist::GpuParallelOptions{.tp = 1, .sp = 2}}) {
    SCOPED_TRACE(layout.tp > 1 ? "tp2" : "sp2");
    dist::GpuParallelOptions o = layout;
    o.comm_deadline = std::chrono::seconds(60);
    auto ctx = dist::make_gpu_context({0, 1}, o);
    ASSERT_TRUE(ctx.has_value()) << ctx.status().to_string();
    for (int r = 0; r < 2; ++r) {
      dist::Comm* group = layout.tp > 1 ? (*ctx)->tp(r) : (*ctx)->sp(r);
      ASSERT_NE(group, nullptr);
      EXPECT_EQ(group->rank(), r);
      EXPECT_EQ(group->size(), 2);
      EXPECT_EQ(layout.tp > 1 ? (*ctx)->sp(r) : (*ctx)->tp(r), nullptr);
      EXPECT_NE(dist::comm_stream(**ctx, r), nullptr);
    }
    // Rank 1 fails while rank 0 waits for it in a heartbeat (a host rendezvous on both kinds).
    const auto start = std::chrono::steady_clock::now();
    Status s = (*ctx)->run([&](int r) -> Status {
      if (r == 1) return Status(ErrorCode::kIo, "rank 1's own failure");
      dist::Comm* group = layout.tp > 1 ? (*ctx)->tp(r) : (*ctx)->sp(r);
      return group->all_reduce_min(r).status();
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.to_string();
    EXPECT_LT(seconds, 30.0);
  }
}

}  // namespace
}  // namespace orochi
