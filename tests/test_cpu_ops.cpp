// Every CPU op against a naive fp64 re-statement of its definition, on several shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/ops.h"
#include "support/compare.h"
#include "support/random.h"

namespace orochi {
namespace {

using testing::random_indices;
using testing::random_normal;

// Naive fp64 reference results are stored as f32 tensors for comparison.
Tensor tensor_from_doubles(const std::vector<double>& v, const Shape& shape) {
  std::vector<float> f(v.begin(), v.end());
  return Tensor::from_floats(f, shape);
}
const float* F(const Tensor& t) { return t.data<float>(); }

class LinearShapes : public ::testing::TestWithParam<std::tuple<int, int, int, bool>> {};

TEST_P(LinearShapes, MatchesNaive) {
  const auto [M, K, N, with_bias] = GetParam();
  Tensor x = random_normal({M, K}, 1), w = random_normal({N, K}, 2), b = random_normal({N}, 3);
  Tensor y = cpu::linear(x, w, with_bias ? &b : nullptr);
  std::vector<double> ref(M * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = with_bias ? F(b)[n] : 0.0;
      for (int k = 0; k < K; ++k) acc += static_cast<double>(F(x)[m * K + k]) * F(w)[n * K + k];
      ref[m * N + n] = acc;
    }
  EXPECT_TENSOR_CLOSE(y, tensor_from_doubles(ref, {M, N}), 1e-6);
}
INSTANTIATE_TEST_SUITE_P(CpuOps, LinearShapes,
                         ::testing::Values(std::make_tuple(1, 1, 1, false), std::make_tuple(7, 24, 5, true),
                                           std::make_tuple(33, 96, 40, true),
                                           std::make_tuple(5, 300, 3, false)));

TEST(CpuOps, LinearFlattensLeadingDims) {
  Tensor x = random_normal({2, 3, 8}, 4), w = random_normal({5, 8}, 5);
  Tensor y = cpu::linear(x, w);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 5}));
  Tensor y2 = cpu::linear(x.view({6, 8}), w);
  EXPECT_TENSOR_CLOSE(y.view({6, 5}), y2, 0.0);
}

TEST(CpuOps, RmsNormFullWidthAndPerHead) {
  for (const Shape& shape : {Shape{4, 24}, Shape{31, 2, 16}, Shape{1, 5376}}) {
    const int64_t C = shape.back();
    Tensor x = random_normal(shape, 6, 3.0f), w = random_normal({C}, 7);
    Tensor y = cpu::rms_norm(x, w, 1e-5f);
    const int64_t rows = x.numel() / C;
    std::vector<double> ref(x.numel());
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < C; ++c) ss += static_cast<double>(F(x)[r * C + c]) * F(x)[r * C + c];
      const double inv = 1.0 / std::sqrt(ss / C + 1e-5);
      for (int64_t c = 0; c < C; ++c) ref[r * C + c] = F(x)[r * C + c] * inv * F(w)[c];
    }
    EXPECT_TENSOR_CLOSE(y, tensor_from_doubles(ref, shape), 1e-6);
  }
}

TEST(CpuOps, SiluAndSwiglu) {
  Tensor u = random_normal({6, 2 * 32}, 8, 2.0f);
  Tensor y = cpu::swiglu(u);
  ASSERT_EQ(y.shape(), (Shape{6, 32}));
  std::vector<double> ref(6 * 32), ref_silu(u.numel());
  auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  for (int r = 0; r < 6; ++r)
    for (int i = 0; i < 32; ++i) ref[r * 32 + i] = F(u)[r * 64 + i] * silu(F(u)[r * 64 + 32 + i]);
  EXPECT_TENSOR_CLOSE(y, tensor_from_doubles(ref, {6, 32}), 1e-6);
  for (int64_t i = 0; i < u.numel(); ++i) ref_silu[i] = silu(F(u)[i]);
  EXPECT_TENSOR_CLOSE(cpu::silu(u), tensor_from_doubles(ref_silu, u.shape()), 1e-6);
}

TEST(CpuOps, ModulateAndGatedResidualIndexRowStridedTables) {
  const int64_t S = 13, C = 24, R = 9;
  Tensor x = random_normal({S, C}, 9), y = random_normal({S, C}, 10);
  Tensor table = random_normal({R, 6 * C}, 11, 0.5f);  // [R, 6C]: shift | scale | gate | ...
  Tensor idx = random_indices(S, R, 12);
  Tensor shift = table.slice(1, 0, C), scale = table.slice(1, C, 2 * C), gate = table.slice(1, 2 * C, 3 * C);
  Tensor m = cpu::modulate(x, shift, scale, idx);
  Tensor h = x.clone();
  cpu::gated_residual(h, gate, idx, y);
  std::vector<double> ref_m(S * C), ref_h(S * C);
  const float* t = F(table);
  for (int64_t s = 0; s < S; ++s) {
    const int64_t r = idx.data<int64_t>()[s];
    for (int64_t c = 0; c < C; ++c) {
      const double xv = F(x)[s * C + c];
      ref_m[s * C + c] = xv * (1.0 + t[r * 6 * C + C + c]) + t[r * 6 * C + c];
      ref_h[s * C + c] = xv + static_cast<double>(t[r * 6 * C + 2 * C + c]) * F(y)[s * C + c];
    }
  }
  EXPECT_TENSOR_CLOSE(m, tensor_from_doubles(ref_m, {S, C}), 1e-6);
  EXPECT_TENSOR_CLOSE(h, tensor_from_doubles(ref_h, {S, C}), 1e-6);
  Tensor bad = Tensor::from_ints(std::vector<int64_t>(S, R), {S});
  EXPECT_THROW(cpu::modulate(x, shift, scale, bad), InternalError);
}

