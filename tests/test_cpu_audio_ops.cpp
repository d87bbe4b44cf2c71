// The 1-D audio ops against naive fp64 re-statements of their PyTorch definitions, on several
// shapes (strides, dilations, groups, paddings wider than the input).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/ops_audio.h"
#include "support/compare.h"
#include "support/random.h"

namespace orochi {
namespace {

using testing::random_normal;

Tensor from_doubles(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from_floats(std::vector<float>(v.begin(), v.end()), shape);
}
double at(const Tensor& t, int64_t i) { return t.data<float>()[i]; }

struct ConvCase {
  int B, Cin, Cout, L, K, stride, padding, dilation, groups;
  bool bias;
};

// y[b, co, t] = bias[co] + sum_{ci in group, k} w[co, ci, k] · x[b, ci, t·s + k·d − p], zero outside.
Tensor naive_conv1d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvCase& c) {
  const int Cin_g = c.Cin / c.groups, Cout_g = c.Cout / c.groups;
  const int Lout = (c.L + 2 * c.padding - c.dilation * (c.K - 1) - 1) / c.stride + 1;
  std::vector<double> y(static_cast<size_t>(c.B) * c.Cout * Lout);
  for (int b = 0; b < c.B; ++b)
    for (int co = 0; co < c.Cout; ++co)
      for (int t = 0; t < Lout; ++t) {
        double acc = bias ? at(*bias, co) : 0.0;
        for (int ci = 0; ci < Cin_g; ++ci)
          for (int k = 0; k < c.K; ++k) {
            const int i = t * c.stride + k * c.dilation - c.padding;
            if (i < 0 || i >= c.L) continue;
            acc += at(w, (co * Cin_g + ci) * c.K + k) * at(x, (b * c.Cin + (co / Cout_g) * Cin_g + ci) * c.L + i);
          }
        y[(b * c.Cout + co) * Lout + t] = acc;
      }
  return from_doubles(y, {c.B, c.Cout, Lout});
}

// Full transposed conv by scattering every input sample, then crop `padding` from both ends.
Tensor naive_conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvCase& c) {
  const int Cin_g = c.Cin / c.groups, Cout_g = c.Cout / c.groups;
  const int full = (c.L - 1) * c.stride + c.K, Lout = full - 2 * c.padding;
  std::vector<double> y(static_cast<size_t>(c.B) * c.Cout * full, 0.0);
  for (int b = 0; b < c.B; ++b)
    for (int ci = 0; ci < c.Cin; ++ci)
      for (int j = 0; j < Cout_g; ++j)
        for (int t = 0; t < c.L; ++t)
          for (int k = 0; k < c.K; ++k) {
            const int co = (ci / Cin_g) * Cout_g + j;
            y[(b * c.Cout + co) * full + t * c.stride + k] +=
                at(x, (b * c.Cin + ci) * c.L + t) * at(w, (ci * Cout_g + j) * c.K + k);
          }
  std::vector<double> out;
  for (int b = 0; b < c.B; ++b)
    for (int co = 0; co < c.Cout; ++co)
      for (int t = 0; t < Lout; ++t)
        out.push_back(y[(b * c.Cout + co) * full + t + c.padding] + (bias ? at(*bias, co) : 0.0));
  return from_doubles(out, {c.B, c.Cout, Lout});
}

class Conv1dCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv1dCases, MatchesNaive) {
  const ConvCase c = GetParam();
  Tensor x = random_normal({c.B, c.Cin, c.L}, 11), w = random_normal({c.Cout, c.Cin / c.groups, c.K}, 12);
  Tensor b = random_normal({c.Cout}, 13);
  Tensor y = cpu::conv1d(x, w, c.bias ? &b : nullptr, {c.stride, c.padding, c.dilation, c.groups});
  EXPECT_TENSOR_CLOSE(y, naive_conv1d(x, w, c.bias ? &b : nullptr, c), 1e-6);
}
INSTANTIATE_TEST_SUITE_P(AudioOps, Conv1dCases,
                         ::testing::Values(ConvCase{1, 1, 1, 1, 1, 1, 0, 1, 1, false},   // the smallest
                                           ConvCase{2, 32, 16, 8, 7, 1, 3, 1, 1, true},  // conv_pre
                                           ConvCase{2, 8, 8, 16, 7, 1, 9, 3, 1, true},   // dilated: padding > L / 2
                                           ConvCase{1, 6, 6, 5, 3, 1, 15, 5, 1, true},   // padding wider than the input
                                           ConvCase{2, 6, 4, 23, 4, 2, 1, 1, 2, true},   // strided, grouped
                                           ConvCase{3, 5, 5, 30, 12, 2, 0, 1, 5, false},  // depthwise, stride 2
                                           ConvCase{1, 300, 70, 40, 11, 1, 25, 5, 1, true}));

