// cuBLASLt GEMM (bf16 and f32, with and without the fused bias) vs the CPU linear on the same
// bf16-rounded inputs, on odd shapes and on the real H3 layer shapes with M in {1, 17, 4096}.
// For M = 4096 the CPU reference runs on a sample of rows (every row is still checked written).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/random_fill.h"
#include "cuda/call_timing.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

constexpr double kBf16Tol = 1e-2;
constexpr double kF32Tol = 1e-5;

class CudaGemm : public GpuTest {
 protected:
  CudaGemm() : GpuTest(size_t{3} << 30) {}
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto runner = cuda::GemmRunner::create(0);
    ASSERT_TRUE(runner.has_value()) << runner.status().to_string();
    runner_ = std::move(*runner);
  }

  // Runs one case: fresh x[M, K] (and w, bias unless given), GPU result vs the CPU linear on up to
  // `max_ref_rows` rows; f32 cases are also held to an fp64 reference.
  void run_case(const std::string& name, int64_t M, const Tensor& w, const Tensor* bias, const Tensor& dw,
                const Tensor* dbias, DType dtype, int64_t max_ref_rows = 64) {
    const int64_t N = w.dim(0), K = w.dim(1);
    const size_t mark = arena().mark();
    const float x_std = 1.0f;
    Tensor x = dtype == DType::kBF16 ? random_bf16_values({M, K}, x_std) : random_f32_values({M, K}, x_std);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), dtype, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({M, N}, dtype));
    ASSERT_STATUS_OK(poison(dy, stream()));
    ASSERT_STATUS_OK(runner_->linear(dx, dw, dbias, dy, stream()));
    const Tensor y = to_host_f32(dy, stream());
    ASSERT_EQ(count_nan(y), 0) << name << ": unwritten elements";

    // Reference rows: all of them, or an even spread that includes the first and the last.
    std::vector<int64_t> rows;
    const int64_t n_ref = std::min(M, max_ref_rows);
    for (int64_t i = 0; i < n_ref; ++i) rows.push_back(n_ref == 1 ? 0 : i * (M - 1) / (n_ref - 1));
    const Tensor idx = Tensor::from_ints(rows, {n_ref});
    const Tensor ref = cpu::linear(cpu::gather_rows(x, idx), w, bias);
    const Tensor got = cpu::gather_rows(y, idx);
    const std::string shape = "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                              (bias ? " +bias" : "") + (n_ref < M ? " (rows sampled)" : "");
    check_case("gemm " + std::string(dtype_name(dtype)) + " " + name, shape, got, ref,
               dtype == DType::kBF16 ? kBf16Tol : kF32Tol);
    if (dtype == DType::kF32) {  // the CPU linear is itself fp32: hold both to the fp64 truth
      std::vector<float> truth(static_cast<size_t>(n_ref * N));
      for (int64_t r = 0; r < n_ref; ++r)
        for (int64_t n = 0; n < N; ++n) {
          double acc = bias ? bias->data<float>()[n] : 0.0;
          const float* xr = x.data<float>() + rows[r] * K;
          const float* wr = w.data<float>() + n * K;
          for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(xr[k]) * wr[k];
          truth[r * N + n] = static_cast<float>(acc);
        }
      const Tensor t = Tensor::from_floats(truth, {n_ref, N});
      const testing::Comparison c = testing::compare(got, t);
      print_case("gemm f32 vs fp64 " + name, shape, c);
      EXPECT_LE(c.rel_l2, kF32Tol) << name << " " << shape << " vs fp64: " << c.summary();
    }
    arena().reset(mark);
  }

  // Fresh w [N, K] (and bias) for a set of M values; weights are scaled so outputs stay O(1).
  void run_layer(const std::string& name, int64_t N, int64_t K, bool with_bias, DType dtype,
                 std::initializer_list<int64_t> Ms) {
    const size_t mark = arena().mark();
    const float w_std = 1.0f / std::sqrt(static_cast<float>(K));
    Tensor w = dtype == DType::kBF16 ? random_bf16_values({N, K}, w_std) : random_f32_values({N, K}, w_std);
    Tensor b = dtype == DType::kBF16 ? random_bf16_values({N}, 0.5f) : random_f32_values({N}, 0.5f);
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), dtype, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), dtype, stream()));
    for (int64_t M : Ms) {
      run_case(name, M, w, with_bias ? &b : nullptr, dw, with_bias ? &db : nullptr, dtype);
      if (HasFatalFailure()) return;
    }
    arena().reset(mark);
  }

  std::unique_ptr<cuda::GemmRunner> runner_;
};

