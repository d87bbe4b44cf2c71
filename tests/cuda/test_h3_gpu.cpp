// The H3 denoiser on the GPU (bf16 with f32 islands) against diffusers' fp32 golden and against
// our CPU forward on the same weights: both within the bf16 band.
#include <gtest/gtest.h>

#include "backends/cuda/device.h"
#include "models/h3/cuda/gpu_runner.h"
#include "support/compare.h"
#include "support/golden.h"

namespace orochi {
namespace {

TEST(H3Gpu, TinyGoldenWithinTheBf16Band) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(testing::h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  const h3::H3Inputs in = testing::golden_inputs(*golden);
  const Tensor timesteps = testing::golden_tensor(*golden, "in.timestep");
  const h3::gpu::RequestSize size{in.rows(), in.text.dim(0), in.video.dim(0), in.audio.dim(0), timesteps.numel()};
  auto runner = h3::gpu::H3GpuRunner::create(w->config, 0, size);
  ASSERT_TRUE(runner.has_value()) << runner.status().to_string();
  ASSERT_TRUE((*runner)->upload_weights(*w).is_ok());
  ASSERT_TRUE((*runner)->set_request(timesteps, in).is_ok());
  for (int run = 0; run < 2; ++run) {  // the second run reuses every cached plan and buffer
    ASSERT_TRUE((*runner)->forward().is_ok());
    Expected<h3::H3Outputs> out = (*runner)->outputs();
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    const auto cv = testing::compare(out->video, testing::golden_tensor(*golden, "out.video"));
    const auto ca = testing::compare(out->audio, testing::golden_tensor(*golden, "out.audio"));
    std::printf("H3 tiny on GPU vs diffusers fp32: video %s\n  audio %s\n", cv.summary().c_str(), ca.summary().c_str());
    EXPECT_TRUE(cv.same_nonfinite && cv.rel_l2 <= 2e-2) << cv.summary();
    EXPECT_TRUE(ca.same_nonfinite && ca.rel_l2 <= 2e-2) << ca.summary();
  }
}

}  // namespace
}  // namespace orochi
