// The CPU ops the video VAE decoder adds (backends/cpu/ops_vae.h) and its blend, against naive
// fp64 re-statements of their definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/ops_vae.h"
#include "core/dtype.h"
#include "models/h3_video_vae/blend.h"
#include "support/compare.h"
#include "support/random.h"

namespace orochi {
namespace {

using testing::random_normal;

Tensor tensor_from_doubles(const std::vector<double>& v, const Shape& shape) {
  std::vector<float> f(v.begin(), v.end());
  return Tensor::from_floats(f, shape);
}
const float* F(const Tensor& t) { return t.data<float>(); }

TEST(VideoVaeOps, LayerNormMatchesNaive) {
  for (const Shape& shape : {Shape{4, 32}, Shape{17, 2048}, Shape{1, 3}}) {
    const int64_t C = shape.back(), rows = shape[0];
    // A large common offset: a one-pass variance would lose most of its digits here.
    Tensor x = random_normal(shape, 21, 2.0f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += 50.0f;
    Tensor w = random_normal({C}, 22), b = random_normal({C}, 23);
    Tensor y = cpu::layer_norm(x, w, b, 1e-5f);
    std::vector<double> ref(x.numel());
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < C; ++c) mean += F(x)[r * C + c];
      mean /= C;
      for (int64_t c = 0; c < C; ++c) var += (F(x)[r * C + c] - mean) * (F(x)[r * C + c] - mean);
      var /= C;
      for (int64_t c = 0; c < C; ++c)
        ref[r * C + c] = (F(x)[r * C + c] - mean) / std::sqrt(var + 1e-5) * F(w)[c] + F(b)[c];
    }
    EXPECT_TENSOR_CLOSE(y, tensor_from_doubles(ref, shape), 1e-6);
  }
}

TEST(VideoVaeOps, AddScaledInplaceMatchesNaive) {
  const int64_t S = 9, C = 40;
  Tensor h = random_normal({S, C}, 24), y = random_normal({S, C}, 25), s = random_normal({C}, 26);
  Tensor out = h.clone();
  cpu::add_scaled_inplace(out, y, s);
  std::vector<double> ref(S * C);
  for (int64_t i = 0; i < S; ++i)
    for (int64_t c = 0; c < C; ++c)
      ref[i * C + c] = F(h)[i * C + c] + static_cast<double>(F(y)[i * C + c]) * F(s)[c];
  EXPECT_TENSOR_CLOSE(out, tensor_from_doubles(ref, {S, C}), 1e-6);
  Tensor wrong = random_normal({C + 1}, 27);
  EXPECT_THROW(cpu::add_scaled_inplace(out, y, wrong), InternalError);
}

TEST(VideoVaeOps, LinearBlendFadesOverTheOverlapAlongAnyDim) {
  // a [2, 6, 3], b [2, 5, 3] along dim 1 with extent 4: out[k < 4] mixes a's last 4 with b's first.
  Tensor a = random_normal({2, 6, 3}, 28), b = random_normal({2, 5, 3}, 29);
  Tensor out = h3vae::linear_blend(a, b, 4, 1, h3vae::BlendPrecision::kF32);
  ASSERT_EQ(out.shape(), b.shape());
  std::vector<double> ref(b.numel());
  for (int o = 0; o < 2; ++o)
    for (int k = 0; k < 5; ++k)
      for (int i = 0; i < 3; ++i) {
        const double vb = F(b)[(o * 5 + k) * 3 + i];
        ref[(o * 5 + k) * 3 + i] = k < 4 ? F(a)[(o * 6 + 2 + k) * 3 + i] * (1 - k / 4.0) + vb * (k / 4.0) : vb;
      }
  EXPECT_TENSOR_CLOSE(out, tensor_from_doubles(ref, b.shape()), 1e-6);
  // Along the last dim: the same as along dim 1 of the transposed data.
  Tensor a_last = random_normal({3, 7}, 30), b_last = random_normal({3, 7}, 31);
  Tensor out_last = h3vae::linear_blend(a_last, b_last, 7, 1, h3vae::BlendPrecision::kF32);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 7; ++k) {
      const double want = F(a_last)[r * 7 + k] * (1 - k / 7.0) + F(b_last)[r * 7 + k] * (k / 7.0);
      EXPECT_NEAR(F(out_last)[r * 7 + k], want, 1e-6);
    }
  // Extent beyond either length is clipped to the shorter one; extent 0 copies b.
  Tensor clipped = h3vae::linear_blend(a, b, 100, 1, h3vae::BlendPrecision::kF32);
  EXPECT_EQ(F(clipped)[0], F(a)[0 * 3 + 0 + 3 * 1] * 1.0f);  // k = 0 takes a[6 - 5] fully
  EXPECT_TENSOR_CLOSE(h3vae::linear_blend(a, b, 0, 1, h3vae::BlendPrecision::kF32), b, 0.0);
}

TEST(VideoVaeOps, ReducedPrecisionBlendRoundsEveryOp) {
  // fp16 arithmetic by hand for one value: w_b = fp16(1/3), w_a = fp16(1 - w_b), then
  // fp16(fp16(a·w_a) + fp16(b·w_b)).
  auto r16 = [](float v) { return f16_to_f32(f32_to_f16(v)); };
  const float av = r16(0.7f), bv = r16(-1.3f);
  Tensor a = Tensor::from_floats({0, 0, av}, {3}), b = Tensor::from_floats({0, bv, 0}, {3});
  Tensor out = h3vae::linear_blend(a.view({3}), b.view({3}), 3, 0, h3vae::BlendPrecision::kF16);
  const float wb = r16(1.0f / 3.0f), wa = r16(1.0f - wb);
  EXPECT_EQ(F(out)[1], r16(r16(0.0f * wa) + r16(bv * wb)));
  const float w2 = r16(2.0f / 3.0f);
  EXPECT_EQ(F(out)[2], r16(r16(av * r16(1.0f - w2)) + r16(0.0f * w2)));
  // It differs from the fp32 blend (the rounding is real).
  Tensor out32 = h3vae::linear_blend(a.view({3}), b.view({3}), 3, 0, h3vae::BlendPrecision::kF32);
  EXPECT_NE(F(out)[1], F(out32)[1]);
}

}  // namespace
}  // namespace orochi
