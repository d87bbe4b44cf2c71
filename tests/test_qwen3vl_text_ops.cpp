// The language-model CPU ops (ops_llm.h) against naive fp64 loops written from their definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cpu/ops_llm.h"
#include "support/compare.h"

namespace orochi {
namespace {

Tensor random_tensor(const Shape& shape, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t = Tensor::empty(shape, DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

TEST(LlmOps, EmbeddingLookupReadsRowsOfAnyFloatDtype) {
  const Tensor table = random_tensor({7, 5}, 1);
  const Tensor ids = Tensor::from_ints({6, 0, 3, 3}, {4});
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
    const Tensor stored = table.to(d);
    const Tensor got = cpu::embedding_lookup(stored, ids);
    ASSERT_EQ(got.shape(), (Shape{4, 5}));
    const Tensor widened = stored.to(DType::kF32);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t c = 0; c < 5; ++c)
        EXPECT_EQ(got.data<float>()[i * 5 + c], widened.data<float>()[ids.data<int64_t>()[i] * 5 + c])
            << dtype_name(d) << " row " << i;
  }
  EXPECT_THROW(cpu::embedding_lookup(table, Tensor::from_ints({7}, {1})), InternalError);
}

TEST(LlmOps, SiluMulMatchesDefinition) {
  const Tensor g = random_tensor({3, 40}, 2, 3.0f), u = random_tensor({3, 40}, 3);
  const Tensor y = cpu::silu_mul(g, u);
  Tensor ref = Tensor::empty(g.shape(), DType::kF32);
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double x = g.data<float>()[i];
    ref.data<float>()[i] = static_cast<float>(x / (1.0 + std::exp(-x)) * u.data<float>()[i]);
  }
  EXPECT_TENSOR_CLOSE(y, ref, 1e-6);
}

// Naive fp64 causal GQA: query head h uses kv head h / (Hq / Hkv).
Tensor naive_causal_gqa(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t S = q.dim(0), Hq = q.dim(1), Hkv = k.dim(1), D = q.dim(2), group = Hq / Hkv;
  Tensor out = Tensor::empty(q.shape(), DType::kF32);
  const float* pq = q.data<float>();
  const float* pk = k.data<float>();
  const float* pv = v.data<float>();
  for (int64_t h = 0; h < Hq; ++h) {
    const int64_t g = h / group;
    for (int64_t i = 0; i < S; ++i) {
      std::vector<double> s(static_cast<size_t>(i + 1));
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += double(pq[(i * Hq + h) * D + d]) * pk[(j * Hkv + g) * D + d];
        s[j] = dot / std::sqrt(double(D));
        mx = std::max(mx, s[j]);
      }
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (int64_t j = 0; j <= i; ++j) acc += s[j] / sum * pv[(j * Hkv + g) * D + d];
        out.data<float>()[(i * Hq + h) * D + d] = static_cast<float>(acc);
      }
    }
  }
  return out;
}

TEST(LlmOps, CausalGqaAttentionMatchesNaive) {
  for (auto [Hq, Hkv] : {std::pair<int64_t, int64_t>{4, 2}, {8, 1}, {3, 3}}) {
    const int64_t S = 23, D = 16;
    const Tensor q = random_tensor({S, Hq, D}, 10 + Hq, 1.5f), k = random_tensor({S, Hkv, D}, 20 + Hkv, 1.5f);
    const Tensor v = random_tensor({S, Hkv, D}, 30);
    SCOPED_TRACE(std::to_string(Hq) + " q heads, " + std::to_string(Hkv) + " kv heads");
    EXPECT_TENSOR_CLOSE(cpu::causal_attention_gqa(q, k, v), naive_causal_gqa(q, k, v), 1e-6);
  }
}

