// The H3 denoiser over 2 GPUs (TP2, SP2 with uneven rows) against the same model on one GPU, and
// the communication deadline: a stalled rank ends the forward with an error that names it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>

#include "backends/cuda/device.h"
#include "dist/cuda/gpu_parallel_context.h"
#include "engine/run_switches.h"
#include "models/h3/cuda/gpu_parallel.h"
#include "support/compare.h"
#include "support/golden.h"
#include "h3_narrow_model.h"

namespace orochi {
namespace {

using h3::gpu::H3GpuRunner;
using h3::gpu::H3MultiGpu;
using Layout = dist::GpuParallelOptions;  // tp x sp, deadline, fault
using h3::gpu::RequestSize;
using testing::narrow_config;
using testing::narrow_request;
using testing::Request;

bool two_gpus() {
  auto devices = cuda::list_devices();
  return devices.has_value() && devices->size() >= 2;
}

h3::H3Outputs one_gpu(const h3::H3Config& c, const Request& r, uint64_t seed) {
  auto runner = H3GpuRunner::create(c, 0, r.size);
  EXPECT_TRUE(runner.has_value()) << runner.status().to_string();
  EXPECT_TRUE((*runner)->init_random_weights(seed).is_ok());
  EXPECT_TRUE((*runner)->set_request(r.timesteps, r.in).is_ok());
  EXPECT_TRUE((*runner)->forward().is_ok());
  return *(*runner)->outputs();
}

// The denoiser over GPUs 0 and 1 in `layout`, through the parallel context the engine would make.
Expected<std::unique_ptr<H3MultiGpu>> make_multi_gpu(const h3::H3Config& c, const Layout& layout, const RequestSize& max,
                                                     const h3::gpu::RunnerOptions& options = {}) {
  OROCHI_ASSIGN_OR_RETURN(auto context, dist::make_gpu_context({0, 1}, layout));
  return H3MultiGpu::create(c, std::move(context), max, {}, options);
}

void expect_close(const h3::H3Outputs& got, const h3::H3Outputs& want, const char* what) {
  const auto cv = testing::compare(got.video, want.video), ca = testing::compare(got.audio, want.audio);
  std::printf("%s vs 1 GPU: video %s\n  audio %s\n", what, cv.summary().c_str(), ca.summary().c_str());
  EXPECT_TRUE(cv.same_nonfinite && cv.rel_l2 <= 1e-2) << what << ": " << cv.summary();
  EXPECT_TRUE(ca.same_nonfinite && ca.rel_l2 <= 1e-2) << what << ": " << ca.summary();
}

// One forward of `mg` on random weights `seed`, against the one-GPU outputs.
void expect_forward_matches(H3MultiGpu& mg, const Request& r, uint64_t seed, const h3::H3Outputs& want,
                            const std::string& what) {
  ASSERT_TRUE(mg.init_random_weights(seed).is_ok());
  ASSERT_TRUE(mg.set_request(r.timesteps, r.in).is_ok());
  Status s = mg.forward();
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  Expected<h3::H3Outputs> got = mg.outputs();
  ASSERT_TRUE(got.has_value()) << got.status().to_string();
  expect_close(*got, want, what.c_str());
}

class H3GpuParallel : public ::testing::TestWithParam<Layout> {};

TEST_P(H3GpuParallel, MatchesOneGpu) {
  if (!two_gpus()) GTEST_SKIP() << "needs 2 GPUs";
  const h3::H3Config c = narrow_config();
  const Request r = narrow_request(c);
  const h3::H3Outputs want = one_gpu(c, r, 3);
  auto mg = make_multi_gpu(c, GetParam(), r.size);
  ASSERT_TRUE(mg.has_value()) << mg.status().to_string();
  ASSERT_TRUE((*mg)->init_random_weights(3).is_ok());
  ASSERT_TRUE((*mg)->set_request(r.timesteps, r.in).is_ok());
  for (int step = 0; step < 2; ++step) {  // the second forward reuses every buffer and plan
    Status s = (*mg)->forward();
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    Expected<h3::H3Outputs> got = (*mg)->outputs();
    ASSERT_TRUE(got.has_value()) << got.status().to_string();
    expect_close(*got, want, GetParam().tp > 1 ? "TP2" : "SP2");
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, H3GpuParallel,
                         ::testing::Values(Layout{.tp = 2, .sp = 1}, Layout{.tp = 1, .sp = 2}),
                         [](const auto& info) { return info.param.tp > 1 ? std::string("TP2") : std::string("SP2"); });

// The run switches (engine/run_switches.h) that choose SP2's schemes, as the engine passes them.
h3::gpu::RunnerOptions sp_switches(const char* qkv, const char* attention, const char* weights = "") {
  engine::RunSwitches s;
  EXPECT_TRUE(engine::set_run_switch(s, "sp-qkv", qkv).is_ok());
  EXPECT_TRUE(engine::set_run_switch(s, "sp-attention", attention).is_ok());
  EXPECT_TRUE(engine::set_run_switch(s, "sp-weights", weights).is_ok());
  return {s.kernels, s.sp};
}

// SP2's other schemes: q/k/v chunks of every rank's heads sent instead of the rows of x
// (sp-qkv=heads), and attention one share of query rows at a time (sp-attention=split).
TEST(H3GpuParallelSchemes, SpHeadsAndSplitAttentionMatchOneGpu) {
  if (!two_gpus()) GTEST_SKIP() << "needs 2 GPUs";
  const h3::H3Config c = narrow_config();
  const Request r = narrow_request(c);
  const h3::H3Outputs want = one_gpu(c, r, 5);
  const std::pair<const char*, const char*> schemes[] = {{"heads", "whole"}, {"gather", "split"}, {"heads", "split"}};
  for (const auto& [qkv, attention] : schemes) {
    auto mg = make_multi_gpu(c, Layout{.tp = 1, .sp = 2}, r.size, sp_switches(qkv, attention));
    ASSERT_TRUE(mg.has_value()) << mg.status().to_string();
    expect_forward_matches(**mg, r, 5, want, std::string("SP2 qkv=") + qkv + " attention=" + attention);
  }
}

// Rows split by weight instead of evenly (a slower GPU takes fewer): given in the runner options
// with the default q/k/v scheme, and through the sp-weights switch with the heads scheme and split
// attention.
TEST(H3GpuParallelSchemes, SpWeightedRowsMatchOneGpu) {
  if (!two_gpus()) GTEST_SKIP() << "needs 2 GPUs";
  const h3::H3Config c = narrow_config();
  const Request r = narrow_request(c);
  const h3::H3Outputs want = one_gpu(c, r, 5);
  for (bool from_switch : {false, true}) {
    h3::gpu::RunnerOptions options;
    if (from_switch) options = sp_switches("heads", "split", "0.8,1.2");
    else options.sp.row_weights = {1.3, 0.7};
    auto mg = make_multi_gpu(c, Layout{.tp = 1, .sp = 2}, r.size, options);
    ASSERT_TRUE(mg.has_value()) << mg.status().to_string();
    ASSERT_EQ((*mg)->sp_weights().size(), 2u);
    expect_forward_matches(**mg, r, 5, want,
                           from_switch ? "SP2 rows 0.8:1.2 (switch), qkv=heads attention=split" : "SP2 rows 1.3:0.7");
  }
  auto bad = make_multi_gpu(c, Layout{.tp = 1, .sp = 2}, r.size, sp_switches("auto", "whole", "1,1,1"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("sp-weights"), std::string::npos) << bad.status().to_string();
  h3::gpu::RunnerOptions zero;
  zero.sp.row_weights = {1, 0};  // given in the options directly: the same check
  auto refused = make_multi_gpu(c, Layout{.tp = 1, .sp = 2}, r.size, zero);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument) << refused.status().to_string();
}

TEST(H3GpuParallelGolden, TinyTp2AndSp2WithinTheBf16Band) {
  if (!two_gpus()) GTEST_SKIP() << "needs 2 GPUs";
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(testing::h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  const h3::H3Inputs in = testing::golden_inputs(*golden);
  const Tensor timesteps = testing::golden_tensor(*golden, "in.timestep");
  const RequestSize size{in.rows(), in.text.dim(0), in.video.dim(0), in.audio.dim(0), timesteps.numel()};
  for (const Layout& layout : {Layout{.tp = 2, .sp = 1}, Layout{.tp = 1, .sp = 2}}) {
    auto mg = make_multi_gpu(w->config, layout, size);
    ASSERT_TRUE(mg.has_value()) << mg.status().to_string();
    ASSERT_TRUE((*mg)->upload_weights(*w).is_ok());
    ASSERT_TRUE((*mg)->set_request(timesteps, in).is_ok());
    ASSERT_TRUE((*mg)->forward().is_ok());
    Expected<h3::H3Outputs> out = (*mg)->outputs();
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    const auto cv = testing::compare(out->video, testing::golden_tensor(*golden, "out.video"));
    const auto ca = testing::compare(out->audio, testing::golden_tensor(*golden, "out.audio"));
    std::printf("tiny %s vs diffusers fp32: video %s\n  audio %s\n", layout.tp > 1 ? "TP2" : "SP2", cv.summary().c_str(),
                ca.summary().c_str());
    EXPECT_TRUE(cv.same_nonfinite && cv.rel_l2 <= 2e-2) << cv.summary();
    EXPECT_TRUE(ca.same_nonfinite && ca.rel_l2 <= 2e-2) << ca.summary();
  }
}

TEST(H3GpuParallelDeadline, AStalledRankEndsTheForwardWithItsName) {
  if (!two_gpus()) GTEST_SKIP() << "needs 2 GPUs";
  const h3::H3Config c = narrow_config();
  const Request r = narrow_request(c);
  Layout layout{.tp = 1, .sp = 2};
  layout.comm_deadline = std::chrono::milliseconds(1000);
  layout.fault = {dist::FaultInjection::Kind::kStall, 1, 5};  // rank 1 stops at its 6th exchange
  auto mg = make_multi_gpu(c, layout, r.size);
  ASSERT_TRUE(mg.has_value()) << mg.status().to_string();
  ASSERT_TRUE((*mg)->init_random_weights(3).is_ok());
  ASSERT_TRUE((*mg)->set_request(r.timesteps, r.in).is_ok());
  const auto start = std::chrono::steady_clock::now();
  Status s = (*mg)->forward();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("stalled forward ended after %.2f s: %s\n", seconds, s.to_string().c_str());
  EXPECT_EQ(s.code(), ErrorCode::kDeadline) << s.to_string();
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("all_to_all"), std::string::npos) << s.to_string();
  EXPECT_LE(seconds, 1.0 + 2.0);
}

}  // namespace
}  // namespace orochi
