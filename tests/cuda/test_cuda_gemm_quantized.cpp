// Quantized linears on cuBLASLt (backends/cuda/gemm_quantized.h) vs core's reference GEMM
// (quantized_linear: exact dot products of the same codes, the same epilogue formula), on odd
// shapes and H3's block layers with M in {1, 17, 4096} (reference on sampled rows for the large
// ones). Inputs: bf16 N(0, 1) activations and N(0, 1/K) weights drawn on the GPU, quantized there
// (test_cuda_quantize shows those codes equal the CPU's), their codes and scales downloaded for the
// reference. Tolerances (rel L2 to the reference, which is exact up to one f32 rounding):
//  - int8: 0 mismatches. The int32 accumulator is exact and the epilogue is core's formula, so the
//    GPU's bf16 output must equal the reference rounded to bf16 bit for bit.
//  - fp8, normal accumulation: 4e-3. The bf16 output rounding alone gives ~1.6e-3 (half an ulp of
//    2^-7..2^-8 relative, uniform: 2^-7.5/sqrt(12)); f32 accumulation adds ~1e-6 · sqrt(K).
//  - fp8, fast accumulation: 1e-2. Hopper keeps ~14 bits of the fp8 MMA's partial sums unless they
//    are promoted to f32 (DeepSeek-V3 §3.3.2 saw ~2% worst-element error at K = 4096); in rel L2 the
//    H200 measured at most 3.4e-3 over these shapes (K up to 14336, 2026-12-02), normal 1.7e-3.
// Each case also prints the quantization error itself (rel L2 to cuBLASLt's bf16 GEMM of the
// unquantized operands) and holds it to a sanity bound (fp8 8e-2, int8 4e-2) that a wrong scale
// (per-token used per-channel, or missing) exceeds by orders of magnitude.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/gemm_quantized.h"
#include "backends/cuda/quantize.h"
#include "backends/cuda/random_fill.h"
#include "core/quantize.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

constexpr double kFp8Tol = 4e-3;
constexpr double kFp8FastAccumTol = 1e-2;
constexpr double kFp8QuantErrBound = 8e-2;
constexpr double kInt8QuantErrBound = 4e-2;

// Rows `rows` of a host RowQuantized (codes and scales).
RowQuantized take_rows(const RowQuantized& q, const std::vector<int64_t>& rows) {
  const int64_t C = q.cols();
  RowQuantized out{Tensor::uninitialized({static_cast<int64_t>(rows.size()), C}, q.codes.dtype()),
                   Tensor::uninitialized({static_cast<int64_t>(rows.size())}, DType::kF32)};
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(static_cast<uint8_t*>(out.codes.raw_data()) + i * C,
                static_cast<const uint8_t*>(q.codes.raw_data()) + rows[i] * C, static_cast<size_t>(C));
    out.scales.data<float>()[i] = q.scales.data<float>()[rows[i]];
  }
  return out;
}

std::vector<int64_t> spread_rows(int64_t M, int64_t count) {
  const int64_t n = std::min(M, count);
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < n; ++i) rows.push_back(n == 1 ? 0 : i * (M - 1) / (n - 1));
  return rows;
}