class ConvTranspose1dCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTranspose1dCases, MatchesNaive) {
  const ConvCase c = GetParam();
  Tensor x = random_normal({c.B, c.Cin, c.L}, 21), w = random_normal({c.Cin, c.Cout / c.groups, c.K}, 22);
  Tensor b = random_normal({c.Cout}, 23);
  Tensor y = cpu::conv_transpose1d(x, w, c.bias ? &b : nullptr, {c.stride, c.padding, c.groups});
  EXPECT_TENSOR_CLOSE(y, naive_conv_transpose1d(x, w, c.bias ? &b : nullptr, c), 1e-6);
}
INSTANTIATE_TEST_SUITE_P(AudioOps, ConvTranspose1dCases,
                         ::testing::Values(ConvCase{1, 1, 1, 1, 1, 1, 0, 1, 1, false},
                                           ConvCase{2, 16, 8, 8, 4, 2, 1, 1, 1, true},   // tiny upsampler
                                           ConvCase{1, 32, 16, 9, 9, 5, 2, 1, 1, true},  // rate 5, kernel 9
                                           ConvCase{2, 6, 6, 13, 12, 2, 0, 1, 6,
                                                    false},  // depthwise, like the resampler
                                           ConvCase{1, 4, 6, 7, 5, 3, 3, 1, 2, true}));  // grouped, odd stride

TEST(AudioOps, ConvTransposeIsTheAdjointOfConv) {
  // <conv1d(u, w), v> == <u, conv_transpose1d(v, w)>: an independent check of both index maps.
  // L = 19 makes (L + 2p − K) divisible by the stride, so no output padding is needed.
  const int stride = 3, padding = 2, K = 5, L = 19;
  Tensor w = random_normal({4, 6, K}, 31);  // conv: 6 -> 4 channels; transposed: 4 -> 6
  Tensor u = random_normal({2, 6, L}, 32);
  Tensor cu = cpu::conv1d(u, w, nullptr, {stride, padding, 1, 1});
  Tensor v = random_normal(cu.shape(), 33);
  Tensor tv = cpu::conv_transpose1d(v, w, nullptr, {stride, padding, 1});
  ASSERT_EQ(tv.shape(), u.shape());
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < cu.numel(); ++i) lhs += at(cu, i) * at(v, i);
  for (int64_t i = 0; i < u.numel(); ++i) rhs += at(u, i) * at(tv, i);
  EXPECT_NEAR(lhs, rhs, 1e-5 * std::abs(lhs) + 1e-5);
}

TEST(AudioOps, PadReplicateRepeatsTheEdges) {
  Tensor x = random_normal({2, 3, 4}, 41);
  Tensor y = cpu::pad_replicate1d(x, 6, 2);  // wider than the input on the left
  ASSERT_EQ(y.shape(), (Shape{2, 3, 12}));
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(at(y, r * 12 + i), at(x, r * 4 + std::clamp<int64_t>(i - 6, 0, 3)));
}

TEST(AudioOps, SnakeBetaMatchesNaive) {
  Tensor x = random_normal({2, 5, 33}, 51, 3.0f), a = random_normal({5}, 52, 0.7f), b = random_normal({5}, 53, 0.7f);
  Tensor y = cpu::snake_beta(x, a, b);
  std::vector<double> ref(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 33) % 5;
    const double s = std::sin(std::exp(at(a, c)) * at(x, i));
    ref[i] = at(x, i) + s * s / (std::exp(at(b, c)) + 1e-9);
  }
  EXPECT_TENSOR_CLOSE(y, from_doubles(ref, x.shape()), 1e-6);
}

