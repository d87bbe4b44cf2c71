// The denoising loop (layout, noise packing, two schedules, per-step row timesteps against one
// request-wide AdaLN table, conditioning rows never stepped, unpack) against diffusers' loop over the
// tiny transformer: tests/data/h3_denoise_loop, made by scripts/golden/make_h3_denoise_loop.py.
#include <gtest/gtest.h>

#include <cstring>

#include "models/h3/denoiser.h"
#include "pipeline/denoise_loop.h"
#include "pipeline/latent_packing.h"
#include "support/compare.h"
#include "support/denoise_loop_golden.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using testing::golden_tensor;
using testing::kDenoiseLoopSteps;

class DenoiseLoopGolden : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = new h3::H3Weights(std::move(w).value());
    golden_ = new weights::Checkpoint(testing::open_denoise_loop_golden());
  }
  static void TearDownTestSuite() {
    delete weights_;
    delete golden_;
  }
  static h3::H3Weights* weights_;
  static weights::Checkpoint* golden_;
};
h3::H3Weights* DenoiseLoopGolden::weights_ = nullptr;
weights::Checkpoint* DenoiseLoopGolden::golden_ = nullptr;

TEST_P(DenoiseLoopGolden, MatchesDiffusersStepByStep) {
  const std::string p = GetParam() + ".";
  const std::unique_ptr<testing::DenoiseLoopCase> c = testing::load_denoise_loop_case(*golden_, GetParam());
  ASSERT_TRUE(c);
  const pipeline::PackedLayout& layout = c->layout;
  const Tensor& rows = c->request.video_rows;

  // Step by step: run k steps, compare with the golden after step k.
  h3::CpuDenoiser denoiser(*weights_);
  int64_t callbacks = 0;
  int64_t started = 0;
  for (int64_t k = 1; k <= kDenoiseLoopSteps; ++k) {
    pipeline::H3Schedule v = c->video_schedule, a = c->audio_schedule;
    v.timesteps.resize(static_cast<size_t>(k));
    a.timesteps.resize(static_cast<size_t>(k));
    pipeline::DenoiseRequest partial = c->request;
    partial.video_schedule = &v;
    partial.audio_schedule = &a;
    Expected<pipeline::DenoiseResult> out =
        pipeline::denoise(denoiser, partial, [&](const pipeline::StepProgress& s) {
          callbacks += s.steps == k && s.step > 0;
          started += s.steps == k && s.step == 0;  // the loop says it started before the first step
        });
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_TENSOR_CLOSE(out->video_rows, golden_tensor(*golden_, p + "video_rows." + std::to_string(k)), 1e-5);
    EXPECT_TENSOR_CLOSE(out->audio_rows, golden_tensor(*golden_, p + "audio_rows." + std::to_string(k)), 1e-5);
    // Conditioning rows are carried through untouched, bit for bit.
    if (layout.condition_video_rows > 0) {
      EXPECT_EQ(std::memcmp(out->video_rows.data<float>(), rows.data<float>(),
                            layout.condition_video_rows * rows.dim(1) * sizeof(float)),
                0);
    }
    if (k == kDenoiseLoopSteps) {
      const Tensor final_target = out->video_rows.slice(0, layout.condition_video_rows, out->video_rows.dim(0));
      Expected<Tensor> latents = pipeline::unpatchify_video_rows(final_target.contiguous(), 4, 3, 4, 6, {1, 2, 2});
      ASSERT_TRUE(latents.has_value());
      EXPECT_TENSOR_CLOSE(*latents, golden_tensor(*golden_, p + "video_latents"), 1e-5);
    }
  }
  EXPECT_EQ(callbacks, 1 + 2 + 3);
  EXPECT_EQ(started, kDenoiseLoopSteps);
}

INSTANTIATE_TEST_SUITE_P(Workflows, DenoiseLoopGolden, ::testing::Values("t2va", "fl2va"),
                         [](const auto& info) { return info.param; });

