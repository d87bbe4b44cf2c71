// The FP8 attention on Hopper (cuda::flash_attention_fp8): the pre-pass's codes and scales bit for
// bit against the CPU's (backends/cpu/attention_fp8.h), the kernel against the CPU emulation of
// the same quantized attention and against exact attention (beside the bf16 kernel's error on the
// same inputs), every schedule variant, and an informative timing against the bf16 kernel.
// Marked lines for the device script: FP8_ATTN (accuracy) and FP8_ATTN_TIME (speed).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/attention_fp8.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/attention_flash.h"
#include "backends/cuda/attention_flash_fp8.h"
#include "backends/cuda/device.h"
#include "core/attention_fp8_layout.h"
#include "cuda/attention_test_support.h"
#include "support/compare.h"
#include "support/rising_scores.h"

namespace orochi {
namespace {

using cuda::AttentionShape;
using cuda::FlashAttentionFp8Options;
using namespace attention_test;  // NOLINT: the shared helpers of the attention tests

#define REQUIRE_HOPPER()                                                                                 \
  do {                                                                                                   \
    Expected<std::vector<cuda::DeviceInfo>> devices_ = cuda::list_devices();                             \
    if (!devices_) GTEST_SKIP() << devices_.status().to_string();                                        \
    const std::string why_ = cuda::flash_attention_fp8_unsupported_reason(AttentionShape{1, 1, 1, 128}); \
    if (!why_.empty()) GTEST_SKIP() << why_;                                                             \
  } while (0)

// make_inputs (q, k at std 1.5, v at 1, bf16-representable) with a DiT-like channel bias of std 4
// on k, shared by all keys of a head: what the pre-pass's mean subtraction is for.
Inputs dit_like_inputs(const AttentionShape& s, uint64_t seed) {
  Inputs in = make_inputs(s, seed);
  const Tensor bias = testing::random_normal({s.heads, s.head_dim}, seed + 7, 4.f);
  float* k = in.k.data<float>();
  for (int64_t j = 0; j < s.s_kv; ++j)
    for (int64_t i = 0; i < s.heads * s.head_dim; ++i) k[j * s.heads * s.head_dim + i] += bias.data<float>()[i];
  in.k = in.k.to(DType::kBF16).to(DType::kF32);
  return in;
}

// Rows `rows` of x [S, H, D] -> [rows, H, D].
Tensor select_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  const int64_t H = x.dim(1), D = x.dim(2);
  Tensor out = Tensor::empty({static_cast<int64_t>(rows.size()), H, D}, DType::kF32);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(out.data<float>() + i * H * D, x.data<float>() + rows[i] * H * D, sizeof(float) * H * D);
  return out;
}

struct Fp8Problem {
  AttentionShape shape;
  Inputs in;
  std::unique_ptr<DeviceBuffer> q, k, v, o, ws;
  Fp8Problem(const AttentionShape& s, uint64_t seed) : shape(s), in(dit_like_inputs(s, seed)) {
    q = upload_bf16(in.q);
    k = upload_bf16(in.k);
    v = upload_bf16(in.v);
    o = std::make_unique<DeviceBuffer>(static_cast<size_t>(s.s_q * s.heads * s.head_dim) * 2);
    ws = std::make_unique<DeviceBuffer>(cuda::flash_attention_fp8_workspace_bytes(s));
  }
  bool ready() const { return q->ptr && k->ptr && v->ptr && o->ptr && ws->ptr; }
  FlashAttentionFp8Options options(bool pingpong = true, int promote_every = 1, bool mma_sums = false) const {
    return FlashAttentionFp8Options{.pingpong = pingpong, .promote_every = promote_every, .mma_sums = mma_sums,
                                    .workspace = ws->ptr, .workspace_bytes = ws->bytes};
  }
  Status run(const FlashAttentionFp8Options& options) {
    cudaMemsetAsync(o->ptr, 0xFF, o->bytes, nullptr);  // bf16 0xFFFF is NaN: unwritten rows show up
    cudaMemsetAsync(ws->ptr, 0xFF, ws->bytes, nullptr);  // garbage the pre-pass must overwrite
    return cuda::flash_attention_fp8(q->ptr, k->ptr, v->ptr, o->ptr, shape, nullptr, options);
  }
  Tensor output() const { return download_f32(*o, {shape.s_q, shape.heads, shape.head_dim}); }
  std::vector<uint8_t> workspace() const {
    std::vector<uint8_t> bytes(ws->bytes);
    cudaMemcpy(bytes.data(), ws->ptr, ws->bytes, cudaMemcpyDeviceToHost);
    return bytes;
  }
  // The bf16 kernel on the same inputs (its defaults, no split tail).
  Tensor bf16_output() {
    cudaMemset(o->ptr, 0xFF, o->bytes);
    const Status st = cuda::flash_attention(q->ptr, k->ptr, v->ptr, o->ptr, shape, nullptr);
    if (!st.is_ok() || cudaDeviceSynchronize() != cudaSuccess) return Tensor();
    return output();
  }
};

// The mma row sums change only the denominators: per (row, head) the output is the default's times
// one factor (sum of exponentials / sum of codes). Returns the largest and the mean |factor - 1|
// and the largest residual ||a - factor b|| / ||a|| over the (row, head) vectors of a and b [S, H, 128].
struct RowFactors {
  double worst = 0, mean = 0, residual = 0;
};
RowFactors row_factor_spread(const Tensor& a, const Tensor& b) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  double worst_factor = 0, worst_residual = 0, total = 0;
  int64_t vectors = 0;
  for (int64_t v = 0; v < a.numel() / 128; ++v) {
    double ab = 0, bb = 0, aa = 0;
    for (int64_t c = 0; c < 128; ++c) {
      ab += double(pa[v * 128 + c]) * pb[v * 128 + c];
      bb += double(pb[v * 128 + c]) * pb[v * 128 + c];
      aa += double(pa[v * 128 + c]) * pa[v * 128 + c];
    }
    if (bb == 0 || aa == 0) continue;
    const double factor = ab / bb;
    double rr = 0;
    for (int64_t c = 0; c < 128; ++c) {
      const double d = pa[v * 128 + c] - factor * pb[v * 128 + c];
      rr += d * d;
    }
    worst_factor = std::max(worst_factor, std::fabs(factor - 1));
    worst_residual = std::max(worst_residual, std::sqrt(rr / aa));
    total += std::fabs(factor - 1);
    ++vectors;
  }
  return {worst_factor, vectors ? total / static_cast<double>(vectors) : 0.0, worst_residual};
}