// The resamplers as diffusers composes them: pad, depthwise (transposed) conv, scale, crop.
Tensor reference_upsample(const Tensor& x, const Tensor& filter, int ratio) {
  const int K = static_cast<int>(filter.numel()), C = static_cast<int>(x.dim(1)), pad = K / ratio - 1;
  Tensor depthwise = Tensor::empty({C, 1, K}, DType::kF32);
  for (int c = 0; c < C; ++c)
    for (int k = 0; k < K; ++k) depthwise.data<float>()[c * K + k] = filter.data<float>()[k];
  Tensor padded = cpu::pad_replicate1d(x, pad, pad);
  ConvCase cc{static_cast<int>(x.dim(0)), C, C, static_cast<int>(padded.dim(2)), K, ratio, 0, 1, C, false};
  Tensor full = naive_conv_transpose1d(padded, depthwise, nullptr, cc);
  const int64_t left = pad * ratio + (K - ratio) / 2, right = pad * ratio + (K - ratio + 1) / 2;
  const int64_t Lf = full.dim(2), Lout = Lf - left - right;
  std::vector<double> out;
  for (int64_t r = 0; r < x.dim(0) * C; ++r)
    for (int64_t t = 0; t < Lout; ++t) out.push_back(ratio * at(full, r * Lf + left + t));
  return from_doubles(out, {x.dim(0), C, Lout});
}

Tensor reference_downsample(const Tensor& x, const Tensor& filter, int ratio) {
  const int K = static_cast<int>(filter.numel()), C = static_cast<int>(x.dim(1));
  Tensor depthwise = Tensor::empty({C, 1, K}, DType::kF32);
  for (int c = 0; c < C; ++c)
    for (int k = 0; k < K; ++k) depthwise.data<float>()[c * K + k] = filter.data<float>()[k];
  Tensor padded = cpu::pad_replicate1d(x, K / 2 - (K % 2 == 0), K / 2);
  ConvCase cc{static_cast<int>(x.dim(0)), C, C, static_cast<int>(padded.dim(2)), K, ratio, 0, 1, C, false};
  return naive_conv1d(padded, depthwise, nullptr, cc);
}

TEST(AudioOps, ResamplersMatchTheirDefinition) {
  for (int ratio : {2, 3}) {
    for (int K : {12, 7, 6}) {
      for (int L : {1, 2, 9, 40}) {
        SCOPED_TRACE("ratio " + std::to_string(ratio) + " K " + std::to_string(K) + " L " + std::to_string(L));
        Tensor x = random_normal({2, 3, L}, 61 + L), f = random_normal({K}, 62 + K);
        Tensor up = cpu::upsample1d_lowpass(x, f, ratio);
        EXPECT_EQ(up.shape(), (Shape{2, 3, ratio * L}));
        EXPECT_TENSOR_CLOSE(up, reference_upsample(x, f, ratio), 1e-6);
        Tensor down = cpu::downsample1d_lowpass(x, f, ratio);
        EXPECT_EQ(down.dim(2), (L - 1) / ratio + 1);
        EXPECT_TENSOR_CLOSE(down, reference_downsample(x, f, ratio), 1e-6);
      }
    }
  }
}

TEST(AudioOps, DownsampleKeepsAConstantWithAUnitSumFilter) {
  // Replicate padding keeps the edges constant too: nothing leaks in from outside.
  Tensor f = random_normal({12}, 71);
  double sum = 0;
  for (int k = 0; k < 12; ++k) sum += at(f, k);
  for (int k = 0; k < 12; ++k) f.data<float>()[k] = static_cast<float>(at(f, k) / sum);
  Tensor x = Tensor::from_floats(std::vector<float>(2 * 17, 0.75f), {1, 2, 17});
  Tensor y = cpu::downsample1d_lowpass(x, f, 2);
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(at(y, i), 0.75, 1e-5) << i;
}

TEST(AudioOps, ClampCutsBothSidesAndKeepsNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_floats({-3.0f, -1.0f, 0.25f, 1.0f, 7.0f, nan}, {6});
  cpu::clamp_inplace(x, -1.0f, 1.0f);
  const std::vector<float> want = {-1.0f, -1.0f, 0.25f, 1.0f, 1.0f};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(x.data<float>()[i], want[i]);
  EXPECT_TRUE(std::isnan(x.data<float>()[5]));
}

TEST(AudioOps, ShapeMismatchesAreInvariantFailures) {
  Tensor x = random_normal({1, 4, 10}, 81);
  EXPECT_ANY_THROW(cpu::conv1d(x, random_normal({3, 5, 3}, 82), nullptr));
  EXPECT_ANY_THROW(cpu::conv1d(x, random_normal({3, 4, 30}, 82), nullptr));  // kernel longer than input
  EXPECT_ANY_THROW(cpu::conv_transpose1d(x, random_normal({5, 3, 3}, 83), nullptr));
  EXPECT_ANY_THROW(cpu::snake_beta(x, random_normal({3}, 84), random_normal({4}, 85)));
  EXPECT_ANY_THROW(cpu::upsample1d_lowpass(x, random_normal({1}, 86), 2));
}

}  // namespace
}  // namespace orochi
