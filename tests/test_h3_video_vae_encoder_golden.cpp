// The video VAE encoder and the pipeline's encode recipe against diffusers (AutoencoderKLMiniMaxH3.encode and
// encode_vae_condition) on a tiny config, fp32, no autocast (tests/data/h3_video_vae_encoder, made by
// scripts/golden/make_h3_video_vae_encoder.py):
//   img:  one frame 32x24 (the single-frame path): the pixel normalization, every block, the moments;
//   vid:  22 frames 16x24: padded to two 17-frame clips, 7 latents; the blocks from level 1 on, both clips;
//   big:  one frame 288x272 at the released tiling (2 x 2 tiles of 256 px): the first tile and the blend;
//   tvid: 22 frames 40x32 with 24 px tiles: tiles and temporal chunking together.
// Every tensor within relative L2 1e-5; the seed-42 noise bit for bit; the final latents from the
// reference's moments within 1e-6 (bit for bit in practice), from ours bit for bit except where the
// fp16 round of z flips to the neighbouring fp16 value (at most one step, on at most 1% of them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "models/h3_video_vae/encoder_posterior.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using testing::golden_tensor;

std::string data_dir() { return testing::test_data_dir() + "/h3_video_vae_encoder"; }

// The script's pattern_pixels: uint8 [3, F, H, W] = (7x + 13y + 71c + 29f + (x·y mod 31)) mod 256.
Tensor pattern_pixels(int64_t frames, int64_t height, int64_t width) {
  Tensor t = Tensor::empty({3, frames, height, width}, DType::kU8);
  uint8_t* p = t.data<uint8_t>();
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < width; ++x)
          *p++ = static_cast<uint8_t>((7 * x + 13 * y + 71 * c + 29 * f + (x * y) % 31) % 256);
  return t;
}

class VideoVaeEncoderGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
    ASSERT_TRUE(g.has_value()) << g.status().to_string();
    golden_ = new weights::Checkpoint(std::move(g).value());
    Expected<h3vae::EncoderWeights> w = h3vae::load_encoder_weights(data_dir() + "/vae");
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = new h3vae::EncoderWeights(std::move(w).value());
  }
  static void TearDownTestSuite() {
    delete golden_;
    delete weights_;
  }
  static Tensor expected(const std::string& name) { return golden_tensor(*golden_, name); }
  // A stored uint8 [1, 3, F, H, W] as [3, F, H, W].
  static Tensor pixels(const std::string& name) {
    Tensor t = golden_->get(name).value();
    return t.view(Shape(t.shape().begin() + 1, t.shape().end())).clone();
  }

  // Encodes normalized pixels and records every named intermediate (first occurrence).
  Tensor encode(const Tensor& u8, const h3vae::EncodeOptions& options) {
    Expected<Tensor> x = h3vae::normalize_pixels(u8);
    EXPECT_TRUE(x.has_value()) << x.status().to_string();
    Expected<Tensor> m = h3vae::encode_moments(*weights_, *x, options, [&](const std::string& name, const Tensor& t) {
      if (!seen_.count(name)) seen_[name] = t.clone();
    });
    EXPECT_TRUE(m.has_value()) << m.status().to_string();
    return m ? *m : Tensor();
  }

  void expect_close(const std::string& label, const Tensor& ours, const std::string& theirs) {
    SCOPED_TRACE(label + " vs " + theirs);
    const Tensor want = expected(theirs);
    EXPECT_TENSOR_CLOSE(ours, want, 1e-5);
    if (ours.shape() == want.shape())
      std::printf("  %-28s %s\n", theirs.c_str(), testing::compare(ours, want).summary().c_str());
  }
  void expect_stage(const std::string& ours, const std::string& theirs) {
    auto it = seen_.find(ours);
    ASSERT_NE(it, seen_.end()) << "the encode never produced " << ours;
    expect_close(ours, it->second, theirs);
  }

  // The noise torch drew for this case, bit for bit, and the recipe's latents.
  void expect_posterior(const std::string& prefix, const Tensor& moments) {
    const Tensor ref_moments = expected(prefix + "moments");
    const int64_t C = ref_moments.dim(0) / 2;
    const Tensor noise = h3vae::posterior_noise(C, ref_moments.dim(1), ref_moments.dim(2), ref_moments.dim(3));
    if (golden_->contains(prefix + "noise")) {
      const Tensor want = expected(prefix + "noise");
      ASSERT_EQ(noise.shape(), want.shape());
      EXPECT_EQ(std::memcmp(noise.data<float>(), want.data<float>(), noise.nbytes()), 0) << prefix << "noise differs";
    }
    // From the reference's moments the recipe is exact elementwise fp32 arithmetic: the same bits
    // (exp may differ from torch's vectorized exp by an ulp, which the fp16 round almost always hides).
    Expected<Tensor> from_ref = h3vae::fp16_round_and_normalize(weights_->config, h3vae::sample_posterior(ref_moments, noise));
    ASSERT_TRUE(from_ref.has_value()) << from_ref.status().to_string();
    EXPECT_TENSOR_CLOSE(*from_ref, expected(prefix + "latents"), 1e-6);
    Expected<Tensor> ours = h3vae::fp16_round_and_normalize(weights_->config, h3vae::sample_posterior(moments, noise));
    ASSERT_TRUE(ours.has_value());
    expect_within_one_f16_step(*ours, prefix + "latents");
  }

  // From our moments (~1e-6 off torch's), the fp16 round of z lands on the neighbouring fp16 value
  // for the few elements sitting near a rounding boundary: allow exactly that, one fp16 step of z
  // (or 1e-5 where z is so near 0 that fp16 steps are finer), on at most 1% of the elements; every
  // other element must be bit-equal.
  void expect_within_one_f16_step(const Tensor& ours, const std::string& theirs) {
    const Tensor want = expected(theirs);
    ASSERT_EQ(ours.shape(), want.shape());
    const h3vae::VideoVaeConfig& c = weights_->config;
    const int64_t per_channel = want.numel() / c.latent_channels;
    int64_t flips = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const float a = ours.data<float>()[i], b = want.data<float>()[i];
      if (a == b) continue;
      ++flips;
      const int64_t ch = i / per_channel;
      const float z = b * c.latents_std[ch] + c.latents_mean[ch];
      const float step = std::ldexp(1.0f, std::max(std::ilogb(std::abs(z)), -14) - 10);  // fp16 spacing at |z|
      // Near z = 0 the fp16 steps are finer than the moments' own ~1e-6 error: allow that much there.
      EXPECT_LE(std::abs(a - b) * c.latents_std[ch], std::max(1.01f * step, 1e-5f)) << theirs << " element " << i;
    }
    std::printf("  %-28s %s, %lld of %lld elements one fp16 step apart\n", theirs.c_str(),
                testing::compare(ours, want).summary().c_str(), static_cast<long long>(flips),
                static_cast<long long>(want.numel()));
    EXPECT_LE(flips, want.numel() / 100 + 1) << theirs;
  }

  static weights::Checkpoint* golden_;
  static h3vae::EncoderWeights* weights_;
  std::map<std::string, Tensor> seen_;
};
weights::Checkpoint* VideoVaeEncoderGolden::golden_ = nullptr;
h3vae::EncoderWeights* VideoVaeEncoderGolden::weights_ = nullptr;