// The mma sums' row factors (GPU: mma vs f32 sums) against the same factors of the CPU emulation
// (sums of the codes vs of the exponentials). A code in e4m3's normal range is within 2^-4 of its
// exponential; subnormals (P below 2^-6) round with more, so flat rows over ~38k keys move by 7% on
// both sides (session 19: 7.3e-2 on the H200). The kernel's lazy max puts P up to 2^4 higher than
// the emulation's exact max, so single rows round differently (the worst row of 257 keys differed by
// more than 1e-2 from the emulation's); a dropped tile or a misplaced rescale moves rows by 20-70%
// (numpy model of the schedule).
void expect_factors_like_the_emulation(const RowFactors& gpu, const RowFactors& emulated) {
  EXPECT_LE(gpu.worst, std::max(emulated.worst, 0.0625) + 0.02);
  EXPECT_LE(gpu.mean, 1.5 * emulated.mean + 1e-3);
  EXPECT_LE(gpu.residual, 1e-2);  // bf16 output rounding (2^-9) of both, not a different numerator
}

std::string promote_name(int every) {
  return every == 1 ? "" : every == 0 ? " unpromoted" : " promoted every " + std::to_string(every);
}

std::string case_name(const AttentionShape& s) {
  return "Sq" + std::to_string(s.s_q) + "_Skv" + std::to_string(s.s_kv) + "_h" + std::to_string(s.heads);
}