class CudaGemmQuantized : public GpuTest {
 protected:
  CudaGemmQuantized() : GpuTest(size_t{6} << 30) {}
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto q = cuda::QuantizedGemmRunner::create(0);
    ASSERT_TRUE(q.has_value()) << q.status().to_string();
    runner_ = std::move(*q);
    auto b = cuda::GemmRunner::create(0);
    ASSERT_TRUE(b.has_value()) << b.status().to_string();
    bf16_ = std::move(*b);
  }

  Expected<RowQuantized> download(const RowQuantized& q) {
    OROCHI_ASSIGN_OR_RETURN(Tensor codes, cuda::download(q.codes, stream()));
    OROCHI_ASSIGN_OR_RETURN(Tensor scales, cuda::download(q.scales, stream()));
    return RowQuantized{codes, scales};
  }

  // One layer: fresh x [M, K] and w [N, K] (and bias), every format and option, reference on up to
  // `ref_rows` rows.
  void run_layer(const std::string& name, int64_t M, int64_t N, int64_t K, bool with_bias, int64_t ref_rows = 32) {
    const size_t mark = arena().mark();
    ASSERT_OK_AND_ASSIGN(Tensor dx, arena().tensor({M, K}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor dw, arena().tensor({N, K}, DType::kBF16));
    ASSERT_STATUS_OK(cuda::fill_normal(dx, 0x5EED, next_stream(), 0.0f, 1.0f, stream()));
    ASSERT_STATUS_OK(cuda::fill_normal(dw, 0x5EED, next_stream(), 0.0f, 1.0f / std::sqrt(static_cast<float>(K)), stream()));
    const Tensor bias = random_bf16_values({N}, 0.5f);
    ASSERT_OK_AND_ASSIGN(Tensor dbias, cuda::upload(bias, arena(), DType::kBF16, stream()));
    const Tensor* b = with_bias ? &bias : nullptr;
    const Tensor* db = with_bias ? &dbias : nullptr;
    // The unquantized product, for the quantization error.
    ASSERT_OK_AND_ASSIGN(Tensor dref, arena().tensor({M, N}, DType::kBF16));
    ASSERT_STATUS_OK(bf16_->linear(dx, dw, db, dref, stream()));
    const std::vector<int64_t> rows = spread_rows(M, ref_rows);
    const Tensor idx = Tensor::from_ints(rows, {static_cast<int64_t>(rows.size())});
    const Tensor bf16_rows = cpu::gather_rows(to_host_f32(dref, stream()), idx);
    const std::string shape = "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                              (with_bias ? " +bias" : "") + (static_cast<int64_t>(rows.size()) < M ? " (rows sampled)" : "");

    for (DType format : {DType::kF8E4M3, DType::kI8}) {
      const size_t qmark = arena().mark();
      ASSERT_OK_AND_ASSIGN(RowQuantized qx, cuda::quantize_rows(dx, format, arena(), stream()));
      ASSERT_OK_AND_ASSIGN(RowQuantized qw, cuda::quantize_rows(dw, format, arena(), stream()));
      ASSERT_OK_AND_ASSIGN(RowQuantized hx, download(qx));
      ASSERT_OK_AND_ASSIGN(RowQuantized hw, download(qw));
      const Tensor ref = quantized_linear(take_rows(hx, rows), hw, b);  // [rows, N] f32
      ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({M, N}, DType::kBF16));
      struct Variant {
        const char* label;
        cuda::QuantizedGemmOptions options;
        double tol;
      };
      std::vector<Variant> variants;
      if (format == DType::kI8) variants.push_back({"int8", {}, 0.0});
      else
        variants = {{"fp8", {false, false}, kFp8Tol},
                    {"fp8 fast-accum", {true, false}, kFp8FastAccumTol},
                    {"fp8 unit-scales", {false, true}, kFp8Tol}};
      for (const Variant& v : variants) {
        ASSERT_STATUS_OK(poison(dy, stream()));
        ASSERT_STATUS_OK(runner_->linear(qx, qw, db, dy, arena(), stream(), v.options));
        const Tensor y = to_host_f32(dy, stream());
        ASSERT_EQ(count_nan(y), 0) << v.label << " " << shape << ": unwritten elements";
        const Tensor got = cpu::gather_rows(y, idx);
        const testing::Comparison c = testing::compare(got, ref);
        const testing::Comparison q = testing::compare(got, bf16_rows);
        std::printf("[cuda-op] %-22s %-40s rel_l2=%.3e max_abs=%.3e quant_err_vs_bf16=%.3e path=\"%s\"\n",
                    (std::string("qgemm ") + v.label).c_str(), (name + " " + shape).c_str(), c.rel_l2, c.max_abs,
                    q.rel_l2, cuda::quantized_gemm_path_name(runner_->last_path()));
        std::fflush(stdout);
        if (format == DType::kI8) {
          int64_t mismatches = 0;
          for (int64_t i = 0; i < ref.numel(); ++i)
            mismatches += got.data<float>()[i] != round_to_bf16(ref.data<float>()[i]);
          EXPECT_EQ(mismatches, 0) << v.label << " " << name << " " << shape << " (of " << ref.numel() << ")";
          EXPECT_LE(q.rel_l2, kInt8QuantErrBound) << v.label << " " << name << " " << shape;
        } else {
          EXPECT_LE(c.rel_l2, v.tol) << v.label << " " << name << " " << shape << ": " << c.summary();
          EXPECT_LE(q.rel_l2, kFp8QuantErrBound) << v.label << " " << name << " " << shape;
        }
        if (HasFailure()) break;
      }
      arena().reset(qmark);
    }
    arena().reset(mark);
  }

  std::unique_ptr<cuda::QuantizedGemmRunner> runner_;
  std::unique_ptr<cuda::GemmRunner> bf16_;
};

