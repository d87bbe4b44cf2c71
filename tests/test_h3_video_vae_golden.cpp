// The video VAE decoder against diffusers' AutoencoderKLMiniMaxH3.decode on the tiny config (fp32,
// no autocast; tests/data/h3_video_vae, made by scripts/golden/make_h3_video_vae.py):
//   a: 7 latent frames (one chunk), 4x5 latents, default tiling (one tile): every stage, the clip,
//      the video and the pipeline's pixels;
//   b: 12 latent frames (two chunks), 5x7 latents, tiles 12x16 px with overlaps 4 / 12, 8 px: every
//      stage of the first tile, chunk 0's stitched clip and the video.
// Every tensor within relative L2 1e-5; the reference's blend and tile layout bit for bit.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>

#include "models/h3_video_vae/pixels.h"
#include "models/h3_video_vae/temporal.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using testing::golden_tensor;

std::string data_dir() { return testing::test_data_dir() + "/h3_video_vae"; }

class VideoVaeGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
    ASSERT_TRUE(g.has_value()) << g.status().to_string();
    golden_ = new weights::Checkpoint(std::move(g).value());
    Expected<h3vae::DecoderWeights> w = h3vae::load_decoder_weights(data_dir() + "/vae");
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = new h3vae::DecoderWeights(std::move(w).value());
  }
  static void TearDownTestSuite() {
    delete golden_;
    delete weights_;
  }
  static Tensor expected(const std::string& name) { return golden_tensor(*golden_, name); }

  // Decodes a case's latents the way the pipeline does and records every intermediate.
  Tensor decode_case(const std::string& prefix, const h3vae::DecodeOptions& options) {
    Expected<Tensor> z = h3vae::denormalize_latents(weights_->config, expected(prefix + "latents"));
    EXPECT_TRUE(z.has_value()) << z.status().to_string();
    if (!z) return {};
    Expected<Tensor> video = h3vae::decode(*weights_, *z, options, [&](const std::string& name, const Tensor& t) {
      if (!seen_.count(name)) seen_[name] = t.clone();
    });
    EXPECT_TRUE(video.has_value()) << video.status().to_string();
    return video ? *video : Tensor();
  }

  void expect_stage(const std::string& ours, const std::string& theirs) {
    SCOPED_TRACE(ours + " vs " + theirs);
    auto it = seen_.find(ours);
    ASSERT_NE(it, seen_.end()) << "the decode never produced " << ours;
    Tensor want = expected(theirs);
    if (want.numel() == it->second.numel() && want.shape() != it->second.shape()) want = want.view(it->second.shape());
    EXPECT_TENSOR_CLOSE(it->second, want, 1e-5);
    std::printf("  %-28s %s\n", theirs.c_str(), testing::compare(it->second, want).summary().c_str());
  }

  void expect_tile_stages(const std::string& prefix) {
    const std::string tile = "chunk.0.tile.0.0.";
    for (const char* s : {"post_quant_conv", "proj_in", "tokens", "rope.cos", "rope.sin", "block.0", "block.1",
                          "norm_out", "tile"})
      expect_stage(tile + s, prefix + (std::string(s) == "tile" && prefix == "a." ? "clip.0" : s));
  }

  static weights::Checkpoint* golden_;
  static h3vae::DecoderWeights* weights_;
  std::map<std::string, Tensor> seen_;
};
weights::Checkpoint* VideoVaeGolden::golden_ = nullptr;
h3vae::DecoderWeights* VideoVaeGolden::weights_ = nullptr;

h3vae::DecodeOptions small_tiles() {
  h3vae::DecodeOptions o;  // the golden's enable_tiling(12, 16, 4, 8)
  o.tile_height = 12, o.tile_width = 16, o.min_overlap_height = 4, o.min_overlap_width = 8;
  return o;
}