// The workspace's regions that the pre-pass writes, as (name, offset, bytes).
struct Region {
  const char* name;
  int64_t offset, bytes;
};
std::vector<Region> regions(const fp8_attention::Fp8AttentionLayout& l) {
  const int64_t H = l.heads, keys = l.k_tiles * fp8_attention::kTile;
  return {{"q codes", l.q_codes, H * l.q_tiles * 128 * 128},
          {"k codes", l.k_codes, H * keys * 128},
          {"v^T codes", l.vt_codes, H * 128 * keys},
          {"q scales", l.q_scale, H * l.q_tiles * 4},
          {"k scales", l.k_scale, H * l.k_tiles * 4},
          {"v scales", l.v_scale, H * 128 * 4},
          {"v inverses", l.v_inverse, H * 128 * 4},
          {"k mean", l.k_mean, H * 128 * 4},
          {"k partial sums", l.k_sum_partial, H * l.k_tiles * 128 * 4},
          {"v partial amax", l.v_amax_partial, H * l.k_tiles * 128 * 4}};
}

TEST(FlashAttentionFp8, PrepassMatchesTheCpuBitForBit) {
  REQUIRE_HOPPER();
  for (const AttentionShape& s : {AttentionShape{1, 1, 1, 128}, AttentionShape{200, 300, 2, 128},
                                  AttentionShape{1000, 77, 3, 128}, AttentionShape{2053, 4099, 5, 128}}) {
    Fp8Problem p(s, 300 + static_cast<uint64_t>(s.s_kv));
    ASSERT_TRUE(p.ready());
    ASSERT_OK(p.run(p.options()));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<uint8_t> gpu = p.workspace();
    const cpu::Fp8AttentionOperands cpu = cpu::quantize_attention_fp8(p.in.q, p.in.k, p.in.v);
    ASSERT_EQ(static_cast<size_t>(cpu.layout.bytes), gpu.size());
    for (const Region& r : regions(cpu.layout)) {
      int64_t differ = 0, first = -1;
      for (int64_t i = r.offset; i < r.offset + r.bytes; ++i)
        if (gpu[i] != cpu.bytes[i]) {
          if (first < 0) first = i - r.offset;
          ++differ;
        }
      EXPECT_EQ(differ, 0) << s.to_string() << " " << r.name << ": " << differ << " bytes differ, first at byte " << first;
    }
    std::printf("FP8_ATTN_PREPASS %s bit-exact vs CPU: %s\n", s.to_string().c_str(),
                ::testing::Test::HasFailure() ? "no" : "yes");
  }
}

class FlashAttentionFp8VsCpu : public ::testing::TestWithParam<AttentionShape> {};

