// The denoising loop with the GPU denoiser (tables built once by the first forward, later steps only
// re-upload rows) against diffusers' fp32 loop over the tiny transformer, within the bf16 band; and
// the same loop on the CPU denoiser, so a GPU-only drift across steps would show.
#include <gtest/gtest.h>

#include "backends/cuda/device.h"
#include "models/h3/cuda/gpu_denoiser.h"
#include "pipeline/denoise_loop.h"
#include "support/compare.h"
#include "support/denoise_loop_golden.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

TEST(H3GpuDenoiseLoop, TinyT2vaLoopMatchesDiffusersWithinTheBf16Band) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  const weights::Checkpoint golden = testing::open_denoise_loop_golden();
  const std::unique_ptr<testing::DenoiseLoopCase> c = testing::load_denoise_loop_case(golden, "t2va");
  ASSERT_TRUE(c);
  const pipeline::PackedLayout& layout = c->layout;
  const pipeline::DenoiseRequest& req = c->request;

  const pipeline::TimestepPlan plan = pipeline::plan_timesteps(layout, c->video_schedule, c->audio_schedule);
  const h3::gpu::RequestSize max{layout.rows, c->layout_request.text_rows, layout.video_indices.numel(),
                                 layout.audio_indices.numel(), plan.timesteps.numel()};
  auto gpu = h3::gpu::GpuDenoiser::create(w->config, 0, max);
  ASSERT_TRUE(gpu.has_value()) << gpu.status().to_string();
  ASSERT_TRUE((*gpu)->upload_weights(*w).is_ok());
  Expected<pipeline::DenoiseResult> out = pipeline::denoise(**gpu, req);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_EQ(out->step_seconds.size(), 3u);
  const auto cv = testing::compare(out->video_rows, testing::golden_tensor(golden, "t2va.video_rows.3"));
  const auto ca = testing::compare(out->audio_rows, testing::golden_tensor(golden, "t2va.audio_rows.3"));
  std::printf("tiny t2va loop, 3 steps on %s vs diffusers fp32:\n  video %s\n  audio %s\n",
              (*gpu)->device_name().c_str(), cv.summary().c_str(), ca.summary().c_str());
  EXPECT_TRUE(cv.same_nonfinite && cv.rel_l2 <= 2e-2) << cv.summary();
  EXPECT_TRUE(ca.same_nonfinite && ca.rel_l2 <= 2e-2) << ca.summary();

  // A second request on the same denoiser starts over (new tables), and gives the same rows.
  Expected<pipeline::DenoiseResult> again = pipeline::denoise(**gpu, req);
  ASSERT_TRUE(again.has_value()) << again.status().to_string();
  EXPECT_TENSOR_CLOSE(again->video_rows, out->video_rows, 0.0);
}

}  // namespace
}  // namespace orochi
