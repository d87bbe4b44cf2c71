// The video VAE encoder on the GPU vs the CPU reference encoder, on the tiny golden config
// (tests/data/h3_video_vae_encoder/vae): one frame, a 22-frame clip and a tiled 22-frame clip,
// fp32 convolutions (tight) and TF32 (the reference's default, loose); the posterior recipe's
// latents; determinism; bad input. Every GPU path (padded copies, fused NCDHW, fused NDHWC). Skips
// without a GPU.
#include <cstring>

#include "models/h3_video_vae/cuda/gpu_encoder.h"
#include "models/h3_video_vae/encoder_posterior.h"
#include "support/paths.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;
using h3vae::gpu::GpuVideoEncoder;

constexpr h3vae::gpu::EncoderPath kPaths[] = {h3vae::gpu::EncoderPath::kPaddedCopies,
                                              h3vae::gpu::EncoderPath::kFusedNcdhw,
                                              h3vae::gpu::EncoderPath::kFusedNdhwc};

std::string vae_dir() { return testing::test_data_dir() + "/h3_video_vae_encoder/vae"; }

Tensor random_pixels(int64_t F, int64_t H, int64_t W, uint64_t seed) {
  Tensor t = Tensor::empty({3, F, H, W}, DType::kU8);
  uint64_t s = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t.data<uint8_t>()[i] = static_cast<uint8_t>(s >> 56);
  }
  return t;
}

class EncoderGpu : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    Expected<h3vae::EncoderWeights> w = h3vae::load_encoder_weights(vae_dir());
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    weights_ = std::move(w).value();
  }
  std::unique_ptr<GpuVideoEncoder> make(const h3vae::EncodeOptions& options, int64_t F, int64_t H, int64_t W,
                                        cuda::ConvMath math,
                                        h3vae::gpu::EncoderPath path = h3vae::gpu::EncoderPath::kPaddedCopies,
                                        bool device_tiles = false) {
    auto shape = h3vae::gpu::max_tile_shape(weights_.config, options, F, H, W);
    EXPECT_TRUE(shape.has_value()) << shape.status().to_string();
    if (!shape) return nullptr;
    h3vae::gpu::GpuEncoderOptions o;
    o.math = math;
    o.path = path;
    o.device_tiles = device_tiles;
    auto enc = GpuVideoEncoder::create(weights_.config, 0, *shape, o);
    EXPECT_TRUE(enc.has_value()) << enc.status().to_string();
    if (!enc) return nullptr;
    const Status s = (*enc)->upload(weights_);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return std::move(enc).value();
  }
  h3vae::EncoderWeights weights_;
};

TEST_F(EncoderGpu, MomentsMatchTheCpuReference) {
  h3vae::EncodeOptions small;
  small.tile_height = small.tile_width = 24, small.min_overlap_height = small.min_overlap_width = 8;
  struct Case {
    const char* name;
    int64_t F, H, W;
    h3vae::EncodeOptions options;
  };
  for (const Case& c : {Case{"image 32x24", 1, 32, 24, {}}, Case{"22 frames 16x24", 22, 16, 24, {}},
                        Case{"22 frames 40x32, 24 px tiles", 22, 40, 32, small}}) {
    Expected<Tensor> x = h3vae::normalize_pixels(random_pixels(c.F, c.H, c.W, 7));
    ASSERT_TRUE(x.has_value());
    Expected<Tensor> want = h3vae::encode_moments(weights_, *x, c.options);
    ASSERT_TRUE(want.has_value()) << want.status().to_string();
    for (h3vae::gpu::EncoderPath path : kPaths)
      for (bool device_tiles : {false, true}) {
        if (device_tiles && path == h3vae::gpu::EncoderPath::kPaddedCopies) continue;
        for (cuda::ConvMath math : {cuda::ConvMath::kF32, cuda::ConvMath::kTf32}) {
          auto enc = make(c.options, c.F, c.H, c.W, math, path, device_tiles);
          ASSERT_NE(enc, nullptr);
          enc->set_profiling(true);  // the stage timing must not change a result
          Expected<Tensor> got = enc->encode_moments(*x, c.options);
          ASSERT_TRUE(got.has_value()) << got.status().to_string();
          ASSERT_EQ(got->shape(), want->shape());
          EXPECT_FALSE(enc->stage_times().empty());
          const bool f32 = math == cuda::ConvMath::kF32;
          check_case(f32 ? "encoder_fp32" : "encoder_tf32",
                     std::string(c.name) + ", " + h3vae::gpu::encoder_path_name(path) +
                         (device_tiles ? ", device tiles" : ""),
                     *got, *want, f32 ? 1e-5 : 1e-2);
        }
      }
  }
}

TEST_F(EncoderGpu, RecipeLatentsAndDeterminism) {
  const Tensor u8 = random_pixels(22, 16, 24, 11);
  Expected<Tensor> cpu = h3vae::encode_condition(weights_, u8);
  ASSERT_TRUE(cpu.has_value());
  for (h3vae::gpu::EncoderPath path : kPaths) {
    auto enc = make({}, 22, 16, 24, cuda::ConvMath::kF32, path);
    ASSERT_NE(enc, nullptr);
    Expected<Tensor> a = enc->encode_condition(u8), b = enc->encode_condition(u8);
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(std::memcmp(a->data<float>(), b->data<float>(), a->nbytes()), 0)
        << "two encodes differ on " << h3vae::gpu::encoder_path_name(path);
    // The fp16 round can flip an element by one f16 ulp where the moments differ in the last bits.
    check_case("encode_condition_fp32", std::string("22 frames 16x24, ") + h3vae::gpu::encoder_path_name(path), *a,
               *cpu, 1e-4);
  }
}

TEST_F(EncoderGpu, BadInputIsAnError) {
  auto enc = make({}, 1, 32, 24, cuda::ConvMath::kF32);
  ASSERT_NE(enc, nullptr);
  EXPECT_FALSE(enc->encode_tile(Tensor::empty({4, 1, 32, 24}, DType::kF32)).has_value());
  // Larger than the planned tile.
  Expected<Tensor> big = enc->encode_tile(Tensor::empty({3, 17, 32, 24}, DType::kF32));
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.status().message().find("larger than"), std::string::npos) << big.status().to_string();
  EXPECT_FALSE(enc->encode_moments(Tensor::empty({3, 1, 12, 24}, DType::kF32)).has_value());
  // Device tiles: the input must fit the planned clip, and the padded-copies path cannot take them.
  auto dev = make({}, 1, 32, 24, cuda::ConvMath::kF32, h3vae::gpu::EncoderPath::kFusedNdhwc, true);
  ASSERT_NE(dev, nullptr);
  EXPECT_FALSE(dev->encode_moments(Tensor::empty({3, 1, 48, 24}, DType::kF32)).has_value());
  EXPECT_FALSE(dev->encode_moments(Tensor::empty({3, 2, 32, 24}, DType::kF32)).has_value());
  h3vae::gpu::GpuEncoderOptions legacy;
  legacy.path = h3vae::gpu::EncoderPath::kPaddedCopies;
  legacy.device_tiles = true;
  EXPECT_FALSE(GpuVideoEncoder::create(weights_.config, 0, {1, 32, 24, 32, 24}, legacy).has_value());
  auto none = GpuVideoEncoder::create(weights_.config, 0, {1, 32, 24}, cuda::ConvMath::kF32);
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE((*none)->encode_tile(Tensor::empty({3, 1, 32, 24}, DType::kF32)).has_value()) << "no weights yet";
}

}  // namespace
}  // namespace orochi