// All four schedule variants against the emulation (every row of up to 4 heads) and exact
// attention. Tolerances: the GPU's lazy running max is the first tiles' (the emulation's is the
// row's exact max), so its P sits at another e4m3 rounding point: an independent P rounding,
// which alone is 1.4% rel L2 at these inputs (numpy), hence <= 4e-2 vs the emulation; with one
// key tile both maxima agree and only ex2.approx, f32 accumulation order and the bf16 output
// differ: <= 1e-2. Against exact attention the Q/K rounding dominates (CPU test: ~8%): <= 0.12.
TEST_P(FlashAttentionFp8VsCpu, MatchesTheEmulationAndExactAttention) {
  REQUIRE_HOPPER();
  const AttentionShape s = GetParam();
  Fp8Problem p(s, 4000 + static_cast<uint64_t>(s.s_q));
  ASSERT_TRUE(p.ready());
  const std::vector<int64_t> heads = heads_to_check(s.heads);
  const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(p.in.q, p.in.k, p.in.v);
  const Tensor emulated = cpu::attention_fp8_emulated(ops, heads);
  const Tensor exact = cpu_reference(p.in, heads);
  const Tensor bf16 = p.bf16_output();
  ASSERT_TRUE(bf16.defined());
  const testing::Comparison bf16_vs_exact = testing::compare(select_heads(bf16, heads), exact);
  const double emul_tolerance = s.s_kv <= 128 ? 1e-2 : 4e-2;
  Tensor first;
  for (int promote : {1, 0, 2, 4})
    for (bool pingpong : {true, false}) {
      if (promote > 1 && !pingpong) continue;  // built for ping-pong only
      ASSERT_OK(p.run(p.options(pingpong, promote)));
      ASSERT_CUDA(cudaDeviceSynchronize());
      const Tensor gpu = p.output();
      EXPECT_EQ(count_nonfinite(gpu), 0) << "rows or heads left unwritten (NaN poison) or overflowed";
      const Tensor mine = select_heads(gpu, heads);
      const testing::Comparison vs_emul = testing::compare(mine, emulated);
      const testing::Comparison vs_exact = testing::compare(mine, exact);
      std::printf("FP8_ATTN %s%s%s rel_l2_vs_emul %.3e rel_l2_vs_exact %.3e bf16_rel_l2_vs_exact %.3e (cos vs exact %.5f)\n",
                  case_name(s).c_str(), promote_name(promote).c_str(), pingpong ? "" : " plain", vs_emul.rel_l2,
                  vs_exact.rel_l2, bf16_vs_exact.rel_l2, vs_exact.cosine);
      EXPECT_TRUE(vs_emul.same_nonfinite) << vs_emul.summary();
      EXPECT_LE(vs_emul.rel_l2, emul_tolerance) << vs_emul.summary();
      EXPECT_LE(vs_exact.rel_l2, 0.12) << vs_exact.summary();
      if (!first.defined()) {
        first = gpu;
      } else if (promote == 1) {  // the schedule never changes the numbers
        const testing::Comparison same = testing::compare(gpu, first);
        EXPECT_TRUE(same.same_nonfinite && same.max_abs == 0) << "ping-pong changed the result: " << same.summary();
      } else if (promote > 1) {  // groups of tiles: only the MMA accumulator's rounding inside a group
        const testing::Comparison near = testing::compare(gpu, first);
        EXPECT_LE(near.rel_l2, 2e-3) << "promoted every " << promote << " tiles: " << near.summary();
        if (s.s_kv <= 128) {
          EXPECT_EQ(near.max_abs, 0) << "one key tile: a group is a tile";
        }
      }
    }
  // The mma row sums (sums of P's e4m3 codes by a wgmma against ones) against the emulation that
  // sums the codes, with the same bounds; promoted and not.
  const Tensor emulated_code_sums = cpu::attention_fp8_emulated(ops, heads, {}, cpu::Fp8RowSums::kCodes);
  const RowFactors emulated_factors = row_factor_spread(emulated_code_sums, emulated);
  for (int promote : {1, 0, 4}) {
    ASSERT_OK(p.run(p.options(true, promote, true)));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const Tensor gpu = p.output();
    EXPECT_EQ(count_nonfinite(gpu), 0);
    const Tensor mine = select_heads(gpu, heads);
    const testing::Comparison vs_emul = testing::compare(mine, emulated_code_sums), vs_exact = testing::compare(mine, exact);
    std::printf("FP8_ATTN %s mma sums%s rel_l2_vs_emul %.3e rel_l2_vs_exact %.3e\n", case_name(s).c_str(),
                promote_name(promote).c_str(), vs_emul.rel_l2, vs_exact.rel_l2);
    EXPECT_TRUE(vs_emul.same_nonfinite) << vs_emul.summary();
    EXPECT_LE(vs_emul.rel_l2, emul_tolerance) << vs_emul.summary();
    EXPECT_LE(vs_exact.rel_l2, 0.12) << vs_exact.summary();
    if (promote == 1) {  // against the default run (same P, same P V): one factor per row, near 1
      const RowFactors f = row_factor_spread(select_heads(gpu, heads), select_heads(first, heads));
      std::printf("FP8_ATTN %s mma sums vs f32 sums: |row factor - 1| max %.3e mean %.3e, max row residual %.3e "
                  "(emulation: max %.3e mean %.3e)\n",
                  case_name(s).c_str(), f.worst, f.mean, f.residual, emulated_factors.worst, emulated_factors.mean);
      expect_factors_like_the_emulation(f, emulated_factors);
      if (s.s_kv >= 31) {
        EXPECT_GT(f.mean, 1e-5) << "the mma sums changed nothing: are they used?";
      }
    }
  }
  EXPECT_FALSE(cuda::flash_attention_fp8(p.q->ptr, p.k->ptr, p.v->ptr, p.o->ptr, s, nullptr, p.options(false, 1, true))
                   .is_ok());  // built for ping-pong only
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashAttentionFp8VsCpu,
                         ::testing::Values(AttentionShape{1, 1, 1, 128}, AttentionShape{31, 31, 2, 128},
                                           AttentionShape{128, 128, 2, 128}, AttentionShape{129, 257, 3, 128},
                                           AttentionShape{1000, 1000, 4, 128}, AttentionShape{2053, 2053, 3, 128},
                                           AttentionShape{300, 3001, 2, 128},  // S_q != S_kv, many key tiles
                                           AttentionShape{4099, 4099, 56, 128},
                                           AttentionShape{100, 77, 2, 128}),  // cross-attention lengths
                         [](const ::testing::TestParamInfo<AttentionShape>& info) { return case_name(info.param); });

