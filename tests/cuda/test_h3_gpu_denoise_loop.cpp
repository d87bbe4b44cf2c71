// The denoising loop with the GPU denoiser (tables built once by the first forward, later steps only
// re-upload rows) against diffusers' fp32 loop over the tiny transformer, within the bf16 band; and
// the same loop on the CPU denoiser, so a GPU-only drift across steps would show.
#include <gtest/gtest.h>

#include "backends/cuda/device.h"
#include "models/h3/cuda/gpu_denoiser.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/latent_packing.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

TEST(H3GpuDenoiseLoop, TinyT2vaLoopMatchesDiffusersWithinTheBf16Band) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  Expected<weights::Checkpoint> golden =
      weights::Checkpoint::open(testing::test_data_dir() + "/h3_denoise_loop/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  pipeline::LayoutRequest r;
  r.text_rows = 5;
  r.latent_frames = 3;
  r.latent_height = 4;
  r.latent_width = 6;
  r.audio_latents = 4;
  Expected<pipeline::PackedLayout> layout = pipeline::build_packed_layout(r);
  Expected<pipeline::H3Schedule> video = pipeline::make_h3_schedule(4, pipeline::kH3VideoShift);
  Expected<pipeline::H3Schedule> audio = pipeline::make_h3_schedule(4, pipeline::kH3AudioShift);
  ASSERT_TRUE(layout.has_value() && video.has_value() && audio.has_value());
  Expected<Tensor> rows = pipeline::patchify_video_latents(testing::golden_tensor(*golden, "t2va.video_noise"), {1, 2, 2});
  ASSERT_TRUE(rows.has_value());
  pipeline::DenoiseRequest req;
  req.layout = &*layout;
  req.video_schedule = &*video;
  req.audio_schedule = &*audio;
  req.text = testing::golden_tensor(*golden, "t2va.text");
  req.video_rows = *rows;
  req.audio_rows = testing::golden_tensor(*golden, "t2va.audio_noise");

  const pipeline::TimestepPlan plan = pipeline::plan_timesteps(*layout, *video, *audio);
  const h3::gpu::RequestSize max{layout->rows, r.text_rows, layout->video_indices.numel(),
                                 layout->audio_indices.numel(), plan.timesteps.numel()};
  auto gpu = h3::gpu::GpuDenoiser::create(w->config, 0, max);
  ASSERT_TRUE(gpu.has_value()) << gpu.status().to_string();
  ASSERT_TRUE((*gpu)->upload_weights(*w).is_ok());
  Expected<pipeline::DenoiseResult> out = pipeline::denoise(**gpu, req);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_EQ(out->step_seconds.size(), 3u);
  const auto cv = testing::compare(out->video_rows, testing::golden_tensor(*golden, "t2va.video_rows.3"));
  const auto ca = testing::compare(out->audio_rows, testing::golden_tensor(*golden, "t2va.audio_rows.3"));
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
