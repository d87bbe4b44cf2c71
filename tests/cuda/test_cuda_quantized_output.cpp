// The kernels that quantize the rows they produce (backends/cuda/ops_quantized_output.h, issue 25)
// against the unfused path they replace: the plain op's bf16 output, then quantize_rows. Codes and
// scales must be the same bits (else a forward's result would change with fused-quant), with and
// without the bf16 output, which must itself be the plain op's bits; on the vector path (rows
// within and beyond the register-cached width), the scalar path (odd widths, unaligned codes) and
// more rows than blocks; in e4m3 and int8. Then against the CPU: the codes are core's
// quantize_rows of the bf16 output bit for bit, and, dequantized, within the format's error of the
// CPU op in f32: rel L2 2.6e-2 for e4m3 (3 mantissa bits) and up to 2.9e-2 for int8 (an absolute
// error of amax / 127 / sqrt(12), large on SwiGLU's heavy-tailed rows of 14336), measured with torch
// on these cases' distributions; bound 5e-2 (a wrong scale or code is off by ~1).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/ops.h"
#include "backends/cuda/ops_quantized_output.h"
#include "backends/cuda/quantize.h"
#include "core/quantize.h"
#include "call_timing.h"
#include "support/random.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

constexpr float kEps = 1e-5f;

constexpr double kDequantizedTolerance = 5e-2;

class CudaQuantizedOutput : public GpuTest {
 protected:
  CudaQuantizedOutput() : GpuTest(size_t{4} << 30) {}  // the timing case's SwiGLU input is 0.9 GB
  // Codes [S, C] and scales [S] in the arena, poisoned so that anything left unwritten shows.
  RowQuantized codes_buffer(int64_t S, int64_t C, DType format) {
    RowQuantized q;
    auto codes = arena().tensor({S, C}, format);
    auto scales = arena().tensor({S}, DType::kF32);
    OROCHI_CHECK(codes && scales, "test arena too small");
    q.codes = *codes;
    q.scales = *scales;
    OROCHI_CHECK(poison(q.codes, stream()).is_ok() && poison(q.scales, stream()).is_ok(), "poison");
    return q;
  }
  Tensor download(const Tensor& t) {
    auto host = cuda::download(t, stream());
    OROCHI_CHECK(host.has_value(), host.status().to_string());
    return *host;
  }
  RowQuantized download(const RowQuantized& q) { return {download(q.codes), download(q.scales)}; }
};

int64_t differing_bytes(const Tensor& a, const Tensor& b) {
  OROCHI_CHECK(a.nbytes() == b.nbytes(), "differing_bytes: ", a.describe(), " vs ", b.describe());
  const auto* pa = static_cast<const uint8_t*>(a.raw_data());
  const auto* pb = static_cast<const uint8_t*>(b.raw_data());
  int64_t n = 0;
  for (size_t i = 0; i < a.nbytes(); ++i) n += pa[i] != pb[i];
  return n;
}

// got (host) must be want (host) bit for bit: codes and scales.
void expect_same_codes(const std::string& op, const std::string& what, const RowQuantized& got,
                       const RowQuantized& want) {
  const int64_t codes = differing_bytes(got.codes, want.codes), scales = differing_bytes(got.scales, want.scales);
  std::printf("[cuda-op] %-22s %-40s differing code bytes=%lld scale bytes=%lld\n", op.c_str(), what.c_str(),
              static_cast<long long>(codes), static_cast<long long>(scales));
  EXPECT_EQ(codes, 0) << op << " " << what;
  EXPECT_EQ(scales, 0) << op << " " << what;
}