// H3's sequence lengths on one GPU (832x480: 15,100 rows; 1344x768: 37,966): a spread of rows of
// two heads against the emulation and exact attention (the CPU cannot do every row). 8 heads, not
// H3's 56: heads are independent (56 run in the 4099-row case and the timing), and the host would
// spend most of the script's time generating 56 heads of random inputs.
TEST(FlashAttentionFp8, H3ShapesOnASpreadOfRows) {
  REQUIRE_HOPPER();
  for (const int64_t S : {int64_t{15100}, int64_t{37966}}) {
    const AttentionShape s{S, S, 8, 128};
    Fp8Problem p(s, 9);
    ASSERT_TRUE(p.ready());
    ASSERT_OK(p.run(p.options()));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const Tensor gpu = p.output();
    EXPECT_EQ(count_nonfinite(gpu), 0);
    const std::vector<int64_t> heads = {0, 7};
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < 48; ++i) rows.push_back(i * (S - 1) / 47);
    const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(p.in.q, p.in.k, p.in.v);
    const Tensor emulated = cpu::attention_fp8_emulated(ops, heads, rows);
    const Tensor exact = cpu::attention(select_rows(select_heads(p.in.q, heads), rows), select_heads(p.in.k, heads),
                                        select_heads(p.in.v, heads));
    const Tensor mine = select_rows(select_heads(gpu, heads), rows);
    const Tensor bf16 = select_rows(select_heads(p.bf16_output(), heads), rows);
    const testing::Comparison vs_emul = testing::compare(mine, emulated);
    const testing::Comparison vs_exact = testing::compare(mine, exact);
    const testing::Comparison bf16_vs_exact = testing::compare(bf16, exact);
    std::printf("FP8_ATTN h3_S%ld_h8 rel_l2_vs_emul %.3e rel_l2_vs_exact %.3e bf16_rel_l2_vs_exact %.3e (cos vs exact %.5f)\n",
                static_cast<long>(S), vs_emul.rel_l2, vs_exact.rel_l2, bf16_vs_exact.rel_l2, vs_exact.cosine);
    EXPECT_LE(vs_emul.rel_l2, 4e-2) << vs_emul.summary();
    EXPECT_LE(vs_exact.rel_l2, 0.12) << vs_exact.summary();
    // The mma row sums over ~300 key tiles (each tile's sum in a fresh accumulator, added in f32).
    ASSERT_OK(p.run(p.options(true, true, true)));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const Tensor mma = select_rows(select_heads(p.output(), heads), rows);
    const Tensor emulated_codes = cpu::attention_fp8_emulated(ops, heads, rows, cpu::Fp8RowSums::kCodes);
    const testing::Comparison mma_vs_emul = testing::compare(mma, emulated_codes), mma_vs_exact = testing::compare(mma, exact);
    const RowFactors f = row_factor_spread(mma, mine), fe = row_factor_spread(emulated_codes, emulated);
    std::printf("FP8_ATTN h3_S%ld_h8 mma sums rel_l2_vs_emul %.3e rel_l2_vs_exact %.3e, |row factor - 1| max %.3e "
                "mean %.3e (emulation: max %.3e mean %.3e)\n",
                static_cast<long>(S), mma_vs_emul.rel_l2, mma_vs_exact.rel_l2, f.worst, f.mean, fe.worst, fe.mean);
    expect_factors_like_the_emulation(f, fe);
    EXPECT_GT(f.mean, 1e-5) << "the mma sums changed nothing: are they used?";
    EXPECT_LE(mma_vs_emul.rel_l2, 4e-2) << mma_vs_emul.summary();
    EXPECT_LE(mma_vs_exact.rel_l2, 0.12) << mma_vs_exact.summary();
  }
}