TEST(LlmOps, CausalAttentionIgnoresLaterRows) {
  // Changing the last row's keys/values must not change any earlier output row.
  const int64_t S = 9, D = 8;
  const Tensor q = random_tensor({S, 4, D}, 40), v = random_tensor({S, 2, D}, 41);
  Tensor k = random_tensor({S, 2, D}, 42);
  const Tensor a = cpu::causal_attention_gqa(q, k, v);
  for (int64_t i = 0; i < 2 * D; ++i) k.data<float>()[(S - 1) * 2 * D + i] += 5.0f;
  const Tensor b = cpu::causal_attention_gqa(q, k, v);
  const int64_t row = 4 * D;
  for (int64_t i = 0; i < (S - 1) * row; ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  bool last_changed = false;
  for (int64_t i = (S - 1) * row; i < S * row; ++i) last_changed |= a.data<float>()[i] != b.data<float>()[i];
  EXPECT_TRUE(last_changed);
}

TEST(LlmOps, InterleavedSectionsOfTheReleasedModel) {
  // MODELS_H3.md §3: of 64 slots, h takes 1,4,…,58, w takes 2,5,…,59, t the rest (24 slots).
  const std::vector<int> axis = cpu::mrope_interleaved_axes(64, {24, 20, 20});
  int counts[3] = {0, 0, 0};
  for (int f = 0; f < 64; ++f) {
    const int expected = (f < 60 && f % 3 == 1) ? 1 : (f < 60 && f % 3 == 2) ? 2 : 0;
    EXPECT_EQ(axis[f], expected) << "slot " << f;
    ++counts[axis[f]];
  }
  EXPECT_EQ(counts[0], 24);
  EXPECT_EQ(counts[1], 20);
  EXPECT_EQ(counts[2], 20);
  // The tiny golden's [4, 2, 2] on 8 slots: h 1, 4; w 2, 5; t 0, 3, 6, 7.
  EXPECT_EQ(cpu::mrope_interleaved_axes(8, {4, 2, 2}), (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 0}));
  // A section wider than the slots is clamped like a Python slice: w gets only 2 and 5.
  EXPECT_EQ(cpu::mrope_interleaved_axes(8, {2, 3, 3}), (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1}));
}

TEST(LlmOps, MropeTableMatchesNaive) {
  const int64_t S = 6, F = 8;
  const Tensor inv = cpu::rope_inv_freq(static_cast<int>(F), 5e6f);
  const Tensor pos = Tensor::from_ints({0, 0, 0, 1, 1, 1, 5, 5, 5, 5, 6, 7, 9, 3, 2, 40, 41, 42}, {S, 3});
  const cpu::RopeTable t = cpu::mrope_interleaved_table(pos, inv, {4, 2, 2});
  ASSERT_EQ(t.cos.shape(), (Shape{S, 2 * F}));
  const int axis[8] = {0, 1, 2, 0, 1, 2, 0, 0};
  Tensor ref_cos = Tensor::empty({S, 2 * F}, DType::kF32), ref_sin = Tensor::empty({S, 2 * F}, DType::kF32);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t f = 0; f < F; ++f) {
      const double inv_f = 1.0 / std::pow(5e6, 2.0 * f / (2.0 * F));
      const double a = double(pos.data<int64_t>()[s * 3 + axis[f]]) * inv_f;
      ref_cos.data<float>()[s * 2 * F + f] = ref_cos.data<float>()[s * 2 * F + f + F] = float(std::cos(a));
      ref_sin.data<float>()[s * 2 * F + f] = ref_sin.data<float>()[s * 2 * F + f + F] = float(std::sin(a));
    }
  EXPECT_TENSOR_CLOSE(t.cos, ref_cos, 1e-6);
  EXPECT_TENSOR_CLOSE(t.sin, ref_sin, 1e-6);
  // Equal axes reduce to 1-D RoPE: every slot of row 1 uses position 1.
  for (int64_t f = 0; f < F; ++f)
    EXPECT_FLOAT_EQ(t.cos.data<float>()[2 * F + f], std::cos(inv.data<float>()[f]));
}

}  // namespace
}  // namespace orochi
