// The packed t2va/fl2va layout against the one diffusers' pipeline built for the tiny golden,
// and against the numbers MODELS_H3.md quotes for the real canvases.
#include <gtest/gtest.h>

#include <cstring>

#include "pipeline/packed_layout.h"
#include "support/compare.h"
#include "support/golden.h"

namespace orochi {
namespace {

using pipeline::build_packed_layout;
using pipeline::KeyframeAnchor;
using pipeline::LayoutRequest;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(PackedLayout, MatchesTheGoldenFl2vaLayoutBitForBit) {
  Expected<weights::Checkpoint> golden =
      weights::Checkpoint::open(testing::h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  LayoutRequest r;
  r.text_rows = 5;
  r.latent_frames = 2;
  r.latent_height = 4;
  r.latent_width = 6;
  r.audio_latents = 4;
  r.keyframes = {KeyframeAnchor::kFirst};
  Expected<pipeline::PackedLayout> layout = build_packed_layout(r);
  ASSERT_TRUE(layout.has_value()) << layout.status().to_string();
  const h3::H3Inputs in = testing::golden_inputs(*golden);
  EXPECT_EQ(layout->rows, 31);
  EXPECT_TRUE(same_bits(layout->positions, in.positions));
  EXPECT_TRUE(same_bits(layout->token_tags, in.token_tags));
  EXPECT_TRUE(same_bits(layout->video_indices, in.video_indices));
  EXPECT_TRUE(same_bits(layout->audio_indices, in.audio_indices));
  EXPECT_TRUE(same_bits(layout->text_indices, in.text_indices));
  const pipeline::RowTimesteps ts = pipeline::assign_row_timesteps(*layout, 0.35f, 0.6f);
  EXPECT_TRUE(same_bits(ts.timesteps, testing::golden_tensor(*golden, "in.timestep")));
  EXPECT_TRUE(same_bits(ts.indices, in.timestep_indices));
}

TEST(PackedLayout, RealCanvas480pGridAndClock) {
  // 832x480, 124 frames: latent 30x52, 37 latent frames, 207 audio latents per channel.
  LayoutRequest r;
  r.text_rows = 256;
  r.latent_frames = 37;
  r.latent_height = 30;
  r.latent_width = 52;
  r.audio_latents = 207;
  Expected<pipeline::PackedLayout> layout = build_packed_layout(r);
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->rows, 256 + 414 + 37 * 15 * 26);  // 15,100
  const float* p = layout->positions.data<float>();
  const int64_t first_video = 256 + 414;
  EXPECT_NEAR(p[first_video * 3 + 1], 3.8471, 1e-4);   // first h
  EXPECT_NEAR(p[first_video * 3 + 2], -5.0650, 1e-4);  // first w
  EXPECT_NEAR(p[(first_video + 25) * 3 + 2], 35.4446, 1e-4);  // last w
  const int64_t last_frame = first_video + 36 * 390;
  EXPECT_NEAR(p[last_frame * 3], 256 + 200.0, 1e-4);  // 37th latent frame at L + 200
  EXPECT_NEAR(p[(first_video + 390) * 3], 256 + 5.0 / 3.0, 3e-5);  // f32 spacing at 257 is 3e-5
  // Audio channel 1 is pinned to the last width coordinate.
  EXPECT_NEAR(p[(256 + 207) * 3 + 2], 35.4446, 1e-4);
  EXPECT_EQ(p[(256 + 207) * 3], 256.0f);
}

TEST(PackedLayout, LastKeyframeSitsOnTheLastPixelFrame) {
  LayoutRequest r{.text_rows = 10, .latent_frames = 37, .latent_height = 4, .latent_width = 4,
                  .audio_latents = 2, .audio_channels = 2, .patch_h = 2, .patch_w = 2,
                  .keyframes = {KeyframeAnchor::kLast}};
  Expected<pipeline::PackedLayout> layout = build_packed_layout(r);
  ASSERT_TRUE(layout.has_value());
  // L + (5/3)(F - 1) with F = 124 pixel frames.
  EXPECT_NEAR(layout->positions.data<float>()[10 * 3], 10 + 5.0 / 3.0 * 123, 1e-4);
}

TEST(PackedLayout, RejectsImpossibleRequests) {
  LayoutRequest r{.text_rows = 0, .latent_frames = 2, .latent_height = 4, .latent_width = 4, .audio_latents = 2,
                  .audio_channels = 2, .patch_h = 2, .patch_w = 2, .keyframes = {}};
  EXPECT_FALSE(build_packed_layout(r).has_value());
  r.text_rows = 3;
  r.latent_width = 5;  // not a multiple of the patch
  EXPECT_FALSE(build_packed_layout(r).has_value());
}

}  // namespace
}  // namespace orochi