// Scores that rise by ~12 (log2) from one key tile to the next (support/rising_scores.h), so the
// lazy running max moves on every tile: the P V of a group of promoted tiles must be rescaled with O
// while the group is open (a missed rescale weights the earlier tile 2^12 too much). Every grouping,
// with both kinds of row sums, against the emulation (each row's exact max: the same output up to
// rounding; test_attention_fp8 checks it against exact attention on these inputs) and against
// promotion per tile.
TEST(FlashAttentionFp8, PromotedGroupsFollowARisingMax) {
  REQUIRE_HOPPER();
  const AttentionShape s{256, 9 * 128 - 50, 2, 128};  // 9 key tiles, the last one partial
  Fp8Problem p(s, 21);
  testing::make_scores_rise_per_key_tile(p.in.q, p.in.k);
  p.q = upload_bf16(p.in.q);
  p.k = upload_bf16(p.in.k);
  ASSERT_TRUE(p.ready());
  ASSERT_GT(testing::rising_scores_log2_per_tile(), 2 * fp8_attention::kLazyRescaleThreshold);
  const std::vector<int64_t> heads = {0, 1};
  const cpu::Fp8AttentionOperands ops = cpu::quantize_attention_fp8(p.in.q, p.in.k, p.in.v);
  const Tensor exact = cpu_reference(p.in, heads);
  for (bool mma_sums : {false, true}) {
    const Tensor emulated =
        cpu::attention_fp8_emulated(ops, heads, {}, mma_sums ? cpu::Fp8RowSums::kCodes : cpu::Fp8RowSums::kExponentials);
    Tensor per_tile;
    for (int promote : {1, 2, 4, 0}) {
      ASSERT_OK(p.run(p.options(true, promote, mma_sums)));
      ASSERT_CUDA(cudaDeviceSynchronize());
      const Tensor gpu = p.output();
      EXPECT_EQ(count_nonfinite(gpu), 0);
      const testing::Comparison vs_emul = testing::compare(gpu, emulated), vs_exact = testing::compare(gpu, exact);
      if (!per_tile.defined()) per_tile = gpu;
      const testing::Comparison vs_per_tile = testing::compare(gpu, per_tile);
      std::printf("FP8_ATTN rising max%s%s rel_l2_vs_emul %.3e rel_l2_vs_exact %.3e vs promoted per tile %.3e\n",
                  mma_sums ? " mma sums" : "", promote_name(promote).c_str(), vs_emul.rel_l2, vs_exact.rel_l2,
                  vs_per_tile.rel_l2);
      EXPECT_LE(vs_emul.rel_l2, 4e-2) << vs_emul.summary();
      EXPECT_LE(vs_exact.rel_l2, 0.12) << vs_exact.summary();
      EXPECT_LE(vs_per_tile.rel_l2, 2e-3) << vs_per_tile.summary();
    }
  }
}

