// A video's encode shared by several encoders (h3vae::encode_moments_split: each 17-frame clip whole
// on one rank, the ranks on a parallel context's workers, the moments joined as one encoder joins
// them), on CPU ranks (dist::make_cpu_context) with
// the demo's encoder weights: bit-identical to encode_moments for 2 to 4 ranks (more ranks than clips
// included), tiled frames and a partial last clip included; a single frame is rank 0's; a failing
// rank's error names its clip. The GPU engine shares a video's clips among its GPUs this way
// (engine/cuda/gpu_encoders.cpp).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "core/random.h"
#include "dist/cpu_parallel_context.h"
#include "models/h3_video_vae/encoder.h"
#include "pipeline/t2va_models.h"

namespace orochi::h3vae {
namespace {

const EncoderWeights& demo_encoder() {
  static const pipeline::T2vaModels demo = pipeline::demo_t2va_models(20261129);
  return *demo.video_encoder;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.contiguous().data<float>(), b.contiguous().data<float>(), a.nbytes()) == 0;
}

TEST(VideoEncoderSplit, AnyNumberOfRanksGivesOneEncodersBits) {
  const EncoderWeights& w = demo_encoder();
  EncodeOptions options;  // small tiles, so every clip is a stitch of several
  options.tile_height = options.tile_width = 64;
  options.min_overlap_height = options.min_overlap_width = 16;
  // 39 frames: 3 clips, the last one padded with the last frame; 64 x 96 px: 1 x 2 tiles.
  const Tensor x = normal_tensor({3, 39, 64, 96}, 7, 1);
  Expected<Tensor> one = encode_moments(w, x, options);
  ASSERT_TRUE(one.has_value()) << one.status().to_string();
  ASSERT_EQ(one->dim(1), 3 * 5 - w.config.token_drop);
  for (int ranks : {2, 3, 4}) {
    auto workers = dist::make_cpu_context(ranks, {});
    ASSERT_TRUE(workers.has_value()) << workers.status().to_string();
    std::vector<ClipEncoder> encoders;
    std::mutex m;
    std::set<std::thread::id> threads;
    for (int r = 0; r < ranks; ++r)
      encoders.push_back([&](const Tensor& clip) -> Expected<Tensor> {
        {
          std::lock_guard<std::mutex> lock(m);
          threads.insert(std::this_thread::get_id());
        }
        return encode_clip(w, clip, options);
      });
    Expected<Tensor> split = encode_moments_split(w.config, **workers, encoders, x, options);
    ASSERT_TRUE(split.has_value()) << split.status().to_string();
    EXPECT_TRUE(bit_equal(*split, *one)) << ranks << " ranks";
    EXPECT_EQ(threads.size(), static_cast<size_t>(std::min(ranks, 3))) << "one worker per rank that has clips";
  }
}

TEST(VideoEncoderSplit, OneFrameAndErrors) {
  const EncoderWeights& w = demo_encoder();
  const Tensor image = normal_tensor({3, 1, 64, 96}, 8, 1);
  auto workers = dist::make_cpu_context(2, {});
  ASSERT_TRUE(workers.has_value()) << workers.status().to_string();
  std::atomic<int> calls_on_rank1{0};
  std::vector<ClipEncoder> ranks = {[&](const Tensor& c) -> Expected<Tensor> { return encode_clip(w, c, {}); },
                                    [&](const Tensor& c) -> Expected<Tensor> {
                                      ++calls_on_rank1;
                                      return encode_clip(w, c, {});
                                    }};
  Expected<Tensor> split = encode_moments_split(w.config, **workers, ranks, image);
  ASSERT_TRUE(split.has_value()) << split.status().to_string();
  EXPECT_TRUE(bit_equal(*split, *encode_moments(w, image)));
  EXPECT_EQ(calls_on_rank1.load(), 0);  // one frame is one clip: rank 0's

  ranks[1] = [](const Tensor&) -> Expected<Tensor> { return Status(ErrorCode::kInternal, "rank 1 lost its GPU"); };
  Expected<Tensor> failed = encode_moments_split(w.config, **workers, ranks, normal_tensor({3, 39, 64, 64}, 9, 1));
  ASSERT_FALSE(failed.has_value());
  EXPECT_NE(failed.status().message().find("rank 1 lost its GPU"), std::string::npos) << failed.status().to_string();
  EXPECT_NE(failed.status().to_string().find("clip 1"), std::string::npos) << failed.status().to_string();
  EXPECT_FALSE(encode_moments_split(w.config, **workers, {}, image).has_value());
  ranks.push_back(ranks[0]);  // three encoders, two workers
  EXPECT_FALSE(encode_moments_split(w.config, **workers, ranks, image).has_value());
  ranks.pop_back();
  EXPECT_FALSE(encode_moments_split(w.config, **workers, ranks, normal_tensor({3, 2, 60, 64}, 9, 1)).has_value());  // 60 px
}

}  // namespace
}  // namespace orochi::h3vae
