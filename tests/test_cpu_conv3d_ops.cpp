// The video VAE encoder's CPU ops (backends/cpu/ops_conv3d.h) against naive fp64 re-statements of
// their PyTorch definitions: F.conv3d after F.pad(causal zero frames), F.pad(mode="reflect"), and
// nn.GroupNorm with time folded into the batch.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/ops_conv3d.h"
#include "support/compare.h"
#include "support/random.h"

namespace orochi {
namespace {

using testing::random_normal;

double at(const Tensor& t, int64_t i) { return t.data<float>()[i]; }
Tensor from_doubles(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from_floats(std::vector<float>(v.begin(), v.end()), shape);
}

struct Conv3dCase {
  int Cin, Cout, T, H, W, kt, kh, kw, st, sh, sw, pad_t;
  bool bias;
};

// y[co, t, i, j] = b[co] + Σ w[co, ci, a, b, c] · x[ci, t·st + a − pad, i·sh + b, j·sw + c], x = 0 for frames < 0.
Tensor naive_conv3d(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv3dCase& c) {
  const int To = (c.T + c.pad_t - c.kt) / c.st + 1, Ho = (c.H - c.kh) / c.sh + 1, Wo = (c.W - c.kw) / c.sw + 1;
  std::vector<double> y;
  for (int co = 0; co < c.Cout; ++co)
    for (int t = 0; t < To; ++t)
      for (int i = 0; i < Ho; ++i)
        for (int j = 0; j < Wo; ++j) {
          double acc = bias ? at(*bias, co) : 0.0;
          for (int ci = 0; ci < c.Cin; ++ci)
            for (int a = 0; a < c.kt; ++a) {
              const int ti = t * c.st + a - c.pad_t;
              if (ti < 0) continue;
              for (int b = 0; b < c.kh; ++b)
                for (int d = 0; d < c.kw; ++d)
                  acc += at(w, (((co * c.Cin + ci) * c.kt + a) * c.kh + b) * c.kw + d) *
                         at(x, ((ci * c.T + ti) * c.H + i * c.sh + b) * c.W + j * c.sw + d);
            }
          y.push_back(acc);
        }
  return from_doubles(y, {c.Cout, To, Ho, Wo});
}

class Conv3dCases : public ::testing::TestWithParam<Conv3dCase> {};

TEST_P(Conv3dCases, MatchesNaive) {
  const Conv3dCase c = GetParam();
  Tensor x = random_normal({c.Cin, c.T, c.H, c.W}, 11), w = random_normal({c.Cout, c.Cin, c.kt, c.kh, c.kw}, 12);
  Tensor b = random_normal({c.Cout}, 13);
  cpu::Conv3dParams p;
  p.stride_t = c.st, p.stride_h = c.sh, p.stride_w = c.sw, p.causal_pad_t = c.pad_t;
  Tensor y = cpu::conv3d(x, w, c.bias ? &b : nullptr, p);
  EXPECT_TENSOR_CLOSE(y, naive_conv3d(x, w, c.bias ? &b : nullptr, c), 1e-6);
}
INSTANTIATE_TEST_SUITE_P(VaeEncoderOps, Conv3dCases,
                         ::testing::Values(Conv3dCase{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, false},  // the smallest
                                           Conv3dCase{3, 8, 1, 6, 5, 3, 3, 3, 1, 1, 1, 2, true},   // one frame
                                           Conv3dCase{4, 6, 17, 7, 9, 3, 3, 3, 1, 1, 1, 2, true},  // a clip
                                           Conv3dCase{5, 5, 17, 9, 8, 3, 3, 3, 2, 2, 2, 2, true},  // t+s stride 2
                                           Conv3dCase{6, 4, 9, 8, 10, 3, 3, 3, 1, 2, 2, 2, false}, // s stride only
                                           Conv3dCase{5, 7, 4, 3, 4, 1, 1, 1, 1, 1, 1, 0, true},   // 1x1x1
                                           Conv3dCase{2, 3, 3, 5, 6, 3, 2, 3, 1, 3, 1, 0, true})); // no pad

TEST(VaeEncoderOps, ReflectPadMirrorsWithoutTheEdge) {
  Tensor x = random_normal({2, 3, 4, 5}, 21);
  const int top = 1, bottom = 3, left = 2, right = 4;
  Tensor y = cpu::reflect_pad_hw(x, top, bottom, left, right);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 8, 11}));
  auto mirror = [](int i, int n) { return i < 0 ? -i : (i >= n ? 2 * n - 2 - i : i); };
  for (int k = 0; k < 6; ++k)
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 11; ++j)
        EXPECT_EQ(at(y, (k * 8 + i) * 11 + j), at(x, (k * 4 + mirror(i - top, 4)) * 5 + mirror(j - left, 5)))
            << k << " " << i << " " << j;
}

