// Orochi's sm_90a GEMM (cuda::gemm_sm90a) against cuBLASLt (GemmRunner) and the CPU linear, with
// the plain and the SwiGLU epilogue; refused operands; and an informative timing beside cuBLASLt
// at H3's 832x480 shapes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/gemm_sm90a.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/ops.h"
#include "backends/cuda/random_fill.h"
#include "cuda/call_timing.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;
using cuda::GemmSm90aEpilogue;

class CudaGemmSm90a : public GpuTest {
 protected:
  CudaGemmSm90a() : GpuTest(size_t{6} << 30) {}
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // x [128, 64] times w [128, 64] into y [128, 128]: refused only for the GPU.
    Expected<Tensor> x = arena().tensor({128, 64}, DType::kBF16), y = arena().tensor({128, 128}, DType::kBF16);
    ASSERT_TRUE(x.has_value() && y.has_value());
    const std::string why = cuda::gemm_sm90a_unsupported_reason(*x, *x, nullptr, *y, GemmSm90aEpilogue::kBias);
    if (!why.empty()) GTEST_SKIP() << why;
    auto runner = cuda::GemmRunner::create(0);
    ASSERT_TRUE(runner.has_value()) << runner.status().to_string();
    runner_ = std::move(*runner);
  }
  std::unique_ptr<cuda::GemmRunner> runner_;
};

// Random device operands: x [M, K] (std 1), w [N, K] (std 1/sqrt(K)), bias [N] (std 0.5).
struct Operands {
  Tensor x, w, bias;
};

TEST_F(CudaGemmSm90a, MatchesCublasAndTheCpu) {
  struct Case { int64_t M, K, N; bool bias; };
  // Row and column tails (M % 128, N % 128 == 64), K not a multiple of 64, H3's FFN-in width.
  for (const Case& c : {Case{1, 64, 128, true}, Case{129, 64, 128, false}, Case{333, 200, 192, true},
                        Case{1000, 512, 384, true}, Case{2049, 5376, 7168, true}, Case{300, 5376, 28672, true}}) {
    const size_t mark = arena().mark();
    const Tensor x = random_bf16_values({c.M, c.K}), w = random_bf16_values({c.N, c.K}, 1.0f / std::sqrt(float(c.K)));
    const Tensor b = random_bf16_values({c.N}, 0.5f);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), DType::kBF16, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor ours, arena().tensor({c.M, c.N}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor theirs, arena().tensor({c.M, c.N}, DType::kBF16));
    ASSERT_STATUS_OK(poison(ours, stream()));
    const Tensor* bias = c.bias ? &db : nullptr;
    ASSERT_STATUS_OK(cuda::gemm_sm90a(dx, dw, bias, ours, GemmSm90aEpilogue::kBias, stream()));
    ASSERT_STATUS_OK(runner_->linear(dx, dw, bias, theirs, stream()));
    const Tensor got = to_host_f32(ours, stream());
    ASSERT_EQ(count_nan(got), 0) << "unwritten outputs";
    const std::string shape = "M=" + std::to_string(c.M) + " K=" + std::to_string(c.K) + " N=" + std::to_string(c.N);
    check_case("gemm_sm90a vs cuBLASLt", shape, got, to_host_f32(theirs, stream()), 5e-3);
    if (c.M * c.N * c.K <= int64_t{1} << 30)
      check_case("gemm_sm90a vs CPU", shape, got, cpu::linear(x, w, c.bias ? &b : nullptr), 1e-2);

    // SwiGLU over the same product: w's rows are [value | gate].
    ASSERT_OK_AND_ASSIGN(Tensor fused, arena().tensor({c.M, c.N / 2}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor split, arena().tensor({c.M, c.N / 2}, DType::kBF16));
    ASSERT_STATUS_OK(poison(fused, stream()));
    ASSERT_STATUS_OK(cuda::gemm_sm90a(dx, dw, bias, fused, GemmSm90aEpilogue::kSwiGLU, stream()));
    ASSERT_EQ(cuda::kernels::launch_swiglu(static_cast<const cuda::kernels::bf16*>(theirs.raw_data()),
                                           static_cast<cuda::kernels::bf16*>(split.raw_data()), c.M, c.N / 2, stream()),
              cudaSuccess);
    const Tensor got_fused = to_host_f32(fused, stream());
    ASSERT_EQ(count_nan(got_fused), 0) << "unwritten SwiGLU outputs";
    check_case("gemm_sm90a swiglu vs cuBLASLt + swiglu", shape, got_fused, to_host_f32(split, stream()), 1e-2);
    arena().reset(mark);
  }
}