TEST_F(CudaGemm, OddShapesBothDtypes) {
  struct Case { int64_t M, N, K; };
  for (DType dtype : {DType::kBF16, DType::kF32})
    for (bool bias : {false, true})
      for (const Case& k : {Case{1, 1, 1}, Case{3, 5, 7}, Case{17, 33, 40}, Case{64, 96, 24}, Case{129, 31, 77}})
        run_layer("odd", k.N, k.K, bias, dtype, {k.M});
}

// bf16 block and embedder layers of H3 (MODELS_H3.md §1.2).
TEST_F(CudaGemm, H3Bf16Layers) {
  run_layer("to_q/k/v", 7168, 5376, false, DType::kBF16, {1, 17, 4096});
  run_layer("to_out", 5376, 7168, false, DType::kBF16, {1, 17, 4096});
  run_layer("ff.net.0.proj", 28672, 5376, false, DType::kBF16, {1, 17, 4096});
  run_layer("ff.net.2", 5376, 14336, false, DType::kBF16, {1, 17, 4096});
  run_layer("context_embedder", 5376, 5120, true, DType::kBF16, {1, 17, 4096});
  run_layer("adaln_proj", 96768, 2688, true, DType::kBF16, {1, 17});  // M = n_t rows in practice
  run_layer("norm_out.linear", 10752, 2688, true, DType::kBF16, {1, 17});
}

// The fp32 islands: patch projections, time MLP, output heads.
TEST_F(CudaGemm, H3F32Layers) {
  run_layer("proj_in", 5376, 96, true, DType::kF32, {1, 17, 4096});
  run_layer("audio_proj_in", 5376, 32, true, DType::kF32, {1, 17, 4096});
  run_layer("time_embedder.linear_1", 5376, 256, true, DType::kF32, {1, 17});
  run_layer("time_embedder.linear_2", 2688, 5376, true, DType::kF32, {1, 17});
  run_layer("proj_out", 96, 5376, true, DType::kF32, {1, 17, 4096});
  run_layer("audio_proj_out", 32, 5376, true, DType::kF32, {1, 17, 4096});
}

TEST_F(CudaGemm, PlansAreCachedPerShapeAndAlignment) {
  const int64_t M = 9, N = 40, K = 64;
  Tensor x = random_bf16_values({M, K}), w = random_bf16_values({N, K}, 0.125f);
  ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({M, N}, DType::kBF16));
  ASSERT_STATUS_OK(runner_->linear(dx, dw, nullptr, dy, stream()));
  EXPECT_EQ(runner_->cached_plans(), 1u);
  ASSERT_STATUS_OK(runner_->linear(dx, dw, nullptr, dy, stream()));
  EXPECT_EQ(runner_->cached_plans(), 1u);  // same shape: no new heuristic query
  // x 2 bytes off alignment: a plan of its own, and still right.
  ASSERT_OK_AND_ASSIGN(Tensor flat, arena().tensor({M * K + 1}, DType::kBF16));
  Tensor dx_unaligned = flat.slice(0, 1, M * K + 1).view({M, K});
  ASSERT_STATUS_OK(cuda::upload_into(x, dx_unaligned, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dy2, arena().tensor({M, N}, DType::kBF16));
  ASSERT_STATUS_OK(poison(dy2, stream()));
  ASSERT_STATUS_OK(runner_->linear(dx_unaligned, dw, nullptr, dy2, stream()));
  EXPECT_EQ(runner_->cached_plans(), 2u);
  check_case("gemm bf16 unaligned x", "M=9 N=40 K=64", to_host_f32(dy2, stream()), cpu::linear(x, w), kBf16Tol);
  // Leading dims flatten into M.
  ASSERT_OK_AND_ASSIGN(Tensor dy3, arena().tensor({3, 3, N}, DType::kBF16));
  ASSERT_STATUS_OK(runner_->linear(dx.view({3, 3, K}), dw, nullptr, dy3, stream()));
  EXPECT_TENSOR_CLOSE(to_host_f32(dy3, stream()).view({M, N}), to_host_f32(dy, stream()), 0.0);
}