// nn.GroupNorm over [T, C, H, W] batches (one per frame), in fp64.
std::vector<double> naive_group_norm(const Tensor& x, const Tensor& w, const Tensor& b, int groups, double eps) {
  const int64_t C = x.dim(0), T = x.dim(1), HW = x.dim(2) * x.dim(3), cg = C / groups;
  std::vector<double> y(x.numel());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t g = 0; g < groups; ++g) {
      double mean = 0, var = 0;
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c)
        for (int64_t i = 0; i < HW; ++i) mean += at(x, (c * T + t) * HW + i);
      mean /= static_cast<double>(cg * HW);
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c)
        for (int64_t i = 0; i < HW; ++i) var += std::pow(at(x, (c * T + t) * HW + i) - mean, 2);
      var /= static_cast<double>(cg * HW);
      for (int64_t c = g * cg; c < (g + 1) * cg; ++c)
        for (int64_t i = 0; i < HW; ++i) {
          const int64_t k = (c * T + t) * HW + i;
          y[k] = (at(x, k) - mean) / std::sqrt(var + eps) * at(w, c) + at(b, c);
        }
    }
  return y;
}

TEST(VaeEncoderOps, GroupNormPerFrameMatchesNaive) {
  for (int groups : {1, 4, 8}) {
    // Frames with very different scales: statistics shared across frames would show at once.
    Tensor x = random_normal({8, 3, 5, 7}, 31 + groups);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = x.data<float>()[i] * (1 + 10 * ((i / 35) % 3)) + 3;
    Tensor w = random_normal({8}, 32), b = random_normal({8}, 33);
    const std::vector<double> ref = naive_group_norm(x, w, b, groups, 1e-6);
    EXPECT_TENSOR_CLOSE(cpu::group_norm_per_frame(x, w, b, groups, 1e-6f), from_doubles(ref, x.shape()), 1e-6);
    std::vector<double> act(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) act[i] = ref[i] / (1 + std::exp(-ref[i]));
    EXPECT_TENSOR_CLOSE(cpu::group_norm_silu_per_frame(x, w, b, groups, 1e-6f), from_doubles(act, x.shape()), 1e-6);
  }
}

TEST(VaeEncoderOps, GroupNormOfAConstantFrameIsTheBias) {
  // var = 0: the eps keeps rstd (1000) finite and the output is the bias, up to the rounding of the
  // folded form x·scale + (b − mean·scale) that torch's CPU kernel uses too (~|x·scale|·2^-24).
  Tensor x = Tensor::from_floats(std::vector<float>(4 * 2 * 3 * 3, 2.5f), {4, 2, 3, 3});
  Tensor w = random_normal({4}, 41), b = random_normal({4}, 42);
  Tensor y = cpu::group_norm_per_frame(x, w, b, 2, 1e-6f);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float scale = 1000.0f * std::abs(w.data<float>()[i / 18]);
    EXPECT_NEAR(y.data<float>()[i], b.data<float>()[i / 18], 2.5f * scale * 2e-7f + 1e-7f) << i;
  }
}

}  // namespace
}  // namespace orochi