TEST_F(CudaGemmSm90a, RefusesOperandsItWasNotBuiltFor) {
  ASSERT_OK_AND_ASSIGN(Tensor x, arena().tensor({16, 60}, DType::kBF16));  // K % 8 != 0
  ASSERT_OK_AND_ASSIGN(Tensor w, arena().tensor({32, 60}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor y, arena().tensor({16, 32}, DType::kBF16));
  const Status st = cuda::gemm_sm90a(x, w, nullptr, y, GemmSm90aEpilogue::kBias, stream());
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << st.to_string();
  EXPECT_NE(st.message().find("cuBLASLt"), std::string::npos) << st.message();
  ASSERT_OK_AND_ASSIGN(Tensor xf, arena().tensor({16, 64}, DType::kF32));
  ASSERT_OK_AND_ASSIGN(Tensor wf, arena().tensor({32, 64}, DType::kF32));
  ASSERT_OK_AND_ASSIGN(Tensor yf, arena().tensor({16, 32}, DType::kF32));
  EXPECT_EQ(cuda::gemm_sm90a(xf, wf, nullptr, yf, GemmSm90aEpilogue::kBias, stream()).code(), ErrorCode::kUnsupported);
}

// Informative (prints, never fails on speed): H3's 832x480 linears, ours vs cuBLASLt (tuned), and
// the FFN's first linear + SwiGLU fused vs cuBLASLt then the swiglu kernel.
TEST_F(CudaGemmSm90a, H3ShapesTimingInformative) {
  const int64_t M = 15100;
  auto median_ms = [&](const std::function<Status()>& run) -> double {
    const Expected<cuda_timing::CallTimes> t = cuda_timing::time_calls(run, stream());
    return t.has_value() ? t->median_ms : -1;
  };
  struct Layer { const char* name; int64_t K, N; };
  for (const Layer& l : {Layer{"q/k/v", 5376, 7168}, Layer{"out", 7168, 5376}, Layer{"ffn in", 5376, 28672},
                         Layer{"ffn out", 14336, 5376}}) {
    const size_t mark = arena().mark();
    ASSERT_OK_AND_ASSIGN(Tensor x, arena().tensor({M, l.K}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor w, arena().tensor({l.N, l.K}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor b, arena().tensor({l.N}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor y, arena().tensor({M, l.N}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor g, arena().tensor({M, l.N / 2}, DType::kBF16));
    ASSERT_STATUS_OK(cuda::fill_normal(x, 3, 0, 0.0f, 1.0f, stream()));
    ASSERT_STATUS_OK(cuda::fill_normal(w, 3, 1, 0.0f, 0.02f, stream()));
    ASSERT_STATUS_OK(cuda::fill_normal(b, 3, 2, 0.0f, 0.1f, stream()));
    const double flop = 2.0 * double(M) * double(l.N) * double(l.K);
    const double cublas = median_ms([&] { return runner_->linear(x, w, &b, y, stream()); });
    const double ours = median_ms([&] { return cuda::gemm_sm90a(x, w, &b, y, GemmSm90aEpilogue::kBias, stream()); });
    std::printf("[gemm-sm90a-timing] %-8s M=%lld K=%lld N=%lld: cuBLASLt %.3f ms = %.0f TFLOP/s, ours %.3f ms = %.0f\n",
                l.name, static_cast<long long>(M), static_cast<long long>(l.K), static_cast<long long>(l.N), cublas,
                flop / (cublas * 1e-3) / 1e12, ours, flop / (ours * 1e-3) / 1e12);
    if (l.N == 28672) {
      const double separate = median_ms([&]() -> Status {
        OROCHI_RETURN_IF_ERROR(runner_->linear(x, w, &b, y, stream()));
        return cuda::cuda_status(cuda::kernels::launch_swiglu(static_cast<const cuda::kernels::bf16*>(y.raw_data()),
                                                              static_cast<cuda::kernels::bf16*>(g.raw_data()), M,
                                                              l.N / 2, stream()),
                                 "swiglu");
      });
      const double fused = median_ms([&] { return cuda::gemm_sm90a(x, w, &b, g, GemmSm90aEpilogue::kSwiGLU, stream()); });
      std::printf("[gemm-sm90a-timing] ffn in + swiglu: cuBLASLt + kernel %.3f ms, ours fused %.3f ms\n", separate, fused);
    }
    arena().reset(mark);
  }
}

}  // namespace
}  // namespace orochi
