// The units a multi-GPU decode will distribute: chunks decoded independently (in any order, any
// subset per rank) and joined by assemble_chunks / output_block give the one-call decode bit for
// bit; so do tiles decoded one by one and stitched.
#include <gtest/gtest.h>

#include <cstring>

#include "models/h3_video_vae/temporal.h"
#include "support/paths.h"
#include "support/random.h"

namespace orochi {
namespace {

std::string vae_dir() { return testing::test_data_dir() + "/h3_video_vae/vae"; }

bool bit_equal(const Tensor& a_in, const Tensor& b_in) {
  if (a_in.shape() != b_in.shape()) return false;
  const Tensor a = a_in.contiguous(), b = b_in.contiguous();
  return std::memcmp(a.data<float>(), b.data<float>(), a.nbytes()) == 0;
}

class VideoVaeChunks : public ::testing::Test {
 protected:
  void SetUp() override {
    Expected<h3vae::DecoderWeights> w = h3vae::load_decoder_weights(vae_dir());
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = std::move(w).value();
    options_.tile_height = 12, options_.tile_width = 16, options_.min_overlap_height = 4, options_.min_overlap_width = 8;
  }
  h3vae::DecoderWeights weights_;
  h3vae::DecodeOptions options_;
};

TEST_F(VideoVaeChunks, ThreeChunksDecodedSeparatelyAssembleBitExactly) {
  const Tensor z = testing::random_normal({4, 17, 5, 7}, 41);  // 17 = 5·3 + 2: three chunks
  Expected<Tensor> whole = h3vae::decode(weights_, z, options_);
  ASSERT_TRUE(whole.has_value()) << whole.status().to_string();
  ASSERT_EQ(whole->shape(), (Shape{3, 56, 20, 28}));  // 17·3 + 5 frames

  // Decoded in reverse order, each call on its own.
  std::vector<Tensor> clips(3);
  for (int64_t i = 2; i >= 0; --i) {
    Expected<Tensor> clip = h3vae::decode_chunk(weights_, z, i, options_);
    ASSERT_TRUE(clip.has_value()) << clip.status().to_string();
    ASSERT_EQ(clip->shape(), (Shape{3, 28, 20, 28}));
    clips[i] = *clip;
  }
  // A rank holding only its latents z[10 : 17] decodes the same clip as chunk 0 of that slice.
  Expected<Tensor> from_slice = h3vae::decode_chunk(weights_, z.slice(1, 10, 17), 0, options_);
  ASSERT_TRUE(from_slice.has_value()) << from_slice.status().to_string();
  EXPECT_TRUE(bit_equal(*from_slice, clips[2]));
  Expected<Tensor> assembled = h3vae::assemble_chunks(weights_.config, clips, options_.blend_precision);
  ASSERT_TRUE(assembled.has_value());
  EXPECT_TRUE(bit_equal(*assembled, *whole));

  // A two-rank split, rank 0 owns chunks [0, 2), rank 1 owns [2, 3) and receives clip 1's tail only.
  // Rank 1 writes frames [34, 51) and the last 5.
  const Tensor tail_of_1 = h3vae::split_clip(weights_.config, clips[1]).tail.contiguous();
  Tensor only_tail = Tensor::zeros(clips[1].shape(), DType::kF32);  // everything else of clip 1 unknown
  const int64_t plane = 20 * 28;
  for (int64_t c = 0; c < 3; ++c)
    std::memcpy(only_tail.data<float>() + (c * 28 + 23) * plane, tail_of_1.data<float>() + c * 5 * plane,
                5 * plane * sizeof(float));
  const Tensor block2 = h3vae::output_block(weights_.config, clips[2], &only_tail, options_.blend_precision);
  EXPECT_TRUE(bit_equal(block2, whole->slice(1, 34, 51)));
  EXPECT_TRUE(bit_equal(h3vae::split_clip(weights_.config, clips[2]).tail, whole->slice(1, 51, 56)));
  const Tensor block0 = h3vae::output_block(weights_.config, clips[0], nullptr, options_.blend_precision);
  EXPECT_TRUE(bit_equal(block0, whole->slice(1, 0, 17)));
  // And the blend is real: block 1 is not just clip 1's head.
  EXPECT_FALSE(bit_equal(h3vae::split_clip(weights_.config, clips[1]).head, whole->slice(1, 17, 34)));
}

TEST_F(VideoVaeChunks, TilesDecodedOneByOneStitchBitExactly) {
  const Tensor z = testing::random_normal({4, 7, 5, 7}, 42);
  const Tensor window = h3vae::chunk_window(weights_.config, z, 0);
  const h3vae::TilePlan plan = h3vae::plan_tiles(weights_.config, 5, 7, options_);
  ASSERT_EQ(plan.rows.starts, (std::vector<int64_t>{0, 8}));
  ASSERT_EQ(plan.cols.starts, (std::vector<int64_t>{0, 4, 12}));
  ASSERT_EQ(plan.cols.overlaps, (std::vector<int64_t>{12, 8}));
  std::vector<std::vector<Tensor>> tiles(2);
  for (int64_t r = 1; r >= 0; --r)
    for (int64_t c = 0; c < 3; ++c)
      tiles[r].push_back(h3vae::decode_tile(weights_, h3vae::tile_latents(weights_.config, window, plan, r, c)));
  const Tensor stitched = h3vae::stitch_tiles(tiles, plan, options_.blend_precision);
  Expected<Tensor> clip = h3vae::decode_chunk(weights_, z, 0, options_);
  ASSERT_TRUE(clip.has_value());
  EXPECT_TRUE(bit_equal(stitched, *clip));
}

TEST_F(VideoVaeChunks, RepeatedDecodeIsDeterministic) {
  const Tensor z = testing::random_normal({4, 12, 3, 4}, 43);
  Expected<Tensor> a = h3vae::decode(weights_, z, options_);
  Expected<Tensor> b = h3vae::decode(weights_, z, options_);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_TRUE(bit_equal(*a, *b));
}

TEST(VideoVaeGeometry, ReleasedModelChunksAndTiles) {
  const h3vae::VideoVaeConfig c;  // the released defaults
  EXPECT_EQ(c.frame_pre_padding(), 3);
  EXPECT_EQ(c.tokens_chunk(), 5);
  EXPECT_EQ(c.token_overlap(), 2);
  EXPECT_EQ(c.frame_overlap(), 5);
  EXPECT_EQ(*h3vae::count_chunks(c, 37), 7);  // 124 frames
  EXPECT_EQ(h3vae::video_frames(c, 7), 124);
  const h3vae::TilePlan p480 = h3vae::plan_tiles(c, 30, 52, {});
  EXPECT_EQ(p480.count(), 12);
  const h3vae::TilePlan p768 = h3vae::plan_tiles(c, 48, 84, {});
  EXPECT_EQ(p768.count(), 28);
  h3vae::DecodeOptions off;
  off.tiling = false;
  EXPECT_EQ(h3vae::plan_tiles(c, 48, 84, off).count(), 1);
}

}  // namespace
}  // namespace orochi