// The fused kernel's codes (host) against the CPU: core's quantize_rows of the unfused bf16 output
// (host, bf16), bit for bit, and the dequantized rows against the CPU op's f32 output.
void expect_cpu_agreement(const std::string& op, const std::string& what, const RowQuantized& got,
                          const Tensor& unfused_bf16, const Tensor& cpu_f32, DType format) {
  expect_same_codes(op, what + " vs CPU quantize_rows", got, quantize_rows(unfused_bf16, format));
  const testing::Comparison c = testing::compare(dequantize_rows(got), cpu_f32);
  std::printf("[cuda-op] %-22s %-40s dequantized vs CPU f32 rel_l2=%.3e\n", op.c_str(), what.c_str(), c.rel_l2);
  EXPECT_TRUE(c.same_nonfinite && c.rel_l2 <= kDequantizedTolerance) << op << " " << what << ": " << c.summary();
}

std::string describe(int64_t S, int64_t C, DType format) {
  return "[" + std::to_string(S) + ", " + std::to_string(C) + "] " + dtype_name(format);
}

// Rows within the register cache (5376 = 2.6 vectors of 8 per thread at 256 threads), beyond it
// (14336: 7), a narrow width and odd widths (the scalar path).
TEST_F(CudaQuantizedOutput, RmsNormModulateGivesTheUnfusedCodes) {
  struct Case { int64_t S, C, R; };
  for (DType format : {DType::kF8E4M3, DType::kI8})
    for (const Case& k : {Case{1, 16, 1}, Case{5, 13, 3}, Case{37, 512, 4}, Case{37, 5376, 9}, Case{3, 14336, 2}}) {
      const size_t mark = arena().mark();
      const std::string what = describe(k.S, k.C, format);
      Tensor x = random_bf16_values({k.S, k.C}, 2.0f), w = random_bf16_values({k.C}, 0.3f, 1.0f);
      Tensor table = random_bf16_values({k.R, 6 * k.C}, 0.5f);
      Tensor idx = testing::random_indices(k.S, k.R, next_stream());
      ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dtable, cuda::upload(table, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));
      const Tensor shift = dtable.slice(1, 0, k.C), scale = dtable.slice(1, k.C, 2 * k.C);
      ASSERT_OK_AND_ASSIGN(Tensor unfused, arena().tensor({k.S, k.C}, DType::kBF16));
      ASSERT_OK_AND_ASSIGN(Tensor fused, arena().tensor({k.S, k.C}, DType::kBF16));
      ASSERT_STATUS_OK(poison(fused, stream()));
      ASSERT_STATUS_OK(cuda::rms_norm_modulate(dx, dw, kEps, shift, scale, didx, unfused, stream()));
      ASSERT_OK_AND_ASSIGN(RowQuantized want, cuda::quantize_rows(unfused, format, arena(), stream()));
      const RowQuantized with_out = codes_buffer(k.S, k.C, format), codes_only = codes_buffer(k.S, k.C, format);
      ASSERT_STATUS_OK(cuda::rms_norm_modulate_quantized(dx, dw, kEps, shift, scale, didx, fused, with_out, stream()));
      ASSERT_STATUS_OK(cuda::rms_norm_modulate_quantized(dx, dw, kEps, shift, scale, didx, Tensor(), codes_only, stream()));
      const Tensor unfused_host = download(unfused);
      EXPECT_EQ(differing_bytes(download(fused), unfused_host), 0) << "bf16 output " << what;
      const RowQuantized got = download(with_out);
      expect_same_codes("rms_norm_modulate_q", what, got, download(want));
      expect_same_codes("rms_norm_modulate_q", what + " codes only", download(codes_only), download(want));
      const Tensor cpu = cpu::modulate(cpu::rms_norm(x, w, kEps), table.slice(1, 0, k.C), table.slice(1, k.C, 2 * k.C), idx);
      expect_cpu_agreement("rms_norm_modulate_q", what, got, unfused_host, cpu, format);
      arena().reset(mark);
    }
}