h3vae::EncodeOptions small_tiles() {
  h3vae::EncodeOptions o;  // the golden's enable_tiling(24, 24, 8, 8)
  o.tile_height = 24, o.tile_width = 24, o.min_overlap_height = 8, o.min_overlap_width = 8;
  return o;
}

TEST_F(VideoVaeEncoderGolden, PixelNormalizationIsBitExact) {
  Expected<Tensor> x = h3vae::normalize_pixels(pixels("img.pixels"));
  ASSERT_TRUE(x.has_value()) << x.status().to_string();
  const Tensor want = expected("img.x");
  ASSERT_EQ(x->shape(), want.shape());
  EXPECT_EQ(std::memcmp(x->data<float>(), want.data<float>(), want.nbytes()), 0);
}

TEST_F(VideoVaeEncoderGolden, SingleFrameEveryBlock) {
  const Tensor m = encode(pixels("img.pixels"), {});
  const std::string tile = "clip.0.tile.0.0.";
  for (const char* s : {"conv_in", "down.0.resnet.0", "down.0.downsample", "down.1.resnet.0", "down.1.downsample",
                        "down.2.resnet.0", "down.2.downsample", "down.3.resnet.0", "norm_out", "conv_out"})
    expect_stage(tile + s, std::string("img.") + s);
  expect_stage(tile + "moments", "img.tile_moments");
  expect_close("moments", m, "img.moments");
  expect_posterior("img.", m);
}

TEST_F(VideoVaeEncoderGolden, TwentyTwoFramesTwoClips) {
  const Tensor m = encode(pixels("vid.pixels"), {});
  const std::string tile = "clip.0.tile.0.0.";
  for (const char* s : {"down.1.downsample", "down.2.resnet.0", "down.2.downsample", "down.3.resnet.0", "norm_out",
                        "conv_out"})
    expect_stage(tile + s, std::string("vid.") + s);
  expect_stage(tile + "moments", "vid.tile_moments");
  expect_stage("clip.0", "vid.clip.0");
  expect_stage("clip.1", "vid.clip.1");
  ASSERT_EQ(m.shape(), (Shape{8, 7, 2, 3}));  // 22 frames -> 34 -> 2 x 5 latents - 3
  expect_close("moments", m, "vid.moments");
  expect_posterior("vid.", m);
}

TEST_F(VideoVaeEncoderGolden, ReleasedTilingOnALargeFrame) {
  const Tensor m = encode(pattern_pixels(1, 288, 272), {});
  EXPECT_TRUE(seen_.count("clip.0.tile.1.1.moments")) << "288x272 px must give 2 x 2 tiles of 256 px";
  expect_stage("clip.0.tile.0.0.moments", "big.tile_moments");
  expect_close("moments", m, "big.moments");
  expect_posterior("big.", m);
}

TEST_F(VideoVaeEncoderGolden, SmallTilesAndClipsTogether) {
  const Tensor m = encode(pattern_pixels(22, 40, 32), small_tiles());
  expect_stage("clip.0.tile.0.0.conv_out", "tvid.conv_out");
  expect_stage("clip.0.tile.0.0.moments", "tvid.tile_moments");
  expect_stage("clip.0", "tvid.clip.0");
  expect_stage("clip.1", "tvid.clip.1");
  expect_close("moments", m, "tvid.moments");
  expect_posterior("tvid.", m);
}

TEST_F(VideoVaeEncoderGolden, WholeRecipeFromUint8) {
  Expected<Tensor> latents = h3vae::encode_condition(*weights_, pixels("vid.pixels"));
  ASSERT_TRUE(latents.has_value()) << latents.status().to_string();
  expect_within_one_f16_step(*latents, "vid.latents");
}

}  // namespace
}  // namespace orochi
