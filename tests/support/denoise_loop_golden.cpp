#include "support/denoise_loop_golden.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/check.h"
#include "pipeline/latent_packing.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi::testing {

weights::Checkpoint open_denoise_loop_golden() {
  Expected<weights::Checkpoint> g =
      weights::Checkpoint::open(test_data_dir() + "/h3_denoise_loop/golden.safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return std::move(g).value();
}

std::unique_ptr<DenoiseLoopCase> load_denoise_loop_case(const weights::Checkpoint& golden, const std::string& name) {
  if (name == "fl2va") return load_denoise_loop_case(golden, name, {pipeline::KeyframeAnchor::kFirst});
  return load_denoise_loop_case(golden, name, {});
}

std::unique_ptr<DenoiseLoopCase> load_denoise_loop_case(const weights::Checkpoint& golden, const std::string& name,
                                                        const std::vector<pipeline::KeyframeAnchor>& keyframes) {
  auto c = std::make_unique<DenoiseLoopCase>();
  const std::string p = name + ".";
  // The script's sizes: 5 text rows, 3 x 4 x 6 latents, 4 audio latents per channel.
  pipeline::LayoutRequest& r = c->layout_request;
  r.text_rows = 5;
  r.latent_frames = 3;
  r.latent_height = 4;
  r.latent_width = 6;
  r.audio_latents = 4;
  r.keyframes = keyframes;
  Expected<pipeline::PackedLayout> layout = pipeline::build_packed_layout(r);
  Expected<pipeline::H3Schedule> video = pipeline::make_h3_schedule(kDenoiseLoopSteps + 1, pipeline::kH3VideoShift);
  Expected<pipeline::H3Schedule> audio = pipeline::make_h3_schedule(kDenoiseLoopSteps + 1, pipeline::kH3AudioShift);
  Expected<Tensor> target = pipeline::patchify_video_latents(golden_tensor(golden, p + "video_noise"), {1, 2, 2});
  EXPECT_TRUE(layout.has_value() && video.has_value() && audio.has_value() && target.has_value());
  if (!layout || !video || !audio || !target) return nullptr;
  c->layout = std::move(layout).value();
  c->video_schedule = std::move(video).value();
  c->audio_schedule = std::move(audio).value();

  Tensor rows = *target;  // [Nv, 16]: conditioning rows (fl2va) first, then the target's noise
  if (c->layout.condition_video_rows > 0) {
    const Tensor cond = golden_tensor(golden, p + "condition_rows");
    EXPECT_EQ(cond.dim(0), c->layout.condition_video_rows);
    if (cond.dim(0) != c->layout.condition_video_rows) return nullptr;
    rows = Tensor::empty({cond.dim(0) + target->dim(0), target->dim(1)}, DType::kF32);
    std::memcpy(rows.data<float>(), cond.data<float>(), cond.nbytes());
    std::memcpy(rows.data<float>() + cond.numel(), target->data<float>(), target->nbytes());
  }
  pipeline::DenoiseRequest& req = c->request;
  req.layout = &c->layout;
  req.video_schedule = &c->video_schedule;
  req.audio_schedule = &c->audio_schedule;
  req.text = golden_tensor(golden, p + "text");
  req.video_rows = rows;
  req.audio_rows = golden_tensor(golden, p + "audio_noise");
  return c;
}

}  // namespace orochi::testing
