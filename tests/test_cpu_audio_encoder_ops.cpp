// The audio VAE encoder's CPU ops (Snake, the GeGLU product, the head pooling) against naive fp64
// re-statements of their PyTorch definitions.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "backends/cpu/ops_audio_encoder.h"
#include "support/compare.h"
#include "support/random.h"

namespace orochi {
namespace {

using testing::random_normal;

Tensor from_doubles(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from_floats(std::vector<float>(v.begin(), v.end()), shape);
}
double at(const Tensor& t, int64_t i) { return t.data<float>()[i]; }

TEST(AudioEncoderOps, SnakeMatchesNaive) {
  Tensor x = random_normal({2, 5, 33}, 11, 3.0f), alpha = random_normal({5}, 12, 0.5f);
  for (int64_t c = 0; c < 5; ++c) alpha.data<float>()[c] += 1.0f;  // DAC's alphas start at 1
  Tensor y = cpu::snake(x, alpha);
  std::vector<double> ref(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double a = at(alpha, (i / 33) % 5), s = std::sin(a * at(x, i));
    ref[i] = at(x, i) + s * s / (a + 1e-9);
  }
  EXPECT_TENSOR_CLOSE(y, from_doubles(ref, x.shape()), 1e-6);
}

TEST(AudioEncoderOps, SnakeWithNegativeAlphaAndZeroInput) {
  // A negative alpha flips the sign of the added term; x = 0 stays 0.
  Tensor x = Tensor::from_floats({0.0f, 1.0f, -2.0f}, {1, 1, 3});
  Tensor y = cpu::snake(x, Tensor::from_floats({-0.5f}, {1}));
  EXPECT_EQ(at(y, 0), 0.0);
  EXPECT_NEAR(at(y, 1), 1.0 - 2.0 * std::pow(std::sin(-0.5), 2), 1e-6);
  EXPECT_NEAR(at(y, 2), -2.0 - 2.0 * std::pow(std::sin(1.0), 2), 1e-6);
}

TEST(AudioEncoderOps, GeluTanhMulMatchesNaive) {
  Tensor g = random_normal({7, 19}, 21, 2.5f), u = random_normal({7, 19}, 22);
  Tensor y = cpu::gelu_tanh_mul(g, u);
  std::vector<double> ref(g.numel());
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double a = at(g, i);
    const double gelu = 0.5 * a * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (a + 0.044715 * a * a * a)));
    ref[i] = gelu * at(u, i);
  }
  EXPECT_TENSOR_CLOSE(y, from_doubles(ref, g.shape()), 1e-6);
  // Far tails: gelu(a) -> a for large a, -> 0 for very negative a.
  Tensor tails = cpu::gelu_tanh_mul(Tensor::from_floats({30.0f, -30.0f}, {2}), Tensor::from_floats({1.0f, 1.0f}, {2}));
  EXPECT_EQ(at(tails, 0), 30.0);
  EXPECT_NEAR(at(tails, 1), 0.0, 1e-30);
}

// mean over heads, then F.adaptive_avg_pool1d's windows, in fp64.
Tensor naive_pool_heads(const Tensor& x, int64_t out) {
  const int64_t S = x.dim(0), H = x.dim(1), D = x.dim(2);
  std::vector<double> y;
  for (int64_t s = 0; s < S; ++s) {
    std::vector<double> mean(D, 0.0);
    for (int64_t d = 0; d < D; ++d) {
      for (int64_t h = 0; h < H; ++h) mean[d] += at(x, (s * H + h) * D + d);
      mean[d] /= static_cast<double>(H);
    }
    for (int64_t i = 0; i < out; ++i) {
      const int64_t begin = static_cast<int64_t>(std::floor(static_cast<double>(i * D) / out));
      const int64_t end = static_cast<int64_t>(std::ceil(static_cast<double>((i + 1) * D) / out));
      double sum = 0;
      for (int64_t d = begin; d < end; ++d) sum += mean[d];
      y.push_back(sum / static_cast<double>(end - begin));
    }
  }
  return from_doubles(y, {S, out});
}

TEST(AudioEncoderOps, PoolHeadsMatchesNaive) {
  // Even windows (256 -> 32 as released, 16 -> 8 as the tiny model) and uneven, overlapping ones.
  for (auto [H, D, out] : std::vector<std::array<int64_t, 3>>{
           {8, 256, 32}, {2, 16, 8}, {3, 10, 4}, {1, 7, 3}, {2, 5, 5}, {4, 9, 1}, {2, 3, 7}}) {
    SCOPED_TRACE("H " + std::to_string(H) + " D " + std::to_string(D) + " out " + std::to_string(out));
    Tensor x = random_normal({6, H, D}, 31 + D);
    Tensor y = cpu::pool_heads(x, out);
    EXPECT_TENSOR_CLOSE(y, naive_pool_heads(x, out), 1e-6);
  }
}

TEST(AudioEncoderOps, PoolHeadsUnevenWindowsOverlap) {
  // D = 5 to 3: windows [0, 2), [1, 4), [3, 5).
  Tensor x = Tensor::from_floats({1, 2, 4, 8, 16}, {1, 1, 5});
  Tensor y = cpu::pool_heads(x, 3);
  EXPECT_FLOAT_EQ(y.data<float>()[0], 1.5f);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 14.0f / 3.0f);
  EXPECT_FLOAT_EQ(y.data<float>()[2], 12.0f);
}

TEST(AudioEncoderOps, ShapeMismatchesAreInvariantFailures) {
  Tensor x = random_normal({1, 4, 10}, 41);
  EXPECT_ANY_THROW(cpu::snake(x, random_normal({3}, 42)));
  EXPECT_ANY_THROW(cpu::gelu_tanh_mul(x, random_normal({1, 4, 9}, 43)));
  EXPECT_ANY_THROW(cpu::pool_heads(x, 0));
}

}  // namespace
}  // namespace orochi