TEST(LatentPacking, PatchifyFollowsTheRowAndColumnOrderOfTheSpec) {
  // Element (c, t, h, w) lands in row (t·(H/2) + h/2)·(W/2) + w/2, column (c·2 + h%2)·2 + w%2.
  Tensor z = Tensor::empty({3, 2, 4, 6}, DType::kF32);
  for (int64_t i = 0; i < z.numel(); ++i) z.data<float>()[i] = static_cast<float>(i);
  Expected<Tensor> rows = pipeline::patchify_video_latents(z, {1, 2, 2});
  ASSERT_TRUE(rows.has_value());
  ASSERT_EQ(rows->shape(), (Shape{2 * 2 * 3, 12}));
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t t = 0; t < 2; ++t)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t w = 0; w < 6; ++w) {
          const int64_t row = (t * 2 + h / 2) * 3 + w / 2, col = (c * 2 + h % 2) * 2 + w % 2;
          ASSERT_EQ(rows->data<float>()[row * 12 + col], static_cast<float>(((c * 2 + t) * 4 + h) * 6 + w));
        }
  Expected<Tensor> back = pipeline::unpatchify_video_rows(*rows, 3, 2, 4, 6, {1, 2, 2});
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(std::memcmp(back->data<float>(), z.data<float>(), z.nbytes()), 0);
}

TEST(LatentPacking, RefusesShapesThePatchDoesNotDivide) {
  Expected<Tensor> odd = pipeline::patchify_video_latents(Tensor::zeros({4, 2, 5, 6}, DType::kF32), {1, 2, 2});
  ASSERT_FALSE(odd.has_value());
  EXPECT_NE(odd.status().message().find("not divisible"), std::string::npos);
  EXPECT_FALSE(pipeline::unpatchify_video_rows(Tensor::zeros({5, 16}, DType::kF32), 4, 2, 4, 6, {1, 2, 2}).has_value());
  EXPECT_FALSE(pipeline::audio_rows_to_batch(Tensor::zeros({7, 8}, DType::kF32), 2).has_value());
  Expected<Tensor> batch = pipeline::audio_rows_to_batch(Tensor::zeros({8, 3}, DType::kF32), 2);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->shape(), (Shape{2, 4, 3}));
}

TEST(DenoiseLoop, PlansOneTableForEveryStep) {
  pipeline::LayoutRequest r;
  r.text_rows = 3;
  r.latent_frames = 2;
  r.latent_height = 2;
  r.latent_width = 2;
  r.audio_latents = 2;
  Expected<pipeline::PackedLayout> layout = pipeline::build_packed_layout(r);
  ASSERT_TRUE(layout.has_value());
  Expected<pipeline::H3Schedule> v = pipeline::make_h3_schedule(9, 12.0), a = pipeline::make_h3_schedule(9, 3.0);
  ASSERT_TRUE(v.has_value() && a.has_value());
  const pipeline::TimestepPlan plan = pipeline::plan_timesteps(*layout, *v, *a);
  EXPECT_EQ(plan.steps(), 8);
  EXPECT_EQ(plan.timesteps.numel(), 15);  // t = 0 is shared by both schedules' first step
  for (int64_t i = 0; i < plan.steps(); ++i) {
    const int64_t* idx = plan.step_indices[static_cast<size_t>(i)].data<int64_t>();
    const float* t = plan.timesteps.data<float>();
    for (int64_t row = 0; row < layout->rows; ++row) {
      const bool is_audio = std::find(layout->audio_indices.data<int64_t>(),
                                      layout->audio_indices.data<int64_t>() + layout->audio_indices.numel(),
                                      row) != layout->audio_indices.data<int64_t>() + layout->audio_indices.numel();
      ASSERT_EQ(t[idx[row]], is_audio ? a->timesteps[i] : v->timesteps[i]) << "step " << i << " row " << row;
    }
  }
}

TEST(DenoiseLoop, RefusesRowsThatDoNotFitTheModel) {
  Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(w.has_value());
  pipeline::LayoutRequest r;
  r.text_rows = 2;
  r.latent_frames = 1;
  r.latent_height = 2;
  r.latent_width = 2;
  r.audio_latents = 1;
  Expected<pipeline::PackedLayout> layout = pipeline::build_packed_layout(r);
  Expected<pipeline::H3Schedule> s = pipeline::make_h3_schedule(3, 3.0);
  ASSERT_TRUE(layout.has_value() && s.has_value());
  pipeline::DenoiseRequest req;
  req.layout = &*layout;
  req.video_schedule = &*s;
  req.audio_schedule = &*s;
  req.text = Tensor::zeros({2, 8}, DType::kF32);
  req.video_rows = Tensor::zeros({1, 16}, DType::kF32);
  req.audio_rows = Tensor::zeros({2, 5}, DType::kF32);  // the model has 6 audio channels
  h3::CpuDenoiser denoiser(*w);
  Expected<pipeline::DenoiseResult> out = pipeline::denoise(denoiser, req);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.status().code(), ErrorCode::kShapeMismatch);
  EXPECT_NE(out.status().message().find("audio rows"), std::string::npos) << out.status().to_string();
}

}  // namespace
}  // namespace orochi