TEST_F(CudaGemmQuantized, OddShapes) {
  struct Case { int64_t M, N, K; };
  for (bool bias : {false, true})
    for (const Case& k : {Case{1, 16, 16}, Case{3, 40, 32}, Case{17, 24, 48}, Case{64, 96, 80}, Case{129, 56, 160}})
      run_layer("odd", k.M, k.N, k.K, bias);
}

// H3's block layers (MODELS_H3.md §1.2): q/k/v, attention out, SwiGLU in (value and gate fused), FFN out.
TEST_F(CudaGemmQuantized, H3Layers) {
  for (int64_t M : {1, 17, 4096}) {
    run_layer("to_q/k/v", M, 7168, 5376, false, 16);
    run_layer("to_out", M, 5376, 7168, false, 16);
    run_layer("ff.net.0.proj", M, 28672, 5376, false, 8);
    run_layer("ff.net.2", M, 5376, 14336, false, 16);
    run_layer("context_embedder", M, 5376, 5120, true, 16);
    if (HasFailure()) return;
  }
}

// The forward's form (linear() with a planned accumulator, layers/cuda/linear.h): an accumulator
// of fewer than M·N elements runs the rows in chunks, and every chunk is the same GEMM on its rows,
// so the output is bit for bit the one-call result (int8, fp8 unit scales and bias included). One
// row less than M·N, a third of M, and one row each; a buffer under one row is refused.
TEST_F(CudaGemmQuantized, AGivenAccumulatorRunsTheRowsInChunks) {
  const int64_t M = 300, N = 96, K = 160;
  ASSERT_OK_AND_ASSIGN(Tensor dx, arena().tensor({M, K}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor dw, arena().tensor({N, K}, DType::kBF16));
  ASSERT_STATUS_OK(cuda::fill_normal(dx, 7, next_stream(), 0.0f, 1.0f, stream()));
  ASSERT_STATUS_OK(cuda::fill_normal(dw, 7, next_stream(), 0.0f, 1.0f / std::sqrt(static_cast<float>(K)), stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dbias, cuda::upload(random_bf16_values({N}, 0.5f), arena(), DType::kBF16, stream()));
  for (DType format : {DType::kI8, DType::kF8E4M3}) {
    ASSERT_OK_AND_ASSIGN(RowQuantized qx, cuda::quantize_rows(dx, format, arena(), stream()));
    ASSERT_OK_AND_ASSIGN(RowQuantized qw, cuda::quantize_rows(dw, format, arena(), stream()));
    const cuda::QuantizedGemmOptions options{false, /*fp8_unit_scales=*/true};
    ASSERT_OK_AND_ASSIGN(Tensor whole, arena().tensor({M, N}, DType::kBF16));
    ASSERT_STATUS_OK(runner_->linear(qx, qw, &dbias, whole, arena(), stream(), options));
    const Tensor expected = to_host_f32(whole, stream());
    for (int64_t rows : {M - 1, M / 3, int64_t{1}}) {
      ASSERT_OK_AND_ASSIGN(Tensor acc, arena().tensor({rows * N + N / 2}, DType::kF32));
      ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({M, N}, DType::kBF16));
      ASSERT_STATUS_OK(poison(dy, stream()));
      ASSERT_STATUS_OK(runner_->linear(qx, qw, &dbias, dy, acc, stream(), options));
      const Tensor got = to_host_f32(dy, stream());
      EXPECT_EQ(std::memcmp(got.raw_data(), expected.raw_data(), got.nbytes()), 0)
          << dtype_name(format) << ", chunks of " << rows << " rows";
    }
    ASSERT_OK_AND_ASSIGN(Tensor small, arena().tensor({N - 1}, DType::kF32));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({M, N}, DType::kBF16));
    EXPECT_FALSE(runner_->linear(qx, qw, &dbias, dy, small, stream(), options).is_ok());
  }
}

