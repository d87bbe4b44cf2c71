// The ref2va packed layout against diffusers' modular MiniMax-H3 pipeline: tests/data/h3_ref2va_layout,
// made by scripts/golden/make_h3_ref2va_layout.py (MiniMaxH3Ref2VAPrepareLayoutStep and
// MiniMaxH3SetTimestepsStep run on real reference objects). Three reference mixes: two images of
// different aspect + a video with sound + an audio clip; a silent video + a clip + an image + a video
// whose soundtrack outlasts its frames; a clip first + a 4:1 image + a 2-latent silent video.
// Checked bit for bit: f64 positions (and their f32 cast), tags, the three index lists, the
// reference row counts, every step's (timestep, timestep_indices); plus the §5 example numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/check.h"
#include "pipeline/ref2va_layout.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using pipeline::ReferenceGeometry;
using pipeline::ReferenceKind;

const weights::Checkpoint& golden() {
  static weights::Checkpoint* g = [] {
    auto c = weights::Checkpoint::open(testing::test_data_dir() + "/h3_ref2va_layout/golden.safetensors");
    OROCHI_CHECK(c.has_value(), c.status().to_string());
    return new weights::Checkpoint(std::move(c).value());
  }();
  return *g;
}

Tensor raw(const std::string& name) {
  Expected<Tensor> t = golden().get(name);
  OROCHI_CHECK(t.has_value(), name + ": " + t.status().to_string());
  return t->clone();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// The request as the golden stored it: target geometry from `counts`, references from `geometry`.
pipeline::Ref2vaLayoutRequest request_of(const std::string& c) {
  const Tensor tags = raw(c + ".text_token_tags"), geom = raw(c + ".geometry"), counts = raw(c + ".counts");
  const int64_t* k = counts.data<int64_t>();
  pipeline::Ref2vaLayoutRequest r;
  r.text_tags.assign(tags.data<int64_t>(), tags.data<int64_t>() + tags.numel());
  r.latent_frames = k[2];
  r.latent_height = k[3];
  r.latent_width = k[4];
  r.audio_latents = k[5];
  const int64_t* g = geom.data<int64_t>();
  for (int64_t i = 0; i < geom.dim(0); ++i, g += 5) {
    if (g[0] == 0) r.references.push_back(ReferenceGeometry::image(g[2], g[3]));
    if (g[0] == 1) r.references.push_back(ReferenceGeometry::video(g[1], g[2], g[3], g[4]));
    if (g[0] == 2) r.references.push_back(ReferenceGeometry::audio(g[4]));
  }
  return r;
}

class Ref2vaLayoutGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(Ref2vaLayoutGolden, MatchesDiffusersBitForBit) {
  const std::string c = GetParam();
  Expected<pipeline::Ref2vaLayout> built = pipeline::build_ref2va_layout(request_of(c));
  ASSERT_TRUE(built.has_value()) << built.status().to_string();
  const pipeline::PackedLayout& p = built->packed;
  const Tensor pos = raw(c + ".position_ids");
  ASSERT_EQ(pos.dtype(), DType::kF64);
  EXPECT_EQ(p.rows, pos.dim(0));
  EXPECT_TRUE(same_bits(built->positions_f64, pos)) << c << ": f64 positions differ";
  EXPECT_TRUE(same_bits(p.positions, pos.to(DType::kF32))) << c << ": f32 positions differ";
  EXPECT_TRUE(same_bits(p.token_tags, raw(c + ".token_tags"))) << c;
  EXPECT_TRUE(same_bits(p.video_indices, raw(c + ".video_indices"))) << c;
  EXPECT_TRUE(same_bits(p.audio_indices, raw(c + ".audio_indices"))) << c;
  EXPECT_TRUE(same_bits(p.text_indices, raw(c + ".text_indices"))) << c;
  const Tensor counts = raw(c + ".counts");
  EXPECT_EQ(p.condition_video_rows, counts.data<int64_t>()[0]);
  EXPECT_EQ(p.condition_audio_rows, counts.data<int64_t>()[1]);

  // Every step's row plan from the same schedules the pipeline stepped.
  const Tensor tv = raw(c + ".video_timesteps"), ta = raw(c + ".audio_timesteps");
  int steps = 0;
  for (int k = 0; golden().get(c + ".timestep." + std::to_string(k)).has_value(); ++k, ++steps) {
    const pipeline::RowTimesteps rt =
        pipeline::assign_row_timesteps(p, tv.data<float>()[k], ta.data<float>()[k]);
    EXPECT_TRUE(same_bits(rt.timesteps, raw(c + ".timestep." + std::to_string(k)))) << c << " step " << k;
    EXPECT_TRUE(same_bits(rt.indices, raw(c + ".timestep_indices." + std::to_string(k)))) << c << " step " << k;
  }
  EXPECT_EQ(steps, 3);

  // The blocks' offsets reproduce the index streams (what the noise draws and the cut back use).
  const int64_t* vi = p.video_indices.data<int64_t>();
  const int64_t* ai = p.audio_indices.data<int64_t>();
  for (const pipeline::ReferenceRows& b : built->blocks) {
    if (b.audio_rows) {
      EXPECT_EQ(ai[b.audio_offset], b.first_row);
    }
    if (b.video_rows) {
      EXPECT_EQ(vi[b.video_offset], b.first_row + b.audio_rows);
    }
  }
  EXPECT_EQ(vi[p.condition_video_rows], built->target_video_start);
  EXPECT_EQ(ai[p.condition_audio_rows], built->target_audio_start);
}

INSTANTIATE_TEST_SUITE_P(Mixes, Ref2vaLayoutGolden, ::testing::Values("a", "b", "c"));

TEST(Ref2vaLayout, ClockAdvancesAsReferenceDoc) {
  // REF2VA.md §5's example at 1344x768 (84x48 latents), F = 124: an image of 3648x2048, a 124-frame
  // 1344x768 video with its soundtrack (207 latents), a 5.17 s clip (207 latents); L = 3.
  pipeline::Ref2vaLayoutRequest r;
  r.text_tags = {1, 1, 1};
  r.latent_frames = 37;
  r.latent_height = 48;
  r.latent_width = 84;
  r.audio_latents = 207;
  r.references = {ReferenceGeometry::image(128, 228), ReferenceGeometry::video(37, 48, 84, 207),
                  ReferenceGeometry::audio(207)};
  Expected<pipeline::Ref2vaLayout> l = pipeline::build_ref2va_layout(r);
  ASSERT_TRUE(l.has_value()) << l.status().to_string();
  ASSERT_EQ(l->blocks.size(), 3u);
  EXPECT_EQ(l->blocks[0].video_rows, 7296);
  EXPECT_EQ(l->blocks[1].audio_rows, 414);
  EXPECT_EQ(l->blocks[1].video_rows, 37 * 1008);
  EXPECT_EQ(l->blocks[1].origin, 4.0);
  EXPECT_EQ(l->blocks[2].origin, 4.0 + 207.0);  // max(207, 206.66666666666657)
  EXPECT_EQ(l->target_origin, 3.0 + 415.0);
  const double* pos = l->positions_f64.data<double>();
  const int64_t first_image_row = 3;
  EXPECT_NEAR(pos[first_image_row * 3 + 2], -5.354, 1e-3);
  EXPECT_NEAR(pos[first_image_row * 3 + 1], 4.012, 1e-3);
  const int64_t soundtrack = l->blocks[1].first_row;
  EXPECT_NEAR(pos[soundtrack * 3 + 2], -5.166, 1e-3);
  EXPECT_NEAR(pos[(soundtrack + 207) * 3 + 2], 36.158, 1e-3);
  EXPECT_EQ(l->packed.rows, 3 + 7296 + 414 + 37 * 1008 + 414 + 414 + 37 * 1008);

  // Four timesteps at most: t_v, t_a, 0.999 and 1.0; with t_v = 1 the visual references share it.
  pipeline::RowTimesteps rt = pipeline::assign_row_timesteps(l->packed, 0.25f, 0.5f);
  EXPECT_EQ(rt.timesteps.numel(), 4);
  rt = pipeline::assign_row_timesteps(l->packed, 1.0f, 0.5f);
  EXPECT_EQ(rt.timesteps.numel(), 2);
}

TEST(Ref2vaLayout, RefusesMalformedGeometry) {
  pipeline::Ref2vaLayoutRequest r;
  r.text_tags = {1};
  r.latent_frames = 2;
  r.latent_height = 4;
  r.latent_width = 4;
  r.audio_latents = 4;
  r.references = {ReferenceGeometry::image(3, 4)};
  EXPECT_FALSE(pipeline::build_ref2va_layout(r).has_value());
  r.references = {ReferenceGeometry::audio(0)};
  EXPECT_FALSE(pipeline::build_ref2va_layout(r).has_value());
  r.references = {ReferenceGeometry::video(0, 4, 4)};
  EXPECT_FALSE(pipeline::build_ref2va_layout(r).has_value());
  r.references = {ReferenceGeometry::image(2, 2)};
  r.text_tags = {2};
  EXPECT_FALSE(pipeline::build_ref2va_layout(r).has_value());
  r.text_tags = {};
  EXPECT_FALSE(pipeline::build_ref2va_layout(r).has_value());
}

}  // namespace
}  // namespace orochi
