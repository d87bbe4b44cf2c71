// The FP8 attention's CPU reference (backends/cpu/attention_fp8.h): the pre-pass codes and scales
// against a direct computation, the V^T key permutation against the MMA fragment layouts it
// bridges, and the emulated attention's error against exact f32 attention on DiT-like inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "backends/cpu/attention_fp8.h"
#include "backends/cpu/ops.h"
#include "core/fp8.h"
#include "support/compare.h"
#include "support/random.h"
#include "support/rising_scores.h"

namespace orochi {
namespace {

using fp8_attention::kHeadDim;
using fp8_attention::kTile;

// q, k, v rounded to bf16 (what the GPU reads). k carries a per-(head, channel) bias of std
// `k_bias` shared by all keys, as DiT keys do; q and k at std 1.5 give peaked softmaxes.
struct DitLikeInputs {
  Tensor q, k, v;
};
DitLikeInputs dit_like(int64_t s_q, int64_t s_kv, int64_t heads, uint64_t seed, float k_bias) {
  DitLikeInputs in;
  in.q = testing::random_normal({s_q, heads, kHeadDim}, seed, 1.5f);
  in.k = testing::random_normal({s_kv, heads, kHeadDim}, seed + 1, 1.5f);
  in.v = testing::random_normal({s_kv, heads, kHeadDim}, seed + 2, 1.0f);
  const Tensor bias = testing::random_normal({heads, kHeadDim}, seed + 3, k_bias);
  float* k = in.k.data<float>();
  for (int64_t j = 0; j < s_kv; ++j)
    for (int64_t i = 0; i < heads * kHeadDim; ++i) k[j * heads * kHeadDim + i] += bias.data<float>()[i];
  in.q = in.q.to(DType::kBF16).to(DType::kF32);
  in.k = in.k.to(DType::kBF16).to(DType::kF32);
  in.v = in.v.to(DType::kBF16).to(DType::kF32);
  return in;
}

uint8_t e4m3(float x) { return f32_to_fp8(x, Fp8Format::kE4M3); }

TEST(AttentionFp8Cpu, CodesAndScalesMatchADirectComputation) {
  const int64_t Sq = 200, Skv = 300, H = 2;  // both pad their last tile
  const DitLikeInputs in = dit_like(Sq, Skv, H, 5, 3.f);
  const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(in.q, in.k, in.v);
  const auto& L = ops.layout;
  ASSERT_EQ(L.q_tiles, 2);
  ASSERT_EQ(L.k_tiles, 3);
  auto x = [H](const Tensor& t, int64_t row, int64_t h, int64_t c) { return t.data<float>()[(row * H + h) * kHeadDim + c]; };
  for (int64_t h = 0; h < H; ++h) {
    // The mean in double: the f32 one is within rounding of it.
    std::vector<float> mean(kHeadDim);
    for (int64_t c = 0; c < kHeadDim; ++c) {
      double sum = 0;
      for (int64_t j = 0; j < Skv; ++j) sum += x(in.k, j, h, c);
      mean[c] = ops.floats(L.k_mean)[h * kHeadDim + c];
      EXPECT_NEAR(mean[c], sum / Skv, 1e-5 * (1 + std::fabs(sum / Skv))) << "head " << h << " channel " << c;
    }
    for (int64_t t = 0; t < L.q_tiles; ++t) {
      float amax = 0;
      for (int64_t r = t * kTile; r < std::min(Sq, (t + 1) * kTile); ++r)
        for (int64_t c = 0; c < kHeadDim; ++c) amax = std::max(amax, std::fabs(x(in.q, r, h, c)));
      ASSERT_EQ(ops.floats(L.q_scale)[h * L.q_tiles + t], amax / 448.f);
      for (int64_t r = t * kTile; r < (t + 1) * kTile; ++r)
        for (int64_t c = 0; c < kHeadDim; ++c) {
          const uint8_t want = r < Sq ? e4m3(x(in.q, r, h, c) * (448.f / amax)) : 0;
          ASSERT_EQ(ops.at(L.q_codes)[(h * L.q_tiles * kTile + r) * kHeadDim + c], want) << "q row " << r;
        }
    }
    for (int64_t t = 0; t < L.k_tiles; ++t) {
      float amax = 0;
      for (int64_t r = t * kTile; r < std::min(Skv, (t + 1) * kTile); ++r)
        for (int64_t c = 0; c < kHeadDim; ++c) amax = std::max(amax, std::fabs(x(in.k, r, h, c) - mean[c]));
      ASSERT_EQ(ops.floats(L.k_scale)[h * L.k_tiles + t], amax / 448.f);
      for (int64_t r = t * kTile; r < (t + 1) * kTile; ++r)
        for (int64_t c = 0; c < kHeadDim; ++c) {
          const uint8_t want = r < Skv ? e4m3((x(in.k, r, h, c) - mean[c]) * (448.f / amax)) : 0;
          ASSERT_EQ(ops.at(L.k_codes)[(h * L.k_tiles * kTile + r) * kHeadDim + c], want) << "k row " << r;
        }
    }
    for (int64_t c = 0; c < kHeadDim; ++c) {
      float amax = 0;
      for (int64_t j = 0; j < Skv; ++j) amax = std::max(amax, std::fabs(x(in.v, j, h, c)));
      ASSERT_EQ(ops.floats(L.v_scale)[h * kHeadDim + c], amax / 448.f);
      for (int64_t j = 0; j < Skv; ++j) ASSERT_EQ(ops.v_code(h, c, j), e4m3(x(in.v, j, h, c) * (448.f / amax)));
      // The padding keys' columns (the last tile's keys 300..383) hold 0.
      const int64_t keys = L.k_tiles * kTile;
      for (int64_t col = 320; col < keys; ++col)
        ASSERT_EQ(ops.at(L.vt_codes)[(h * kHeadDim + c) * keys + col], 0) << "padding column " << col;
    }
  }
}

// key_of_column is a permutation of each 32-key chunk, and with the kernel's packing
// (score_in_register) every A-operand slot of the PV MMA receives the score of the key V^T holds
// there, on the same row. Fragment formulas (PTX ISA): accumulator value s[4i + e] of lane
// quad-index q is row (e < 2 ? r : r + 8), column 8i + 2q + (e & 1); A (8-bit, m64nNk32 / the
// m16n8k32 fragment) register `reg` byte b is row (reg odd ? r + 8 : r), column 4q + b (+ 16 for
// reg >= 2).
TEST(AttentionFp8Cpu, KeyPermutationMatchesTheMmaFragments) {
  std::set<int> seen;
  for (int kappa = 0; kappa < fp8_attention::kChunk; ++kappa) seen.insert(fp8_attention::key_of_column(kappa));
  EXPECT_EQ(seen.size(), 32u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 31);
  for (int q = 0; q < 4; ++q)
    for (int reg = 0; reg < 4; ++reg)
      for (int b = 0; b < 4; ++b) {
        const int s = fp8_attention::score_in_register(reg, b);
        const int score_col = 8 * (s / 4) + 2 * q + (s & 1);
        const bool score_upper_row = (s & 2) != 0;
        const int a_col = 4 * q + b + (reg >= 2 ? 16 : 0);
        const bool a_upper_row = (reg & 1) != 0;
        EXPECT_EQ(score_upper_row, a_upper_row) << "q " << q << " reg " << reg << " byte " << b;
        EXPECT_EQ(fp8_attention::key_of_column(a_col), score_col) << "q " << q << " reg " << reg << " byte " << b;
      }
}

// The emulation (codes, scales, e4m3 P) against exact f32 attention: printed, and bounded well
// below an error that would mean a broken scale or layout (a wrong permutation gives ~1). At
// q, k std 1.5 (scores of std 2.25: peaked rows) e4m3's 3 mantissa bits in Q and K dominate: a
// numpy split of the 7.8% measured here gives 7.2% from Q, K alone, 2.6% from V, 1.4% from P.
// The channel bias of k costs nothing once its mean is subtracted.
TEST(AttentionFp8Cpu, EmulationErrorOnDitLikeInputs) {
  for (const float k_bias : {0.f, 4.f}) {
    const int64_t Sq = 300, Skv = 1100, H = 2;
    const DitLikeInputs in = dit_like(Sq, Skv, H, 17, k_bias);
    const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(in.q, in.k, in.v);
    const Tensor emulated = cpu::attention_fp8_emulated(ops, {0, 1});
    const Tensor exact = cpu::attention(in.q, in.k, in.v);
    const testing::Comparison c = testing::compare(emulated, exact);
    std::printf("FP8_ATTN_CPU k_bias %.0f Sq %ld Skv %ld: emulation vs exact f32 %s\n", k_bias, static_cast<long>(Sq),
                static_cast<long>(Skv), c.summary().c_str());
    EXPECT_TRUE(c.same_nonfinite);
    EXPECT_LT(c.rel_l2, 0.11) << c.summary();
    EXPECT_GT(c.cosine, 0.994) << c.summary();
  }
  // The mma row sums (fp8-attention-sums=mma) divide by the sum of P's e4m3 codes, the weights the
  // numerator uses: as close to exact as the f32 sums, and a different result (the sums were used).
  {
    const DitLikeInputs in = dit_like(300, 1100, 2, 17, 0.f);
    const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(in.q, in.k, in.v);
    const Tensor exact = cpu::attention(in.q, in.k, in.v);
    const Tensor f32_sums = cpu::attention_fp8_emulated(ops, {0, 1});
    const Tensor code_sums = cpu::attention_fp8_emulated(ops, {0, 1}, {}, cpu::Fp8RowSums::kCodes);
    const testing::Comparison a = testing::compare(f32_sums, exact), b = testing::compare(code_sums, exact),
                              between = testing::compare(code_sums, f32_sums);
    std::printf("FP8_ATTN_CPU sums of codes vs exact %.3e (sums of exponentials %.3e; between them %.3e)\n", b.rel_l2,
                a.rel_l2, between.rel_l2);
    EXPECT_GT(between.rel_l2, 1e-5);
    EXPECT_LT(b.rel_l2, 1.1 * a.rel_l2);
  }
  // Scores rising by ~12 (log2) per key tile (the GPU test of promoted P V groups uses them): the
  // emulation stays as close to exact as on plain inputs, so the GPU test can hold the kernel to it.
  {
    DitLikeInputs in = dit_like(256, 9 * 128 - 50, 2, 21, 4.f);
    testing::make_scores_rise_per_key_tile(in.q, in.k);
    const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(in.q, in.k, in.v);
    const Tensor exact = cpu::attention(in.q, in.k, in.v);
    const testing::Comparison c = testing::compare(cpu::attention_fp8_emulated(ops, {0, 1}), exact);
    std::printf("FP8_ATTN_CPU rising scores: emulation vs exact f32 %s\n", c.summary().c_str());
    EXPECT_LT(c.rel_l2, 0.11) << c.summary();
    // Plain attention on them is the last key tile's: the rise is as large as the test needs.
    EXPECT_GT(testing::rising_scores_log2_per_tile(), 3 * fp8_attention::kLazyRescaleThreshold);
  }
  // A row subset of one head is the same numbers as the full run's.
  const DitLikeInputs in = dit_like(130, 200, 2, 3, 1.f);
  const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(in.q, in.k, in.v);
  const Tensor all = cpu::attention_fp8_emulated(ops, {1});
  const Tensor some = cpu::attention_fp8_emulated(ops, {1}, {0, 129});
  for (int64_t c = 0; c < kHeadDim; ++c) {
    EXPECT_EQ(some.data<float>()[c], all.data<float>()[c]);
    EXPECT_EQ(some.data<float>()[kHeadDim + c], all.data<float>()[129 * kHeadDim + c]);
  }
}

}  // namespace
}  // namespace orochi