TEST_F(CudaQuantizedOutput, GatedResidualRmsNormModulateGivesTheUnfusedCodes) {
  struct Case { int64_t S, C, R; };
  for (DType format : {DType::kF8E4M3, DType::kI8})
    for (const Case& k : {Case{1, 8, 1}, Case{5, 13, 3}, Case{300, 5376, 3}, Case{2, 14336, 4}}) {
      const size_t mark = arena().mark();
      const std::string what = describe(k.S, k.C, format);
      Tensor h = random_bf16_values({k.S, k.C}, 4.0f), y = random_bf16_values({k.S, k.C}),
             w = random_bf16_values({k.C}, 0.3f, 1.0f), table = random_bf16_values({k.R, 6 * k.C}, 0.5f);
      Tensor idx = testing::random_indices(k.S, k.R, next_stream());
      ASSERT_OK_AND_ASSIGN(Tensor unfused_h, cuda::upload(h, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor fused_h, cuda::upload(h, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor codes_only_h, cuda::upload(h, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dy, cuda::upload(y, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor dtable, cuda::upload(table, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor unfused, arena().tensor({k.S, k.C}, DType::kBF16));
      ASSERT_OK_AND_ASSIGN(Tensor fused, arena().tensor({k.S, k.C}, DType::kBF16));
      ASSERT_STATUS_OK(poison(fused, stream()));
      // The block's second half: gate_msa (chunk 2), then shift_mlp / scale_mlp (chunks 3, 4).
      const auto chunk = [&](const Tensor& t, int i) { return t.slice(1, i * k.C, (i + 1) * k.C); };
      ASSERT_STATUS_OK(cuda::gated_residual_rms_norm_modulate(unfused_h, chunk(dtable, 2), dy, dw, kEps, chunk(dtable, 3),
                                                              chunk(dtable, 4), didx, unfused, stream()));
      ASSERT_OK_AND_ASSIGN(RowQuantized want, cuda::quantize_rows(unfused, format, arena(), stream()));
      const RowQuantized with_out = codes_buffer(k.S, k.C, format), codes_only = codes_buffer(k.S, k.C, format);
      ASSERT_STATUS_OK(cuda::gated_residual_rms_norm_modulate_quantized(fused_h, chunk(dtable, 2), dy, dw, kEps,
                                                                        chunk(dtable, 3), chunk(dtable, 4), didx, fused,
                                                                        with_out, stream()));
      ASSERT_STATUS_OK(cuda::gated_residual_rms_norm_modulate_quantized(codes_only_h, chunk(dtable, 2), dy, dw, kEps,
                                                                        chunk(dtable, 3), chunk(dtable, 4), didx,
                                                                        Tensor(), codes_only, stream()));
      const Tensor unfused_h_host = download(unfused_h), unfused_host = download(unfused);
      EXPECT_EQ(differing_bytes(download(fused_h), unfused_h_host), 0) << "updated state " << what;
      EXPECT_EQ(differing_bytes(download(codes_only_h), unfused_h_host), 0) << "updated state, codes only " << what;
      EXPECT_EQ(differing_bytes(download(fused), unfused_host), 0) << "bf16 output " << what;
      const RowQuantized got = download(with_out);
      expect_same_codes("gated_res_norm_q", what, got, download(want));
      expect_same_codes("gated_res_norm_q", what + " codes only", download(codes_only), download(want));
      Tensor ref_h = h.clone();
      cpu::gated_residual(ref_h, chunk(table, 2), idx, y);
      for (int64_t i = 0; i < ref_h.numel(); ++i) ref_h.data<float>()[i] = round_to_bf16(ref_h.data<float>()[i]);
      const Tensor cpu = cpu::modulate(cpu::rms_norm(ref_h, w, kEps), chunk(table, 3), chunk(table, 4), idx);
      expect_cpu_agreement("gated_res_norm_q", what, got, unfused_host, cpu, format);
      arena().reset(mark);
    }
}

// Widths within the register cache (1024; 14336 = 7 vectors of 8 per thread), beyond it (17000),
// odd ones (the scalar path), and more rows than blocks (70000).
TEST_F(CudaQuantizedOutput, SwigluGivesTheUnfusedCodes) {
  struct Case { int64_t M, I; };
  for (DType format : {DType::kF8E4M3, DType::kI8})
    for (const Case& k : {Case{1, 8}, Case{5, 13}, Case{64, 1024}, Case{7, 14336}, Case{3, 17000}, Case{70000, 16}}) {
      const size_t mark = arena().mark();
      const std::string what = describe(k.M, k.I, format);
      Tensor u = random_bf16_values({k.M, 2 * k.I}, 2.0f);
      ASSERT_OK_AND_ASSIGN(Tensor du, cuda::upload(u, arena(), DType::kBF16, stream()));
      ASSERT_OK_AND_ASSIGN(Tensor unfused, arena().tensor({k.M, k.I}, DType::kBF16));
      ASSERT_OK_AND_ASSIGN(Tensor fused, arena().tensor({k.M, k.I}, DType::kBF16));
      ASSERT_STATUS_OK(poison(fused, stream()));
      ASSERT_STATUS_OK(cuda::swiglu(du, unfused, stream()));
      ASSERT_OK_AND_ASSIGN(RowQuantized want, cuda::quantize_rows(unfused, format, arena(), stream()));
      const RowQuantized with_out = codes_buffer(k.M, k.I, format), codes_only = codes_buffer(k.M, k.I, format);
      ASSERT_STATUS_OK(cuda::swiglu_quantized(du, fused, with_out, stream()));
      ASSERT_STATUS_OK(cuda::swiglu_quantized(du, Tensor(), codes_only, stream()));
      const Tensor unfused_host = download(unfused);
      EXPECT_EQ(differing_bytes(download(fused), unfused_host), 0) << "bf16 output " << what;
      const RowQuantized got = download(with_out);
      expect_same_codes("swiglu_q", what, got, download(want));
      expect_same_codes("swiglu_q", what + " codes only", download(codes_only), download(want));
      expect_cpu_agreement("swiglu_q", what, got, unfused_host, cpu::swiglu(u), format);
      arena().reset(mark);
    }
}

// Codes one byte off an 8-byte boundary: the scalar path on widths the vector path takes, same bits.
TEST_F(CudaQuantizedOutput, UnalignedCodesTakeTheScalarPath) {
  const int64_t S = 6, C = 64;
  Tensor x = random_bf16_values({S, C}, 2.0f), w = random_bf16_values({C}, 0.3f, 1.0f);
  Tensor table = random_bf16_values({2, 6 * C}, 0.5f), u = random_bf16_values({S, 2 * C}, 2.0f);
  Tensor idx = testing::random_indices(S, 2, next_stream());
  ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor du, cuda::upload(u, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dtable, cuda::upload(table, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor didx, cuda::upload(idx, arena(), DType::kI64, stream()));
  const Tensor shift = dtable.slice(1, 0, C), scale = dtable.slice(1, C, 2 * C);
  ASSERT_OK_AND_ASSIGN(Tensor flat, arena().tensor({S * C + 1}, DType::kI8));
  ASSERT_OK_AND_ASSIGN(Tensor scales, arena().tensor({S}, DType::kF32));
  const RowQuantized q{flat.slice(0, 1, S * C + 1).view({S, C}), scales};
  ASSERT_OK_AND_ASSIGN(Tensor normed, arena().tensor({S, C}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor g, arena().tensor({S, C}, DType::kBF16));
  ASSERT_STATUS_OK(cuda::rms_norm_modulate(dx, dw, kEps, shift, scale, didx, normed, stream()));
  ASSERT_STATUS_OK(cuda::swiglu(du, g, stream()));
  ASSERT_STATUS_OK(cuda::rms_norm_modulate_quantized(dx, dw, kEps, shift, scale, didx, Tensor(), q, stream()));
  expect_same_codes("rms_norm_modulate_q", "unaligned codes", download(q), quantize_rows(download(normed), DType::kI8));
  ASSERT_STATUS_OK(cuda::swiglu_quantized(du, Tensor(), q, stream()));
  expect_same_codes("swiglu_q", "unaligned codes", download(q), quantize_rows(download(g), DType::kI8));
}

// Informative: each fused kernel against the plain kernel + quantize_rows it replaces, at H3's
// 832x480 row count (15,100 rows; hidden 5376, FFN 14336), e4m3, codes only (as the forward runs
// them). Printed as [fused-quant-timing] lines; nothing is asserted but that the calls succeed.
TEST_F(CudaQuantizedOutput, FusedKernelTimesAtH3Shapes) {
  const int64_t S = 15100, C = 5376, I = 14336, R = 3;
  const DType format = DType::kF8E4M3;
  ASSERT_OK_AND_ASSIGN(Tensor h, cuda::upload(random_bf16_values({S, C}, 2.0f), arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor y, cuda::upload(random_bf16_values({S, C}), arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor w, cuda::upload(random_bf16_values({C}, 0.3f, 1.0f), arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor table, cuda::upload(random_bf16_values({R, 6 * C}, 0.5f), arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor idx, cuda::upload(testing::random_indices(S, R, next_stream()), arena(), DType::kI64, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor u, cuda::upload(random_bf16_values({S, 2 * I}, 2.0f), arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor normed, arena().tensor({S, C}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor g, arena().tensor({S, I}, DType::kBF16));
  const RowQuantized qc = codes_buffer(S, C, format), qi = codes_buffer(S, I, format);
  const auto chunk = [&](int i) { return table.slice(1, i * C, (i + 1) * C); };
  struct Pair {
    const char* op;
    std::function<Status()> unfused, fused;
  };
  const Pair pairs[] = {
      {"rms_norm_modulate",
       [&] {
         OROCHI_RETURN_IF_ERROR(cuda::rms_norm_modulate(h, w, kEps, chunk(0), chunk(1), idx, normed, stream()));
         return cuda::quantize_rows(normed, qc, stream());
       },
       [&] { return cuda::rms_norm_modulate_quantized(h, w, kEps, chunk(0), chunk(1), idx, Tensor(), qc, stream()); }},
      {"gated_res_norm",
       [&] {
         OROCHI_RETURN_IF_ERROR(cuda::gated_residual_rms_norm_modulate(h, chunk(2), y, w, kEps, chunk(3), chunk(4), idx,
                                                                       normed, stream()));
         return cuda::quantize_rows(normed, qc, stream());
       },
       [&] {
         return cuda::gated_residual_rms_norm_modulate_quantized(h, chunk(2), y, w, kEps, chunk(3), chunk(4), idx, Tensor(),
                                                                 qc, stream());
       }},
      {"swiglu",
       [&] {
         OROCHI_RETURN_IF_ERROR(cuda::swiglu(u, g, stream()));
         return cuda::quantize_rows(g, qi, stream());
       },
       [&] { return cuda::swiglu_quantized(u, Tensor(), qi, stream()); }},
  };
  for (const Pair& p : pairs) {
    Expected<cuda_timing::CallTimes> unfused = cuda_timing::time_calls(p.unfused, stream());
    Expected<cuda_timing::CallTimes> fused = cuda_timing::time_calls(p.fused, stream());
    ASSERT_TRUE(unfused.has_value()) << unfused.status().to_string();
    ASSERT_TRUE(fused.has_value()) << fused.status().to_string();
    std::printf("[fused-quant-timing] %-18s %ld rows, e4m3: fused %.3f ms, unfused (kernel + quantize_rows) %.3f ms "
                "(x%.2f)\n",
                p.op, static_cast<long>(S), fused->median_ms, unfused->median_ms, fused->median_ms / unfused->median_ms);
  }
}

}  // namespace
}  // namespace orochi