TEST_F(VideoVaeGolden, OneChunkOneTileEveryStage) {
  const Tensor video = decode_case("a.", {});
  ASSERT_TRUE(video.defined());
  expect_tile_stages("a.");
  expect_stage("chunk.0.clip", "a.clip.0");
  EXPECT_TENSOR_CLOSE(video, expected("a.video"), 1e-5);
  std::printf("  %-28s %s\n", "a.video", testing::compare(video, expected("a.video")).summary().c_str());
  Expected<Tensor> pixels = h3vae::to_pixels(video);
  ASSERT_TRUE(pixels.has_value());
  EXPECT_TENSOR_CLOSE(*pixels, expected("a.pixels"), 1e-5);
  std::printf("  %-28s %s\n", "a.pixels", testing::compare(*pixels, expected("a.pixels")).summary().c_str());
  // The frame-major form the pipeline writes: the same values, frame by frame, bit for bit.
  Expected<Tensor> frames = h3vae::to_pixel_frames(video);
  ASSERT_TRUE(frames.has_value());
  const int64_t F = video.dim(1);
  ASSERT_EQ(frames->shape(), (Shape{F, 3, video.dim(2), video.dim(3)}));
  for (int64_t f = 0; f < F; ++f)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_TENSOR_CLOSE(frames->slice(0, f, f + 1).slice(1, c, c + 1).contiguous().view({video.dim(2), video.dim(3)}),
                          pixels->slice(0, c, c + 1).slice(1, f, f + 1).contiguous().view({video.dim(2), video.dim(3)}),
                          0.0);
  EXPECT_FALSE(h3vae::to_pixel_frames(Tensor::zeros({4, 2, 2, 2}, DType::kF32)).has_value());
}

TEST_F(VideoVaeGolden, TwoChunksTiledEveryStageOfTheFirstTile) {
  const Tensor video = decode_case("b.", small_tiles());
  ASSERT_TRUE(video.defined());
  expect_tile_stages("b.");
  expect_stage("chunk.0.clip", "b.clip.0");
  ASSERT_EQ(video.shape(), (Shape{3, 39, 20, 28}));
  EXPECT_TENSOR_CLOSE(video, expected("b.video"), 1e-5);
  std::printf("  %-28s %s\n", "b.video", testing::compare(video, expected("b.video")).summary().c_str());
  // 3 x 2 tiles were decoded per chunk, and no more.
  EXPECT_TRUE(seen_.count("chunk.1.tile.1.2.tile"));
  EXPECT_FALSE(seen_.count("chunk.1.tile.2.0.tile"));
  EXPECT_FALSE(seen_.count("chunk.2.clip"));
}

TEST_F(VideoVaeGolden, TilingChangesTheFrames) {
  // Untiled, case b no longer matches the (tiled) reference: tiling is part of the model.
  h3vae::DecodeOptions untiled;
  untiled.tiling = false;
  const Tensor video = decode_case("b.", untiled);
  ASSERT_TRUE(video.defined());
  EXPECT_GT(testing::compare(video, expected("b.video")).rel_l2, 1e-3);
}

TEST_F(VideoVaeGolden, BlendIsBitExactInEveryPrecision) {
  const std::pair<const char*, h3vae::BlendPrecision> precisions[] = {
      {"f32", h3vae::BlendPrecision::kF32}, {"f16", h3vae::BlendPrecision::kF16}, {"bf16", h3vae::BlendPrecision::kBF16}};
  int compared = 0;
  for (const auto& [name, precision] : precisions)
    for (int extent : {5, 8, 12, 80, 144, 300}) {
      const std::string p = std::string("blend.") + name + "." + std::to_string(extent) + ".";
      SCOPED_TRACE(p);
      const Tensor a = golden_->get(p + "a")->to(DType::kF32), b = golden_->get(p + "b")->to(DType::kF32);
      const Tensor want = golden_->get(p + "out")->to(DType::kF32);
      const Tensor got = h3vae::linear_blend(a, b, extent, 1, precision);
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_EQ(std::memcmp(got.data<float>(), want.data<float>(), want.nbytes()), 0);
      ++compared;
    }
  EXPECT_EQ(compared, 18);
}

TEST_F(VideoVaeGolden, TileLayoutMatchesTheReference) {
  for (int64_t length : {480, 768, 832, 1344, 256, 272, 100}) {
    SCOPED_TRACE(length);
    const std::string p = "split." + std::to_string(length) + ".";
    const h3vae::TileAxis axis = h3vae::split_tiles(length, 256, 64, 16);
    auto ints = [&](const std::string& n) {
      const Tensor t = golden_->get(p + n)->clone();
      return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
    };
    EXPECT_EQ(axis.starts, ints("starts"));
    EXPECT_EQ(axis.lengths, ints("lengths"));
    const std::vector<int64_t> overlaps = ints("overlaps");
    EXPECT_EQ(axis.overlaps, overlaps == std::vector<int64_t>{-1} ? std::vector<int64_t>{} : overlaps);
  }
}

}  // namespace
}  // namespace orochi