TEST(FlashAttentionFp8, DeterministicAndCapturableInACudaGraph) {
  REQUIRE_HOPPER();
  Fp8Problem p(AttentionShape{515, 700, 8, 128}, 11);
  ASSERT_TRUE(p.ready());
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ASSERT_OK(cuda::flash_attention_fp8(p.q->ptr, p.k->ptr, p.v->ptr, p.o->ptr, p.shape, stream, p.options()));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  const Tensor eager = p.output();
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status captured = cuda::flash_attention_fp8(p.q->ptr, p.k->ptr, p.v->ptr, p.o->ptr, p.shape, stream, p.options());
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(captured.is_ok()) << captured.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  ASSERT_CUDA(cudaMemsetAsync(p.o->ptr, 0xFF, p.o->bytes, stream));
  ASSERT_CUDA(cudaMemsetAsync(p.ws->ptr, 0xFF, p.ws->bytes, stream));
  ASSERT_CUDA(cudaGraphLaunch(exec, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  const testing::Comparison c = testing::compare(p.output(), eager);
  EXPECT_TRUE(c.same_nonfinite && c.max_abs == 0) << "graph replay differs from the eager run: " << c.summary();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(FlashAttentionFp8, RefusesShapesAndWorkspacesItCannotUse) {
  REQUIRE_HOPPER();
  DeviceBuffer b(1 << 20);
  ASSERT_TRUE(b.ptr);
  const FlashAttentionFp8Options big{.workspace = b.ptr, .workspace_bytes = b.bytes};
  for (const AttentionShape& s : {AttentionShape{8, 8, 2, 64}, AttentionShape{8, 8, 2, 128, DType::kF16},
                                  AttentionShape{8, 8, 4, 128, DType::kBF16, 2},
                                  AttentionShape{8, 8, 2, 128, DType::kBF16, 0, true}, AttentionShape{0, 8, 2, 128}}) {
    const Status st = cuda::flash_attention_fp8(b.ptr, b.ptr, b.ptr, b.ptr, s, nullptr, big);
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << s.to_string() << ": " << st.to_string();
  }
  const AttentionShape ok{8, 8, 2, 128};
  EXPECT_EQ(cuda::flash_attention_fp8(static_cast<char*>(b.ptr) + 2, b.ptr, b.ptr, b.ptr, ok, nullptr, big).code(),
            ErrorCode::kInvalidArgument);  // misaligned q
  const FlashAttentionFp8Options small{.workspace = b.ptr, .workspace_bytes = 1024};
  const Status st = cuda::flash_attention_fp8(b.ptr, b.ptr, b.ptr, b.ptr, ok, nullptr, small);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("flash_attention_fp8_workspace_bytes"), std::string::npos) << st.message();
  // P V groups of 1, 2 or 4 key tiles (or none), and groups of several with ping-pong only.
  Fp8Problem p(ok, 5);
  ASSERT_TRUE(p.ready());
  EXPECT_EQ(p.run(p.options(true, 3)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(p.run(p.options(false, 4)).code(), ErrorCode::kInvalidArgument);
}

// Informative on speed (prints, never fails on it): the bf16 kernel (its defaults) vs FP8 with and
// without the pre-pass, at 32,760 and 106,428 rows with H3's 56 heads (MODELS_H3.md). Outputs are
// spot-checked in double against exact attention.
TEST(FlashAttentionFp8, TimingInformative) {
  REQUIRE_HOPPER();
  for_each_timed_shape({{32760, 56}, {106428, 56}}, [&](const TimedShape& c, cudaStream_t stream, DeviceBuffer& q,
                                                        DeviceBuffer& k, DeviceBuffer& v, DeviceBuffer& o, double flop) {
    const AttentionShape shape{c.S, c.S, c.heads, 128};
    const std::vector<uint16_t> hq = download_bits(q), hk = download_bits(k), hv = download_bits(v);
    Expected<size_t> split_bytes = cuda::flash_attention_workspace_bytes();
    ASSERT_TRUE(split_bytes.has_value()) << split_bytes.status().to_string();
    DeviceBuffer split_ws(*split_bytes), ws(cuda::flash_attention_fp8_workspace_bytes(shape));
    ASSERT_TRUE(split_ws.ptr && ws.ptr);
    const cuda::FlashAttentionOptions bf16{.workspace = split_ws.ptr, .workspace_bytes = *split_bytes};
    const FlashAttentionFp8Options fp8{.workspace = ws.ptr, .workspace_bytes = ws.bytes};
    auto variant = [&](bool mma_sums, int promote_every) {
      FlashAttentionFp8Options o = fp8;
      o.mma_sums = mma_sums;
      o.promote_every = promote_every;
      return o;
    };
    const FlashAttentionFp8Options fp8_unpromoted = variant(false, 0), fp8_mma_sums = variant(true, 1),
                                   fp8_mma_sums_p2 = variant(true, 2), fp8_mma_sums_p4 = variant(true, 4),
                                   fp8_mma_sums_unpromoted = variant(true, 0);
    struct Candidate {
      const char* name;
      std::function<Status()> run;
    };
    const std::vector<Candidate> candidates = {
        {"bf16 flash", [&] { return cuda::flash_attention(q.ptr, k.ptr, v.ptr, o.ptr, shape, stream, bf16); }},
        {"fp8 with pre-pass", [&] { return cuda::flash_attention_fp8(q.ptr, k.ptr, v.ptr, o.ptr, shape, stream, fp8); }},
        {"fp8 pre-pass only", [&] { return cuda::flash_attention_fp8_quantize(q.ptr, k.ptr, v.ptr, shape, stream, fp8); }},
        {"fp8 kernel only", [&] { return cuda::flash_attention_fp8_from_workspace(o.ptr, shape, stream, fp8); }},
        {"fp8 kernel unpromoted",
         [&] { return cuda::flash_attention_fp8_from_workspace(o.ptr, shape, stream, fp8_unpromoted); }},
        {"fp8 kernel mma sums",
         [&] { return cuda::flash_attention_fp8_from_workspace(o.ptr, shape, stream, fp8_mma_sums); }},
        {"fp8 kernel mma sums prom. 2",
         [&] { return cuda::flash_attention_fp8_from_workspace(o.ptr, shape, stream, fp8_mma_sums_p2); }},
        {"fp8 kernel mma sums prom. 4",
         [&] { return cuda::flash_attention_fp8_from_workspace(o.ptr, shape, stream, fp8_mma_sums_p4); }},
        {"fp8 kernel mma sums unprom.",
         [&] { return cuda::flash_attention_fp8_from_workspace(o.ptr, shape, stream, fp8_mma_sums_unpromoted); }}};
    for (const Candidate& cand : candidates) {
      Expected<CallTimes> t = time_calls(cand.run, stream);
      ASSERT_TRUE(t.has_value()) << cand.name << ": " << t.status().to_string();
      const bool writes_o = std::string(cand.name) != "fp8 pre-pass only";
      const double rel = writes_o ? spot_check(hq, hk, hv, download_bits(o), c.S, c.heads, 128) : 0.0;
      std::printf("FP8_ATTN_TIME S=%ld heads=%ld %-27s median %.3f ms (min %.3f, max %.3f) = %.1f TFLOP/s, "
                  "spot check rel_l2 %.2e\n",
                  static_cast<long>(c.S), static_cast<long>(c.heads), cand.name, t->median_ms, t->min_ms, t->max_ms,
                  writes_o ? flop / (t->median_ms * 1e-3) / 1e12 : 0.0, rel);
      if (writes_o) {
        EXPECT_LE(rel, 0.15) << cand.name;
      }
    }
  });
}

}  // namespace
}  // namespace orochi