TEST_F(CudaGemmQuantized, RefusesWhatCuBlasLtCannotRun) {
  ASSERT_OK_AND_ASSIGN(Tensor dx, arena().tensor({4, 40}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor dw, arena().tensor({8, 40}, DType::kBF16));
  ASSERT_STATUS_OK(cuda::fill_normal(dx, 1, next_stream(), 0.0f, 1.0f, stream()));
  ASSERT_STATUS_OK(cuda::fill_normal(dw, 1, next_stream(), 0.0f, 1.0f, stream()));
  ASSERT_OK_AND_ASSIGN(RowQuantized qx, cuda::quantize_rows(dx, DType::kF8E4M3, arena(), stream()));
  ASSERT_OK_AND_ASSIGN(RowQuantized qw, cuda::quantize_rows(dw, DType::kF8E4M3, arena(), stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({4, 8}, DType::kBF16));
  const Status s = runner_->linear(qx, qw, nullptr, dy, arena(), stream());  // K = 40
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find("K a multiple of 16 and N of 8"), std::string::npos) << s.message();
  // N = 33 (cuBLASLt has no fp8 or int8 algorithm writing rows of 33 elements).
  ASSERT_OK_AND_ASSIGN(Tensor dx48, arena().tensor({4, 48}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor dw33, arena().tensor({33, 48}, DType::kBF16));
  ASSERT_STATUS_OK(cuda::fill_normal(dx48, 1, next_stream(), 0.0f, 1.0f, stream()));
  ASSERT_STATUS_OK(cuda::fill_normal(dw33, 1, next_stream(), 0.0f, 1.0f, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dy33, arena().tensor({4, 33}, DType::kBF16));
  for (DType format : {DType::kF8E4M3, DType::kI8}) {
    ASSERT_OK_AND_ASSIGN(RowQuantized qx48, cuda::quantize_rows(dx48, format, arena(), stream()));
    ASSERT_OK_AND_ASSIGN(RowQuantized qw33, cuda::quantize_rows(dw33, format, arena(), stream()));
    const Status s33 = runner_->linear(qx48, qw33, nullptr, dy33, arena(), stream());
    EXPECT_EQ(s33.code(), ErrorCode::kUnsupported) << dtype_name(format) << ": " << s33.to_string();
  }
  ASSERT_OK_AND_ASSIGN(RowQuantized qw8, cuda::quantize_rows(dw, DType::kI8, arena(), stream()));
  EXPECT_THROW((void)runner_->linear(qx, qw8, nullptr, dy, arena(), stream()), InternalError);  // formats differ
}

TEST_F(CudaGemmQuantized, PlansAreCachedAndThePathIsReported) {
  ASSERT_OK_AND_ASSIGN(Tensor dx, arena().tensor({9, 64}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor dw, arena().tensor({32, 64}, DType::kBF16));
  ASSERT_STATUS_OK(cuda::fill_normal(dx, 2, next_stream(), 0.0f, 1.0f, stream()));
  ASSERT_STATUS_OK(cuda::fill_normal(dw, 2, next_stream(), 0.0f, 1.0f, stream()));
  ASSERT_OK_AND_ASSIGN(RowQuantized qx, cuda::quantize_rows(dx, DType::kF8E4M3, arena(), stream()));
  ASSERT_OK_AND_ASSIGN(RowQuantized qw, cuda::quantize_rows(dw, DType::kF8E4M3, arena(), stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({9, 32}, DType::kBF16));
  ASSERT_STATUS_OK(runner_->linear(qx, qw, nullptr, dy, arena(), stream()));
  const size_t plans = runner_->cached_plans();
  ASSERT_STATUS_OK(runner_->linear(qx, qw, nullptr, dy, arena(), stream()));
  EXPECT_EQ(runner_->cached_plans(), plans);
  std::printf("[cuda-op] qgemm path: fp8 default takes \"%s\"%s%s\n", cuda::quantized_gemm_path_name(runner_->last_path()),
              runner_->outer_vector_refusal().empty() ? "" : "; cuBLASLt refused outer-vector scales: ",
              runner_->outer_vector_refusal().c_str());
  // Hopper with cuBLAS 12.9+ offers them (measured on the H200 with cuBLAS 13.1); elsewhere the
  // unit-scales path is taken, and the refusal says why.
  EXPECT_EQ(runner_->last_path(), runner_->outer_vector_refusal().empty() ? cuda::QuantizedGemmPath::kFp8OuterVectorScales
                                                                           : cuda::QuantizedGemmPath::kFp8UnitScales);
  ASSERT_STATUS_OK(runner_->linear(qx, qw, nullptr, dy, arena(), stream(), {false, true}));
  EXPECT_EQ(runner_->last_path(), cuda::QuantizedGemmPath::kFp8UnitScales);
}

}  // namespace
}  // namespace orochi
