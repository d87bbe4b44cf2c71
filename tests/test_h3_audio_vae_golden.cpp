// The H3 audio VAE decoder against diffusers' AutoencoderKLMiniMaxH3Audio on the tiny config
// (tests/data/h3_audio_vae, made by scripts/golden/make_h3_audio_vae.py): the pipeline's path from
// packed audio rows through denormalization, every decoder stage and the clamp, rel L2 <= 1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "models/h3_audio_vae/decoder.h"
#include "support/compare.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

std::string data_dir() { return testing::test_data_dir() + "/h3_audio_vae"; }

weights::Checkpoint open_golden() {
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return std::move(g).value();
}

Tensor get(const weights::Checkpoint& g, const std::string& name) {
  Expected<Tensor> t = g.get(name);
  OROCHI_CHECK(t.has_value(), t.status().to_string());
  return t->to(DType::kF32);
}

// [B, C, A] (diffusers' layout) -> [B, A, C] (latent rows).
Tensor channels_to_rows(const Tensor& x) {
  const int64_t B = x.dim(0), C = x.dim(1), A = x.dim(2);
  Tensor out = Tensor::empty({B, A, C}, DType::kF32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t a = 0; a < A; ++a) out.data<float>()[(b * A + a) * C + c] = x.data<float>()[(b * C + c) * A + a];
  return out;
}

h3_audio::AudioDecoderWeights load() {
  Expected<h3_audio::AudioDecoderWeights> w = h3_audio::load_decoder(data_dir() + "/audio_vae");
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

TEST(H3AudioVaeGolden, ConfigIsTheTinyOne) {
  const h3_audio::AudioDecoderWeights w = load();
  const h3_audio::AudioVaeConfig& c = w.config;
  EXPECT_EQ(c.decoder_dim, 16);
  EXPECT_EQ(c.latent_dim, 32);
  EXPECT_EQ(c.latent_channels, 8);
  EXPECT_EQ(c.hop_length(), 4);
  EXPECT_EQ(c.resblock_dilation_sizes, (std::vector<std::vector<int64_t>>{{1, 3}, {1, 3}}));
  EXPECT_EQ(c.latents_mean.size(), 8u);
  ASSERT_EQ(w.stages.size(), 2u);
  EXPECT_EQ(w.stages[1].blocks[1].kernel, 7);
  EXPECT_EQ(w.stages[0].up.weight.shape(), (Shape{16, 8, 4}));
}

TEST(H3AudioVaeGolden, WeightNormFoldMatchesTorch) {
  const weights::Checkpoint g = open_golden();
  const h3_audio::AudioDecoderWeights w = load();
  // Conv1d (g over output channels) and ConvTranspose1d (g over input channels).
  EXPECT_TENSOR_CLOSE(w.conv_pre.weight, get(g, "folded.decoder.conv_pre.weight"), 1e-6);
  EXPECT_TENSOR_CLOSE(w.stages[0].up.weight, get(g, "folded.decoder.ups.0.0.weight"), 1e-6);
}

TEST(H3AudioVaeGolden, EveryStageMatchesDiffusers) {
  const weights::Checkpoint g = open_golden();
  const h3_audio::AudioDecoderWeights w = load();

  // The pipeline's audio rows, channel-major: [2·A, C] viewed as [2, A, C].
  const Tensor rows = get(g, "in.rows");
  const int64_t A = rows.dim(0) / 2;
  Expected<Tensor> z = h3_audio::denormalize(w.config, rows.view({2, A, rows.dim(1)}));
  ASSERT_TRUE(z.has_value()) << z.status().to_string();
  // Same two roundings as z * std + mean: bit-equal.
  EXPECT_TENSOR_CLOSE(*z, channels_to_rows(get(g, "denormalized")), 0.0);

  std::map<std::string, Tensor> seen;
  Expected<Tensor> wave =
      h3_audio::decode(w, *z, [&](const std::string& name, const Tensor& t) { seen[name] = t.clone(); });
  ASSERT_TRUE(wave.has_value()) << wave.status().to_string();
  EXPECT_EQ(wave->shape(), (Shape{2, 4 * A}));

  int compared = 0;
  for (const std::string& name : g.names()) {
    if (name.rfind("in.", 0) == 0 || name.rfind("folded.", 0) == 0 || name == "denormalized") continue;
    auto it = seen.find(name);
    ASSERT_NE(it, seen.end()) << "the decoder never produced " << name;
    const Tensor expected = get(g, name);
    SCOPED_TRACE(name);
    EXPECT_TENSOR_CLOSE(it->second, expected, 1e-5);
    std::printf("  %-22s %-14s %s\n", name.c_str(), shape_to_string(expected.shape()).c_str(),
                testing::compare(it->second, expected).summary().c_str());
    ++compared;
  }
  // dec_in_proj, conv_pre, 2 x (up, 2 AMP blocks, mean), one inner activation, act_post, conv_post, out.
  EXPECT_EQ(compared, 14);

  const Tensor expected_out = get(g, "out");
  EXPECT_TENSOR_CLOSE(*wave, expected_out.view({2, 4 * A}), 1e-5);
  int clamped = 0;
  for (int64_t i = 0; i < wave->numel(); ++i) {
    const float v = wave->data<float>()[i];
    ASSERT_TRUE(v >= -1.0f && v <= 1.0f) << i;
    clamped += std::fabs(v) == 1.0f;
  }
  EXPECT_GT(clamped, 0) << "the golden should exercise the clamp";
  EXPECT_LT(clamped, wave->numel());
}

TEST(H3AudioVaeGolden, StereoChannelsDecodeIndependently) {
  // The model is mono: decoding channel 1 alone equals row 1 of the stereo decode.
  const weights::Checkpoint g = open_golden();
  const h3_audio::AudioDecoderWeights w = load();
  const Tensor z = channels_to_rows(get(g, "denormalized"));  // [2, A, C]
  Expected<Tensor> both = h3_audio::decode(w, z);
  Expected<Tensor> right = h3_audio::decode(w, z.slice(0, 1, 2).contiguous());
  ASSERT_TRUE(both.has_value() && right.has_value());
  EXPECT_TENSOR_CLOSE(*right, both->slice(0, 1, 2).contiguous(), 0.0);
}

}  // namespace
}  // namespace orochi