// A warmed-up shape enqueues only the matmul, so it can be captured and replayed as a graph.
// A linear split along K into column slices of one wider weight, summed into y (the Ulysses
// out-projection computes the local heads' part while the peers' heads still travel): the same
// result as one GEMM over the whole K, within bf16 rounding of the intermediate y; f32 exact-ish.
TEST_F(CudaGemm, ColumnSlicesAccumulateIntoOneOutput) {
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    const int64_t M = 300, N = 96, K = 256, split = 128;
    const size_t mark = arena().mark();
    Tensor x = dtype == DType::kBF16 ? random_bf16_values({M, K}) : random_f32_values({M, K});
    Tensor w = dtype == DType::kBF16 ? random_bf16_values({N, K}, 0.0625f) : random_f32_values({N, K}, 0.0625f);
    Tensor b = dtype == DType::kBF16 ? random_bf16_values({N}, 0.5f) : random_f32_values({N}, 0.5f);
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), dtype, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), dtype, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), dtype, stream()));
    // The two halves of x as separate contiguous buffers, as they arrive in the forward.
    ASSERT_OK_AND_ASSIGN(Tensor dx0, cuda::upload(x.slice(1, 0, split).contiguous(), arena(), dtype, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor dx1, cuda::upload(x.slice(1, split, K).contiguous(), arena(), dtype, stream()));
    ASSERT_OK_AND_ASSIGN(Tensor whole, arena().tensor({M, N}, dtype));
    ASSERT_OK_AND_ASSIGN(Tensor parts, arena().tensor({M, N}, dtype));
    ASSERT_STATUS_OK(poison(parts, stream()));
    ASSERT_STATUS_OK(runner_->linear(dx, dw, &db, whole, stream()));
    ASSERT_STATUS_OK(runner_->linear_strided(dx1, dw.slice(1, split, K), &db, parts, false, stream()));
    ASSERT_STATUS_OK(runner_->linear_strided(dx0, dw.slice(1, 0, split), nullptr, parts, true, stream()));
    const Tensor ref = cpu::linear(x, w, &b);
    const double tol = dtype == DType::kBF16 ? kBf16Tol : kF32Tol;
    check_case(std::string("gemm ") + dtype_name(dtype) + " K split, accumulated", "M=300 N=96 K=128+128",
               to_host_f32(parts, stream()), ref, tol);
    check_case(std::string("gemm ") + dtype_name(dtype) + " K split vs whole", "M=300 N=96 K=256",
               to_host_f32(parts, stream()), to_host_f32(whole, stream()), dtype == DType::kBF16 ? 5e-3 : kF32Tol);
    EXPECT_THROW((void)runner_->linear(dx0, dw.slice(1, 0, split), nullptr, parts, stream()), InternalError);
    arena().reset(mark);
  }
}

