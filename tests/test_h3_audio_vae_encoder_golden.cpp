// The H3 audio VAE encoder against diffusers' AutoencoderKLMiniMaxH3Audio.encode on a tiny config
// with the released hop of 800 (tests/data/h3_audio_vae_encoder, made by
// scripts/golden/make_h3_audio_vae_encoder.py): the ref2va pipeline's path from a stereo clip whose
// length is not a multiple of 800, through every encoder stage, the posterior mean and the
// normalization to packed audio rows, rel L2 <= 1e-5.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "models/h3_audio_vae/encoder.h"
#include "support/compare.h"
#include "support/paths.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

std::string data_dir() { return testing::test_data_dir() + "/h3_audio_vae_encoder"; }

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

h3_audio::AudioEncoderWeights load() {
  Expected<h3_audio::AudioEncoderWeights> w = h3_audio::load_encoder(data_dir() + "/audio_vae");
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

TEST(H3AudioVaeEncoderGolden, ConfigIsTheTinyOneWithTheReleasedHop) {
  const h3_audio::AudioEncoderWeights w = load();
  const h3_audio::AudioVaeConfig& c = w.config;
  EXPECT_EQ(c.encoder_hop_length(), 800);
  EXPECT_EQ(c.latent_dim, 32);
  EXPECT_EQ(c.latent_channels, 8);
  ASSERT_EQ(w.blocks.size(), 5u);
  EXPECT_EQ(w.blocks[4].stride, 5);
  EXPECT_EQ(w.blocks[4].down.weight.shape(), (Shape{32, 16, 10}));
  EXPECT_EQ(w.blocks[4].units[2].dilation, 9);
  EXPECT_EQ(w.conv_out.weight.shape(), (Shape{32, 32, 3}));
  EXPECT_EQ(w.pre_block.qkv_bias.shape(), (Shape{96}));
  EXPECT_EQ(w.pre_block.num_heads, 2);
}

TEST(H3AudioVaeEncoderGolden, WeightNormFoldMatchesTorch) {
  const weights::Checkpoint g = open_golden();
  const h3_audio::AudioEncoderWeights w = load();
  EXPECT_TENSOR_CLOSE(w.conv_in.weight, get(g, "folded.encoder.block.0.weight"), 1e-6);
  EXPECT_TENSOR_CLOSE(w.blocks[1].down.weight, get(g, "folded.encoder.block.2.block.4.weight"), 1e-6);
}

TEST(H3AudioVaeEncoderGolden, EveryStageMatchesDiffusers) {
  const weights::Checkpoint g = open_golden();
  const h3_audio::AudioEncoderWeights w = load();
  const Tensor waveform = get(g, "in.waveform");  // [2, N], N not a multiple of 800
  ASSERT_NE(waveform.dim(1) % 800, 0);
  const int64_t A = (waveform.dim(1) + 799) / 800;

  std::map<std::string, Tensor> seen;
  Expected<Tensor> rows = h3_audio::encode_reference_audio(
      w, waveform, [&](const std::string& name, const Tensor& t) { seen[name] = t.clone(); });
  ASSERT_TRUE(rows.has_value()) << rows.status().to_string();
  EXPECT_EQ(rows->shape(), (Shape{2, A, 8}));

  // The right-pad is zeros after the clip's own samples.
  const Tensor& padded = seen.at("padded");
  ASSERT_EQ(padded.shape(), (Shape{2, 1, 800 * A}));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 800 * A; ++i)
      ASSERT_EQ(padded.data<float>()[c * 800 * A + i],
                i < waveform.dim(1) ? waveform.data<float>()[c * waveform.dim(1) + i] : 0.0f)
          << c << " " << i;

  int compared = 0;
  for (const std::string& name : g.names()) {
    if (name.rfind("in.", 0) == 0 || name.rfind("folded.", 0) == 0 || name == "rows") continue;
    auto it = seen.find(name);
    ASSERT_NE(it, seen.end()) << "the encoder never produced " << name;
    const Tensor expected = get(g, name);
    SCOPED_TRACE(name);
    EXPECT_TENSOR_CLOSE(it->second, expected, 1e-5);
    std::printf("  %-24s %-14s %s\n", name.c_str(), shape_to_string(expected.shape()).c_str(),
                testing::compare(it->second, expected).summary().c_str());
    ++compared;
  }
  // conv_in, 3 residual units, 5 blocks, encoder, 3 pre_block branches, pre_block, mean, normalized.
  EXPECT_EQ(compared, 16);

  // The packed sequence's channel-major audio rows: all of channel 0, then all of channel 1.
  EXPECT_TENSOR_CLOSE(rows->view({2 * A, 8}), get(g, "rows"), 1e-5);
}

TEST(H3AudioVaeEncoderGolden, MonoIsRepeatedToStereo) {
  // A mono soundtrack is channel 0 on both sides: its rows equal channel 0's rows of the stereo clip.
  const weights::Checkpoint g = open_golden();
  const h3_audio::AudioEncoderWeights w = load();
  const Tensor waveform = get(g, "in.waveform");
  const Tensor left = waveform.slice(0, 0, 1).contiguous();  // [1, N]
  Expected<Tensor> mono = h3_audio::encode_reference_audio(w, left);
  ASSERT_TRUE(mono.has_value()) << mono.status().to_string();
  const Tensor expected = get(g, "normalized");  // [2, A, C]
  const int64_t A = expected.dim(1);
  ASSERT_EQ(mono->shape(), (Shape{2, A, 8}));
  EXPECT_TENSOR_CLOSE(mono->slice(0, 0, 1).contiguous(), expected.slice(0, 0, 1).contiguous(), 1e-5);
  EXPECT_TENSOR_CLOSE(mono->slice(0, 1, 2).contiguous(), expected.slice(0, 0, 1).contiguous(), 1e-5);
}

TEST(H3AudioVaeEncoderGolden, ItemsEncodeIndependentlyAndPaddingByHandChangesNothing) {
  const weights::Checkpoint g = open_golden();
  const h3_audio::AudioEncoderWeights w = load();
  const Tensor waveform = get(g, "in.waveform");
  Expected<Tensor> both = h3_audio::encode(w, waveform);
  Expected<Tensor> right = h3_audio::encode(w, waveform.slice(0, 1, 2).contiguous());
  ASSERT_TRUE(both.has_value() && right.has_value());
  EXPECT_TENSOR_CLOSE(*right, both->slice(0, 1, 2).contiguous(), 0.0);

  // Zeros appended by hand up to the next multiple of 800 equal the encoder's own right-pad.
  const int64_t N = waveform.dim(1), padded = (N + 799) / 800 * 800;
  Tensor by_hand = Tensor::empty({2, padded}, DType::kF32);
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < N; ++i) by_hand.data<float>()[c * padded + i] = waveform.data<float>()[c * N + i];
  Expected<Tensor> same = h3_audio::encode(w, by_hand);
  ASSERT_TRUE(same.has_value());
  EXPECT_TENSOR_CLOSE(*same, *both, 0.0);
}

}  // namespace
}  // namespace orochi