TEST(CpuOps, TimestepEmbeddingCosFirst) {
  Tensor t = Tensor::from_floats({0.0f, 0.35f, 0.999f, 1.0f}, {4});
  const int dim = 256;
  Tensor e = cpu::timestep_embedding(t, dim);
  std::vector<double> ref(4 * dim);
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < dim / 2; ++k) {
      const double f = std::exp(-std::log(10000.0) * k / (dim / 2));
      ref[i * dim + k] = std::cos(F(t)[i] * f);
      ref[i * dim + dim / 2 + k] = std::sin(F(t)[i] * f);
    }
  EXPECT_TENSOR_CLOSE(e, tensor_from_doubles(ref, {4, dim}), 1e-6);
}

TEST(CpuOps, RopeRotatesFirst96Of128Channels) {
  const int64_t S = 7, H = 3, D = 128, Fq = 16;
  std::vector<float> pos;
  for (int64_t s = 0; s < S; ++s) {
    pos.push_back(256.0f + 1.6667f * s);
    pos.push_back(3.8471f + s);
    pos.push_back(-5.065f + 1.62f * s);
  }
  Tensor positions = Tensor::from_floats(pos, {S, 3});
  Tensor inv = cpu::rope_inv_freq(Fq, 10000.0f);
  EXPECT_NEAR(inv.data<float>()[1], std::pow(10000.0, -1.0 / 16), 1e-7);
  cpu::RopeTable table = cpu::rope_table(positions, inv);
  ASSERT_EQ(table.cos.shape(), (Shape{S, 96}));
  Tensor x = random_normal({S, H, D}, 13);
  Tensor y = x.clone();
  cpu::apply_rope(y, table);
  std::vector<double> ref(x.numel());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t h = 0; h < H; ++h) {
      const float* xr = F(x) + (s * H + h) * D;
      double* rr = ref.data() + (s * H + h) * D;
      for (int64_t i = 0; i < 48; ++i) {
        const double angle = static_cast<double>(pos[s * 3 + i / 16]) * F(inv)[i % 16];
        rr[i] = xr[i] * std::cos(angle) - xr[i + 48] * std::sin(angle);
        rr[i + 48] = xr[i + 48] * std::cos(angle) + xr[i] * std::sin(angle);
      }
      for (int64_t i = 96; i < D; ++i) rr[i] = xr[i];  // pass-through channels
    }
  EXPECT_TENSOR_CLOSE(y, tensor_from_doubles(ref, x.shape()), 2e-6);
}

class AttentionShapes : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(AttentionShapes, MatchesNaiveSoftmax) {
  const auto [S, H, D] = GetParam();
  Tensor q = random_normal({S, H, D}, 14), k = random_normal({S, H, D}, 15), v = random_normal({S, H, D}, 16);
  Tensor o = cpu::attention(q, k, v);
  std::vector<double> ref(q.numel()), p(S);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < S; ++i) {
      double mx = -1e300, sum = 0;
      for (int j = 0; j < S; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += static_cast<double>(F(q)[(i * H + h) * D + d]) * F(k)[(j * H + h) * D + d];
        p[j] = dot / std::sqrt(static_cast<double>(D));
        mx = std::max(mx, p[j]);
      }
      for (int j = 0; j < S; ++j) sum += (p[j] = std::exp(p[j] - mx));
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < S; ++j) acc += p[j] / sum * F(v)[(j * H + h) * D + d];
        ref[(i * H + h) * D + d] = acc;
      }
    }
  EXPECT_TENSOR_CLOSE(o, tensor_from_doubles(ref, q.shape()), 1e-6);
}
INSTANTIATE_TEST_SUITE_P(CpuOps, AttentionShapes,
                         ::testing::Values(std::make_tuple(1, 1, 4), std::make_tuple(31, 2, 16),
                                           std::make_tuple(70, 3, 128)));

TEST(CpuOps, GatherScatterRows) {
  Tensor x = random_normal({10, 5}, 17);
  Tensor idx = Tensor::from_ints({9, 0, 4}, {3});
  Tensor g = cpu::gather_rows(x, idx);
  for (int c = 0; c < 5; ++c) {
    EXPECT_EQ(g.data<float>()[c], x.data<float>()[45 + c]);
    EXPECT_EQ(g.data<float>()[5 + c], x.data<float>()[c]);
  }
  Tensor dst = Tensor::zeros({10, 5}, DType::kF32);
  cpu::scatter_rows(dst, idx, g);
  for (int c = 0; c < 5; ++c) {
    EXPECT_EQ(dst.data<float>()[45 + c], x.data<float>()[45 + c]);
    EXPECT_EQ(dst.data<float>()[5 + c], 0.0f);
  }
  EXPECT_THROW(cpu::gather_rows(x, Tensor::from_ints({10}, {1})), InternalError);
}

}  // namespace
}  // namespace orochi