// H3's FFN-in GEMM at the row counts one GPU and one SP2 rank see (1344x768: 37,966 and 18,983
// rows; 832x480: 15,100), and at nearby multiples of 256: does the per-FLOP rate hold when M
// halves? Timed (median of 7 after the autotuned first call), informative. Measured: 682-725
// TFLOP/s with no stable winner between neighbouring row counts, so splitting off the rows past a
// multiple of 256 (tried, timed per shape) gained nothing in the forward.
TEST_F(CudaGemm, FfnInRowCountsTimingInformative) {
  const int64_t N = 28672, K = 5376;
  ASSERT_OK_AND_ASSIGN(Tensor dw, arena().tensor({N, K}, DType::kBF16));
  ASSERT_STATUS_OK(cuda::fill_normal(dw, 1, 0, 0.0f, 0.02f, stream()));
  cudaEvent_t start = nullptr, stop = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  for (int64_t M : {int64_t{37966}, int64_t{37888}, int64_t{18983}, int64_t{18944}, int64_t{15100}, int64_t{14848},
                    int64_t{7550}}) {
    const size_t mark = arena().mark();
    ASSERT_OK_AND_ASSIGN(Tensor dx, arena().tensor({M, K}, DType::kBF16));
    ASSERT_OK_AND_ASSIGN(Tensor dy, arena().tensor({M, N}, DType::kBF16));
    ASSERT_STATUS_OK(cuda::fill_normal(dx, 2, 0, 0.0f, 1.0f, stream()));
    ASSERT_STATUS_OK(runner_->linear(dx, dw, nullptr, dy, stream()));  // plans (and tunes) the shape
    std::vector<float> ms;
    for (int i = 0; i < 7; ++i) {
      ASSERT_EQ(cudaEventRecord(start, stream()), cudaSuccess);
      ASSERT_STATUS_OK(runner_->linear(dx, dw, nullptr, dy, stream()));
      ASSERT_EQ(cudaEventRecord(stop, stream()), cudaSuccess);
      ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
      float t = 0;
      cudaEventElapsedTime(&t, start, stop);
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double flop = 2.0 * static_cast<double>(M) * N * K;
    std::printf("[gemm-timing] ffn in M=%lld N=%lld K=%lld: median %.3f ms = %.1f TFLOP/s (min %.3f)\n",
                static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), ms[3],
                flop / (ms[3] * 1e-3) / 1e12, ms[0]);
    arena().reset(mark);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// q, k and v of one input through linear_shared_input: batched when the weights and outputs are
// consecutive allocations of one size, a call each when a spacer breaks the spacing. Both against
// three linear() calls (the same products; the batched plan may pick another kernel, so within
// bf16 rounding flips) and the CPU. Informative: the batched call's time beside the three calls
// at H3's 832x480 q/k/v shape.
TEST_F(CudaGemm, LinearSharedInputMatchesSeparateLinears) {
  struct Case { int64_t M, K, N; bool spaced; };
  for (const Case& c : {Case{33, 64, 128, true}, Case{300, 512, 384, true}, Case{300, 512, 384, false},
                        Case{2049, 5376, 7168, true}, Case{15100, 5376, 7168, true}}) {
    const size_t mark = arena().mark();
    const Tensor x = random_bf16_values({c.M, c.K});
    ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
    std::vector<Tensor> w, dw, dy, separate;
    for (int i = 0; i < 3; ++i) {
      w.push_back(random_bf16_values({c.N, c.K}, 1.0f / std::sqrt(static_cast<float>(c.K))));
      if (!c.spaced && i == 2) {
        ASSERT_TRUE(arena().tensor({64}, DType::kBF16).has_value());  // a spacer
      }
      ASSERT_OK_AND_ASSIGN(Tensor t, cuda::upload(w.back(), arena(), DType::kBF16, stream()));
      dw.push_back(t);
    }
    for (std::vector<Tensor>* outs : {&dy, &separate})
      for (int i = 0; i < 3; ++i) {
        ASSERT_OK_AND_ASSIGN(Tensor t, arena().tensor({c.M, c.N}, DType::kBF16));
        ASSERT_STATUS_OK(poison(t, stream()));
        outs->push_back(t);
      }
    ASSERT_STATUS_OK(runner_->linear_shared_input(dx, dw, dy, stream()));
    for (int i = 0; i < 3; ++i) ASSERT_STATUS_OK(runner_->linear(dx, dw[i], nullptr, separate[i], stream()));
    const std::string shape = "M=" + std::to_string(c.M) + " K=" + std::to_string(c.K) + " N=" +
                              std::to_string(c.N) + (c.spaced ? " consecutive" : " spaced apart");
    for (int i = 0; i < 3; ++i) {
      const Tensor got = to_host_f32(dy[i], stream());
      ASSERT_EQ(count_nan(got), 0) << shape << ": unwritten elements of output " << i;
      check_case("linear_shared_input vs linear", shape, got, to_host_f32(separate[i], stream()), 2e-3);
      if (c.M <= 2049) {
        const Tensor idx = Tensor::from_ints({0, c.M / 2, c.M - 1}, {3});
        check_case("linear_shared_input vs CPU", shape, cpu::gather_rows(got, idx),
                   cpu::linear(cpu::gather_rows(x, idx), w[i], nullptr), kBf16Tol);
      }
    }
    if (c.M == 15100) {
      Expected<cuda_timing::CallTimes> batched =
          cuda_timing::time_calls([&] { return runner_->linear_shared_input(dx, dw, dy, stream()); }, stream());
      Expected<cuda_timing::CallTimes> three = cuda_timing::time_calls(
          [&]() -> Status {
            for (int i = 0; i < 3; ++i) OROCHI_RETURN_IF_ERROR(runner_->linear(dx, dw[i], nullptr, separate[i], stream()));
            return Status::ok();
          },
          stream());
      ASSERT_TRUE(batched.has_value() && three.has_value());
      std::printf("[gemm-timing] q/k/v %s: batched %.3f ms (%.3f-%.3f), three calls %.3f ms (%.3f-%.3f)\n",
                  shape.c_str(), batched->median_ms, batched->min_ms, batched->max_ms, three->median_ms, three->min_ms,
                  three->max_ms);
    }
    arena().reset(mark);
  }
}

TEST_F(CudaGemm, CapturesInACudaGraph) {
  const int64_t M = 33, N = 256, K = 512;
  Tensor x = random_bf16_values({M, K}), w = random_bf16_values({N, K}, 0.05f), b = random_bf16_values({N});
  ASSERT_OK_AND_ASSIGN(Tensor dx, cuda::upload(x, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor dw, cuda::upload(w, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor db, cuda::upload(b, arena(), DType::kBF16, stream()));
  ASSERT_OK_AND_ASSIGN(Tensor direct, arena().tensor({M, N}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor replayed, arena().tensor({M, N}, DType::kBF16));
  ASSERT_STATUS_OK(runner_->linear(dx, dw, &db, direct, stream()));  // warm-up: the plan is made here
  ASSERT_STATUS_OK(poison(replayed, stream()));
  ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status captured = runner_->linear(dx, dw, &db, replayed, stream());
  ASSERT_EQ(cudaStreamEndCapture(stream(), &graph), cudaSuccess);
  ASSERT_STATUS_OK(captured);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream()), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  const Tensor got = to_host_f32(replayed, stream());
  EXPECT_TENSOR_CLOSE(got, to_host_f32(direct, stream()), 0.0);
  check_case("gemm bf16 graph replay", "M=33 N=256 K=512 +bias", got, cpu::linear(x, w, &b), kBf16Tol);
}

TEST_F(CudaGemm, RejectsMismatchedOperands) {
  ASSERT_OK_AND_ASSIGN(Tensor x, arena().tensor({4, 8}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor w, arena().tensor({5, 9}, DType::kBF16));
  ASSERT_OK_AND_ASSIGN(Tensor y, arena().tensor({4, 5}, DType::kBF16));
  EXPECT_THROW((void)runner_->linear(x, w, nullptr, y, stream()), InternalError);  // K 8 vs 9
  ASSERT_OK_AND_ASSIGN(Tensor wf, arena().tensor({5, 8}, DType::kF32));
  EXPECT_THROW((void)runner_->linear(x, wf, nullptr, y, stream()), InternalError);  // mixed dtypes
  Tensor host_w = Tensor::empty({5, 8}, DType::kBF16);
  EXPECT_THROW((void)runner_->linear(x, host_w, nullptr, y, stream()), InternalError);  // host weight
}

}  // namespace
}  // namespace orochi
