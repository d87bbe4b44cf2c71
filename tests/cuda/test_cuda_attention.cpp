// cuDNN fused attention (CudnnAttention) against the CPU reference orochi::cpu::attention, plus
// CUDA-graph capture, bad input and an informative timing at the H3 denoiser's sizes.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cpu/ops_llm.h"
#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/attention_flash.h"
#include "backends/cuda/device.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/random_fill.h"
#include "cuda/attention_test_support.h"
#include "support/compare.h"

namespace orochi {
namespace {

using cuda::AttentionImplementation;
using cuda::AttentionShape;
using cuda::CudnnAttention;
using namespace attention_test;  // NOLINT: the shared helpers of the attention tests

// Skips unless a GPU is visible and the cudnn-frontend headers were compiled in.
#define REQUIRE_GPU_ATTENTION()                                                                  \
  do {                                                                                           \
    if (!CudnnAttention::compiled_with_frontend()) GTEST_SKIP() << "built without cudnn-frontend"; \
    Expected<std::vector<cuda::DeviceInfo>> devices_ = cuda::list_devices();                     \
    if (!devices_) GTEST_SKIP() << devices_.status().to_string();                                \
  } while (0)

// --- correctness against the CPU ---------------------------------------------------------------

class CudaAttentionVsCpu : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(CudaAttentionVsCpu, MatchesCpuReference) {
  REQUIRE_GPU_ATTENTION();
  const AttentionShape s = GetParam();
  const Inputs in = make_inputs(s, 1000 + static_cast<uint64_t>(s.s_q));
  auto q = upload_bf16(in.q), k = upload_bf16(in.k), v = upload_bf16(in.v);
  DeviceBuffer o(static_cast<size_t>(s.s_q * s.heads * s.head_dim) * 2);
  ASSERT_TRUE(q->ptr && k->ptr && v->ptr && o.ptr);
  ASSERT_CUDA(cudaMemset(o.ptr, 0xFF, o.bytes));  // bf16 0xFFFF is NaN: unwritten rows show up

  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&stream));
  CudnnAttention attention(stream);
  ASSERT_OK(attention.run(q->ptr, k->ptr, v->ptr, o.ptr, s, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  const Tensor gpu = download_f32(o, {s.s_q, s.heads, s.head_dim});  // [S_q, H, D]
  EXPECT_EQ(count_nonfinite(gpu), 0) << "rows or heads left unwritten (NaN poison) or overflowed";
  const std::vector<int64_t> heads = heads_to_check(s.heads);
  const testing::Comparison c = testing::compare(select_heads(gpu, heads), cpu_reference(in, heads));
  std::printf("%s: %s [%s]\n", s.to_string().c_str(), c.summary().c_str(), attention.describe(s).c_str());
  EXPECT_TRUE(c.same_nonfinite) << c.summary();
  EXPECT_LE(c.rel_l2, 1e-2) << c.summary();
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionVsCpu,
                         ::testing::Values(AttentionShape{31, 31, 2, 16}, AttentionShape{1000, 1000, 4, 64},
                                           AttentionShape{2053, 2053, 3, 128}, AttentionShape{4099, 4099, 56, 128},
                                           AttentionShape{100, 77, 2, 64}),  // cross-attention lengths
                         [](const ::testing::TestParamInfo<AttentionShape>& info) {
                           const AttentionShape& s = info.param;
                           return "Sq" + std::to_string(s.s_q) + "_Skv" + std::to_string(s.s_kv) + "_h" +
                                  std::to_string(s.heads) + "_D" + std::to_string(s.head_dim);
                         });

// --- caching, determinism, CUDA graphs ---------------------------------------------------------

struct Problem {
  AttentionShape shape;
  std::unique_ptr<DeviceBuffer> q, k, v;
  std::unique_ptr<DeviceBuffer> o;
  explicit Problem(const AttentionShape& s, uint64_t seed) : shape(s) {
    const Inputs in = make_inputs(s, seed);
    q = upload_bf16(in.q);
    k = upload_bf16(in.k);
    v = upload_bf16(in.v);
    o = std::make_unique<DeviceBuffer>(static_cast<size_t>(s.s_q * s.heads * s.head_dim) * 2);
  }
  Status run(CudnnAttention& a, cudaStream_t stream) { return a.run(q->ptr, k->ptr, v->ptr, o->ptr, shape, stream); }
  Tensor output() const { return download_f32(*o, {shape.s_q, shape.heads, shape.head_dim}); }
};

// Causal grouped-query attention (the Qwen3-VL text encoder: 64 query heads over 8 kv heads) against
// cpu::causal_attention_gqa; and the same inputs without the mask must differ (the mask is applied).
TEST(CudaAttention, CausalGroupedQueryMatchesCpu) {
  REQUIRE_GPU_ATTENTION();
  for (const AttentionShape& s : {AttentionShape{37, 37, 4, 64, DType::kBF16, 2, true},
                                  AttentionShape{256, 256, 64, 128, DType::kBF16, 8, true}}) {
    const Tensor q = testing::random_normal({s.s_q, s.heads, s.head_dim}, 71, 1.5f).to(DType::kBF16).to(DType::kF32);
    const Tensor k = testing::random_normal({s.s_kv, s.kv_heads, s.head_dim}, 72, 1.5f).to(DType::kBF16).to(DType::kF32);
    const Tensor v = testing::random_normal({s.s_kv, s.kv_heads, s.head_dim}, 73, 1.0f).to(DType::kBF16).to(DType::kF32);
    auto dq = upload_bf16(q), dk = upload_bf16(k), dv = upload_bf16(v);
    DeviceBuffer o(static_cast<size_t>(s.s_q * s.heads * s.head_dim) * 2), o_full(o.bytes);
    ASSERT_TRUE(dq->ptr && dk->ptr && dv->ptr && o.ptr && o_full.ptr);
    CudnnAttention attention(nullptr);
    ASSERT_OK(attention.run(dq->ptr, dk->ptr, dv->ptr, o.ptr, s, nullptr));
    AttentionShape unmasked = s;
    unmasked.causal = false;
    ASSERT_OK(attention.run(dq->ptr, dk->ptr, dv->ptr, o_full.ptr, unmasked, nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const Tensor gpu = download_f32(o, {s.s_q, s.heads, s.head_dim});
    const testing::Comparison c = testing::compare(gpu, cpu::causal_attention_gqa(q, k, v));
    std::printf("%s: %s [%s]\n", s.to_string().c_str(), c.summary().c_str(), attention.describe(s).c_str());
    EXPECT_TRUE(c.same_nonfinite) << c.summary();
    EXPECT_LE(c.rel_l2, 1e-2) << c.summary();
    EXPECT_GT(testing::compare(download_f32(o_full, {s.s_q, s.heads, s.head_dim}), gpu).rel_l2, 0.1);
  }
  CudnnAttention attention(nullptr);
  DeviceBuffer b(4096);
  EXPECT_FALSE(attention.run(b.ptr, b.ptr, b.ptr, b.ptr, AttentionShape{4, 4, 6, 64, DType::kBF16, 4, true}, nullptr)
                   .is_ok());  // 4 kv heads do not divide 6 query heads
}

TEST(CudaAttention, CachesOneGraphPerShapeAndIsDeterministic) {
  REQUIRE_GPU_ATTENTION();
  Problem p(AttentionShape{333, 333, 4, 128}, 7);
  CudnnAttention attention;
  ASSERT_OK(p.run(attention, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const Tensor first = p.output();
  ASSERT_CUDA(cudaMemset(p.o->ptr, 0xFF, p.o->bytes));
  ASSERT_OK(p.run(attention, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(attention.cached_graph_count(), 1u);
  const testing::Comparison c = testing::compare(p.output(), first);
  EXPECT_TRUE(c.same_nonfinite && c.max_abs == 0) << "re-run differs: " << c.summary();

  Expected<size_t> ws = attention.workspace_bytes(64, 4, 128);  // a second shape builds a second graph
  ASSERT_TRUE(ws.has_value()) << ws.status().to_string();
  EXPECT_EQ(attention.cached_graph_count(), 2u);
  std::printf("workspace for S=64: %zu bytes; S=333: %s\n", *ws, attention.describe(p.shape).c_str());
}

TEST(CudaAttention, PreparedShapeIsCapturableInACudaGraph) {
  REQUIRE_GPU_ATTENTION();
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CudnnAttention attention(stream);
  Problem p(AttentionShape{515, 515, 8, 128}, 11);
  ASSERT_OK(attention.prepare(p.shape));

  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status captured = p.run(attention, stream);
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(captured.is_ok()) << captured.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));

  ASSERT_CUDA(cudaMemsetAsync(p.o->ptr, 0xFF, p.o->bytes, stream));
  ASSERT_CUDA(cudaGraphLaunch(exec, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  const Tensor from_graph = p.output();
  ASSERT_CUDA(cudaMemsetAsync(p.o->ptr, 0xFF, p.o->bytes, stream));
  ASSERT_OK(p.run(attention, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  const testing::Comparison c = testing::compare(from_graph, p.output());
  EXPECT_TRUE(c.same_nonfinite && c.max_abs == 0) << "graph replay differs from eager run: " << c.summary();

  // A shape never prepared cannot be built inside a capture: refused, and the capture survives.
  Problem unprepared(AttentionShape{77, 77, 8, 128}, 12);
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status refused = unprepared.run(attention, stream);
  cudaGraph_t empty = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream, &empty), cudaSuccess);
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument) << refused.to_string();
  EXPECT_NE(refused.message().find("prepare()"), std::string::npos) << refused.message();

  cudaGraphDestroy(empty);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(CudaAttention, RunsWithAnExternalWorkspaceAndRefusesATooSmallOne) {
  REQUIRE_GPU_ATTENTION();
  Problem p(AttentionShape{1031, 1031, 8, 128}, 13);
  CudnnAttention internal, external;
  ASSERT_OK(p.run(internal, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const Tensor expected = p.output();

  Expected<size_t> need = external.workspace_bytes(p.shape);
  ASSERT_TRUE(need.has_value()) << need.status().to_string();
  std::printf("workspace for %s: %zu bytes\n", p.shape.to_string().c_str(), *need);
  DeviceBuffer arena(*need + 256);
  ASSERT_TRUE(arena.ptr);
  if (*need > 0) {
    EXPECT_EQ(external.set_external_workspace(arena.ptr, *need - 1).code(), ErrorCode::kInvalidArgument);
  }
  ASSERT_OK(external.set_external_workspace(arena.ptr, *need));
  ASSERT_CUDA(cudaMemset(p.o->ptr, 0xFF, p.o->bytes));
  ASSERT_OK(p.run(external, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const testing::Comparison c = testing::compare(p.output(), expected);
  EXPECT_TRUE(c.same_nonfinite && c.max_abs == 0) << "external workspace changed the result: " << c.summary();
}

// --- timing (informative only: prints, never fails on speed) -----------------------------------

// Informative on speed (prints, never fails on it); the outputs are still spot-checked.
TEST(CudaAttention, TimingInformative) {
  REQUIRE_GPU_ATTENTION();
  // H3 at 832x480 and 1344x768 (56 heads); 32760 x 40 heads is the shape DEVICE.md measured PyTorch at.
  for_each_timed_shape({{15100, 56}, {37966, 56}, {32760, 40}}, [&](const TimedShape& c, cudaStream_t stream,
                                                                    DeviceBuffer& q, DeviceBuffer& k, DeviceBuffer& v,
                                                                    DeviceBuffer& o, double flop) {
    const int64_t D = 128;
    const std::vector<uint16_t> hq = download_bits(q), hk = download_bits(k), hv = download_bits(v);
    for (AttentionImplementation impl : {AttentionImplementation::kUnified, AttentionImplementation::kComposite}) {
      CudnnAttention attention(stream, impl);
      const AttentionShape shape{c.S, c.S, c.heads, D};
      const Status built = attention.prepare(shape);
      if (!built.is_ok()) {
        std::printf("attention S=%ld heads=%ld %s: n/a TFLOP/s, not available: %s\n", static_cast<long>(c.S),
                    static_cast<long>(c.heads), cuda::attention_implementation_name(impl), built.to_string().c_str());
        continue;
      }
      Expected<CallTimes> t = time_calls([&] { return attention.run(q.ptr, k.ptr, v.ptr, o.ptr, shape, stream); }, stream);
      ASSERT_TRUE(t.has_value()) << t.status().to_string();
      std::printf("attention S=%ld heads=%ld D=128 %s: median %.3f ms (min %.3f, max %.3f) = %.1f TFLOP/s [%s]\n",
                  static_cast<long>(c.S), static_cast<long>(c.heads), cuda::attention_implementation_name(impl),
                  t->median_ms, t->min_ms, t->max_ms, flop / (t->median_ms * 1e-3) / 1e12,
                  attention.describe(shape).c_str());
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      const double rel = spot_check(hq, hk, hv, download_bits(o), c.S, c.heads, D);
      std::printf("  spot check of 10 (row, head) outputs: rel_l2=%.2e\n", rel);
      EXPECT_LE(rel, 1e-2);
    }
  });
}

// Every plan cuDNN's heuristics offer for H3's shapes (one GPU at 480p / 768p, and one SP2 rank's
// 28 heads at 768p), each timed: is the heuristic's first pick (what run() uses) the fastest?
TEST(CudaAttention, CandidatePlansTimingInformative) {
  REQUIRE_GPU_ATTENTION();
  for_each_timed_shape({{15100, 56}, {37966, 56}, {37966, 28}},
                       [](const TimedShape& c, cudaStream_t stream, DeviceBuffer& q, DeviceBuffer& k, DeviceBuffer& v,
                          DeviceBuffer& o, double flop) {
                         CudnnAttention attention(stream);
                         const AttentionShape shape{c.S, c.S, c.heads, 128};
                         ASSERT_OK(attention.prepare(shape));
                         Expected<std::vector<CudnnAttention::CandidateTiming>> t =
                             attention.time_candidate_plans(shape, q.ptr, k.ptr, v.ptr, o.ptr, stream, 5);
                         ASSERT_TRUE(t.has_value()) << t.status().to_string();
                         std::printf("attention S=%ld heads=%ld: %zu candidate plans; run() uses [%s]\n",
                                     static_cast<long>(c.S), static_cast<long>(c.heads), t->size(),
                                     attention.describe(shape).c_str());
                         for (const auto& plan : *t)
                           std::printf("  %-60s %8.3f ms = %6.1f TFLOP/s (workspace %zu B)\n", plan.engine.c_str(),
                                       plan.ms, plan.ms > 0 ? flop / (plan.ms * 1e-3) / 1e12 : 0.0,
                                       plan.workspace_bytes);
                         EXPECT_FALSE(t->empty());
                       });
}

// Why attention runs slower inside the denoiser forward than in TimingInformative: that test
// synchronizes after every call (the GPU idles, then bursts); a forward keeps it busy with GEMMs
// in between. Times the 480p shape three ways: isolated calls, back-to-back calls, and each call
// right after the forward's largest GEMM (FFN in, 15100 x 5376 -> 28672), events around attention only;
// for cuDNN and for Orochi's flash kernel.
TEST(CudaAttention, SustainedTimingInformative) {
  REQUIRE_GPU_ATTENTION();
  const int64_t S = 15100, H = 56, D = 128, K = 5376, N = 28672;
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // The cuDNN handle first: created after the 2.2 GB fill and the GEMM runner, cudnnCreate failed
  // on two device machines (CUDNN_STATUS_INTERNAL_ERROR creating its stream pool).
  CudnnAttention attention(stream);
  const AttentionShape shape{S, S, H, D};
  ASSERT_OK(attention.prepare(shape));
  const size_t bytes = static_cast<size_t>(4 * S * H * D + S * K + N * K + S * N) * 2 + (size_t{1} << 20);
  Expected<std::shared_ptr<cuda::DeviceArena>> arena = cuda::DeviceArena::create(0, bytes, "attention timing");
  ASSERT_TRUE(arena.has_value()) << arena.status().to_string();
  std::vector<Tensor> t;
  for (const Shape& shape : {Shape{S, H, D}, Shape{S, H, D}, Shape{S, H, D}, Shape{S, H, D}, Shape{S, K},
                             Shape{N, K}, Shape{S, N}}) {
    Expected<Tensor> tensor = (*arena)->tensor(shape, DType::kBF16);
    ASSERT_TRUE(tensor.has_value());
    ASSERT_OK(cuda::fill_normal(*tensor, 9, t.size(), 0.0f, 1.0f, stream));
    t.push_back(*tensor);
  }
  const void *q = t[0].raw_data(), *k = t[1].raw_data(), *v = t[2].raw_data();
  void* o = const_cast<void*>(t[3].raw_data());
  const Tensor &tx = t[4], &tw = t[5], &ty = t[6];
  Expected<std::unique_ptr<cuda::GemmRunner>> gemm = cuda::GemmRunner::create(0);
  ASSERT_TRUE(gemm.has_value()) << gemm.status().to_string();

  struct Kernel {
    const char* name;
    std::function<Status()> run;
  };
  std::vector<Kernel> kernels = {{"cuDNN", [&] { return attention.run(q, k, v, o, shape, stream); }}};
  if (cuda::flash_attention_unsupported_reason(shape).empty())
    kernels.push_back({"flash", [&] { return cuda::flash_attention(q, k, v, o, shape, stream); }});
  for (const Kernel& kernel : kernels)
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK(kernel.run());
      ASSERT_OK((*gemm)->linear(tx, tw, nullptr, ty, stream));
    }
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  constexpr int kRuns = 10;
  std::vector<cudaEvent_t> ev(2 * kRuns + 2);
  for (cudaEvent_t& e : ev) ASSERT_CUDA(cudaEventCreate(&e));
  const double flop = 4.0 * double(S) * double(S) * double(H * D);
  for (const Kernel& kernel : kernels) {
    auto report = [&](const char* how, const std::vector<float>& ms) {
      std::vector<float> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      const double median = 0.5 * (sorted[kRuns / 2 - 1] + sorted[kRuns / 2]);
      std::printf("[attention-sustained] %-5s %-28s median %.3f ms (min %.3f, max %.3f) = %.1f TFLOP/s\n",
                  kernel.name, how, median, sorted.front(), sorted.back(), flop / (median * 1e-3) / 1e12);
    };
    // 1. Isolated: synchronize after each call.
    std::vector<float> isolated;
    for (int i = 0; i < kRuns; ++i) {
      ASSERT_CUDA(cudaEventRecord(ev[0], stream));
      ASSERT_OK(kernel.run());
      ASSERT_CUDA(cudaEventRecord(ev[1], stream));
      ASSERT_CUDA(cudaEventSynchronize(ev[1]));
      float ms = 0;
      ASSERT_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]));
      isolated.push_back(ms);
    }
    report("isolated (sync after each)", isolated);
    // 2. Back to back, and 3. after a GEMM each: all queued, read at the end.
    for (bool with_gemm : {false, true}) {
      for (int i = 0; i < kRuns; ++i) {
        if (with_gemm) ASSERT_OK((*gemm)->linear(tx, tw, nullptr, ty, stream));
        ASSERT_CUDA(cudaEventRecord(ev[2 * i], stream));
        ASSERT_OK(kernel.run());
        ASSERT_CUDA(cudaEventRecord(ev[2 * i + 1], stream));
      }
      ASSERT_CUDA(cudaStreamSynchronize(stream));
      std::vector<float> ms;
      for (int i = 0; i < kRuns; ++i) {
        float m = 0;
        ASSERT_CUDA(cudaEventElapsedTime(&m, ev[2 * i], ev[2 * i + 1]));
        ms.push_back(m);
      }
      report(with_gemm ? "each after an FFN-in GEMM" : "back to back", ms);
    }
  }
  for (cudaEvent_t e : ev) cudaEventDestroy(e);
  cudaStreamDestroy(stream);
}

// --- bad input (no GPU needed: rejected before the device is touched) ---------------------------

TEST(CudaAttention, RejectsBadShapesAndPointers) {
  CudnnAttention attention;
  alignas(16) static char fake[64];
  if (!CudnnAttention::compiled_with_frontend()) {
    const Status st = attention.run(fake, fake, fake, fake, 16, 2, 64, nullptr);
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
    EXPECT_NE(st.message().find("install_deps.sh"), std::string::npos) << st.message();
    GTEST_SKIP() << "built without cudnn-frontend";
  }
  const Status odd_dim = attention.run(fake, fake, fake, fake, 16, 2, 12, nullptr);
  EXPECT_EQ(odd_dim.code(), ErrorCode::kUnsupported) << odd_dim.to_string();
  EXPECT_NE(odd_dim.message().find("multiple of 8"), std::string::npos) << odd_dim.message();
  EXPECT_EQ(attention.run(fake, fake, fake, fake, 0, 2, 64, nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(attention.run(nullptr, fake, fake, fake, 16, 2, 64, nullptr).code(), ErrorCode::kInvalidArgument);
  const Status misaligned = attention.run(fake + 2, fake, fake, fake, 16, 2, 64, nullptr);
  EXPECT_EQ(misaligned.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(misaligned.message().find("16-byte"), std::string::npos) << misaligned.message();
  EXPECT_EQ(attention.set_external_workspace(nullptr, 128).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace orochi
