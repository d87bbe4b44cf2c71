// Orochi's own Hopper attention kernel (cuda::flash_attention) against the CPU reference and
// against cuDNN on the same inputs; both MMA schedules; eager and lazy rescaling; graph capture;
// refused shapes; and an informative timing beside cuDNN at the H3 denoiser's sizes.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/attention_flash.h"
#include "backends/cuda/device.h"
#include "cuda/attention_test_support.h"
#include "support/compare.h"

namespace orochi {
namespace {

using cuda::AttentionShape;
using cuda::CudnnAttention;
using cuda::FlashAttentionOptions;
using namespace attention_test;  // NOLINT: the shared helpers of the attention tests

// Skips unless the current GPU can run the kernel (a Hopper, compute capability 9.0).
#define REQUIRE_HOPPER()                                                                       \
  do {                                                                                         \
    Expected<std::vector<cuda::DeviceInfo>> devices_ = cuda::list_devices();                   \
    if (!devices_) GTEST_SKIP() << devices_.status().to_string();                              \
    const std::string why_ = cuda::flash_attention_unsupported_reason(AttentionShape{1, 1, 1, 128}); \
    if (!why_.empty()) GTEST_SKIP() << why_;                                                   \
  } while (0)

struct Problem {
  AttentionShape shape;
  Inputs in;
  std::unique_ptr<DeviceBuffer> q, k, v, o;
  Problem(const AttentionShape& s, uint64_t seed) : Problem(s, make_inputs(s, seed)) {}
  Problem(const AttentionShape& s, Inputs inputs) : shape(s), in(std::move(inputs)) {
    q = upload_bf16(in.q);
    k = upload_bf16(in.k);
    v = upload_bf16(in.v);
    o = std::make_unique<DeviceBuffer>(static_cast<size_t>(s.s_q * s.heads * s.head_dim) * 2);
  }
  bool ready() const { return q->ptr && k->ptr && v->ptr && o->ptr; }
  Status run(cudaStream_t stream, const FlashAttentionOptions& options = {}) {
    cudaMemsetAsync(o->ptr, 0xFF, o->bytes, stream);  // bf16 0xFFFF is NaN: unwritten rows show up
    return cuda::flash_attention(q->ptr, k->ptr, v->ptr, o->ptr, shape, stream, options);
  }
  Tensor output() const { return download_f32(*o, {shape.s_q, shape.heads, shape.head_dim}); }
};

class FlashAttentionVsCpu : public ::testing::TestWithParam<AttentionShape> {};

// Every head for few heads, a spread of them for many; both schedules give the same bits.
TEST_P(FlashAttentionVsCpu, MatchesCpuReferenceAndCudnn) {
  REQUIRE_HOPPER();
  const AttentionShape s = GetParam();
  Problem p(s, 2000 + static_cast<uint64_t>(s.s_q));
  ASSERT_TRUE(p.ready());
  ASSERT_OK(p.run(nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const Tensor gpu = p.output();
  EXPECT_EQ(count_nonfinite(gpu), 0) << "rows or heads left unwritten (NaN poison) or overflowed";
  const std::vector<int64_t> heads = heads_to_check(s.heads);
  const Tensor expected = cpu_reference(p.in, heads);
  const testing::Comparison c = testing::compare(select_heads(gpu, heads), expected);
  std::printf("%s vs CPU: %s\n", s.to_string().c_str(), c.summary().c_str());
  EXPECT_TRUE(c.same_nonfinite) << c.summary();
  EXPECT_LE(c.rel_l2, 1e-2) << c.summary();

  ASSERT_OK(p.run(nullptr, FlashAttentionOptions{.pingpong = false}));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const testing::Comparison schedules = testing::compare(p.output(), gpu);
  EXPECT_TRUE(schedules.same_nonfinite && schedules.max_abs == 0) << "ping-pong changed the result: "
                                                                  << schedules.summary();
  // 128- and 176-row key tiles: other tile boundaries (masking, rescaling), the same attention.
  for (int kv_block : {128, 176}) {
    for (bool pingpong : {true, false}) {
      ASSERT_OK(p.run(nullptr, FlashAttentionOptions{.pingpong = pingpong, .kv_block = kv_block}));
      ASSERT_CUDA(cudaDeviceSynchronize());
      const Tensor other = p.output();
      const testing::Comparison w = testing::compare(select_heads(other, heads), expected);
      std::printf("%s kv_block %d%s vs CPU: %s\n", s.to_string().c_str(), kv_block, pingpong ? "" : " plain",
                  w.summary().c_str());
      EXPECT_TRUE(w.same_nonfinite) << w.summary();
      EXPECT_LE(w.rel_l2, 1e-2) << w.summary();
    }
  }

  // Eager rescaling (the exact running max; the default is lazy: it moves only by more than 2^8):
  // the same softmax, other roundings of P. Lazy and eager outputs differ by about two bf16 output
  // roundings (2.5-2.7e-3 measured on an H200), hence 4e-3 between them; both stay near 2e-3 of the CPU.
  Tensor eager;
  for (bool pingpong : {true, false}) {
    ASSERT_OK(p.run(nullptr, FlashAttentionOptions{.pingpong = pingpong, .lazy_rescale = false}));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const Tensor got = p.output();
    const testing::Comparison e = testing::compare(select_heads(got, heads), expected);
    const testing::Comparison vs_lazy = testing::compare(got, gpu);
    std::printf("%s eager rescale%s vs CPU: %s; vs lazy %s\n", s.to_string().c_str(), pingpong ? "" : " plain",
                e.summary().c_str(), vs_lazy.summary().c_str());
    EXPECT_TRUE(e.same_nonfinite) << e.summary();
    EXPECT_LE(e.rel_l2, 1e-2) << e.summary();
    EXPECT_LE(vs_lazy.rel_l2, 4e-3) << vs_lazy.summary();
    if (pingpong) {
      eager = got;
    } else {
      const testing::Comparison same = testing::compare(got, eager);
      EXPECT_TRUE(same.same_nonfinite && same.max_abs == 0) << "ping-pong changed the eager result: " << same.summary();
    }
  }

  if (CudnnAttention::compiled_with_frontend()) {
    CudnnAttention cudnn(nullptr);
    ASSERT_OK(cudnn.run(p.q->ptr, p.k->ptr, p.v->ptr, p.o->ptr, s, nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const testing::Comparison vs = testing::compare(gpu, p.output());
    std::printf("%s vs cuDNN: %s\n", s.to_string().c_str(), vs.summary().c_str());
    EXPECT_LE(vs.rel_l2, 1e-2) << vs.summary();
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashAttentionVsCpu,
                         ::testing::Values(AttentionShape{1, 1, 1, 128}, AttentionShape{31, 31, 2, 128},
                                           AttentionShape{128, 128, 2, 128}, AttentionShape{129, 257, 3, 128},
                                           AttentionShape{1000, 1000, 4, 128}, AttentionShape{2053, 2053, 3, 128},
                                           AttentionShape{4099, 4099, 56, 128},
                                           AttentionShape{100, 77, 2, 128}),  // cross-attention lengths
                         [](const ::testing::TestParamInfo<AttentionShape>& info) {
                           const AttentionShape& s = info.param;
                           return "Sq" + std::to_string(s.s_q) + "_Skv" + std::to_string(s.s_kv) + "_h" +
                                  std::to_string(s.heads);
                         });

// A last wave at most half full is split over the idle SMs: 2053 rows x 8 heads = 136 units of 128
// query rows; pretending 132 SMs leaves 4 (6 slices of 2 key tiles each), 100 SMs leaves 36 (2
// slices). Same attention as unsplit (other rounding of P), against the CPU too.
TEST(FlashAttention, SplitsASparseLastWave) {
  REQUIRE_HOPPER();
  const AttentionShape s{2053, 2053, 8, 128};
  Problem p(s, 77);
  ASSERT_TRUE(p.ready());
  ASSERT_OK(p.run(nullptr, FlashAttentionOptions{.split_tail = false}));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const Tensor whole = p.output();
  const std::vector<int64_t> heads = {0, 7};  // head 7 holds the last units
  const Tensor expected = cpu_reference(p.in, heads);
  for (int sms : {132, 100}) {
    Expected<size_t> bytes = cuda::flash_attention_workspace_bytes(sms);
    ASSERT_TRUE(bytes.has_value()) << bytes.status().to_string();
    DeviceBuffer workspace(*bytes);
    ASSERT_TRUE(workspace.ptr);
    ASSERT_OK(p.run(nullptr, FlashAttentionOptions{.workspace = workspace.ptr, .workspace_bytes = *bytes, .sm_count = sms}));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const Tensor split = p.output();
    const testing::Comparison vs_whole = testing::compare(split, whole);
    const testing::Comparison vs_cpu = testing::compare(select_heads(split, heads), expected);
    std::printf("split last wave (%d SMs): vs unsplit %s; vs CPU %s\n", sms, vs_whole.summary().c_str(),
                vs_cpu.summary().c_str());
    EXPECT_TRUE(vs_whole.same_nonfinite) << vs_whole.summary();  // every row written, none NaN
    EXPECT_GT(vs_whole.max_abs, 0) << "the split path did not run";
    EXPECT_LE(vs_whole.rel_l2, 4e-3) << vs_whole.summary();  // lazy: each slice has its own stale max
    EXPECT_LE(vs_cpu.rel_l2, 1e-2) << vs_cpu.summary();
    // Too small a workspace: no split, the same bits as unsplit.
    ASSERT_OK(p.run(nullptr, FlashAttentionOptions{.workspace = workspace.ptr, .workspace_bytes = 1024, .sm_count = sms}));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const testing::Comparison small = testing::compare(p.output(), whole);
    EXPECT_TRUE(small.same_nonfinite && small.max_abs == 0) << small.summary();
  }
}

// Keys 700-704 scaled by 8 give scores far above the first tiles' (more than 2^8 in exp2 terms),
// so lazy rescaling must move the max and rescale the output there; before and after, it keeps a
// stale max. Both modes against the CPU, and against each other.
TEST(FlashAttention, LazyRescaleFollowsAMaxThatJumps) {
  REQUIRE_HOPPER();
  const AttentionShape s{300, 1200, 2, 128};
  Inputs in = make_inputs(s, 91);
  float* k = in.k.data<float>();
  for (int64_t i = 700 * s.heads * s.head_dim; i < 705 * s.heads * s.head_dim; ++i) k[i] *= 8.f;  // exact in bf16
  Problem p(s, std::move(in));
  ASSERT_TRUE(p.ready());
  const std::vector<int64_t> heads = {0, 1};
  const Tensor expected = cpu_reference(p.in, heads);
  Tensor eager;
  for (bool lazy : {false, true}) {
    ASSERT_OK(p.run(nullptr, FlashAttentionOptions{.lazy_rescale = lazy}));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const Tensor got = select_heads(p.output(), heads);
    const testing::Comparison c = testing::compare(got, expected);
    std::printf("jumping max, %s rescale vs CPU: %s\n", lazy ? "lazy" : "eager", c.summary().c_str());
    EXPECT_TRUE(c.same_nonfinite) << c.summary();
    EXPECT_LE(c.rel_l2, 1e-2) << c.summary();
    if (!lazy) eager = got;
    else EXPECT_LE(testing::compare(got, eager).rel_l2, 2e-3);
  }
}

TEST(FlashAttention, DeterministicAndCapturableInACudaGraph) {
  REQUIRE_HOPPER();
  Problem p(AttentionShape{515, 515, 8, 128}, 11);
  ASSERT_TRUE(p.ready());
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ASSERT_OK(p.run(stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  const Tensor eager = p.output();

  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status captured = p.run(stream);
  cudaGraph_t graph = nullptr;
  ASSERT_CUDA(cudaStreamEndCapture(stream, &graph));
  ASSERT_TRUE(captured.is_ok()) << captured.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  ASSERT_CUDA(cudaMemsetAsync(p.o->ptr, 0xFF, p.o->bytes, stream));
  ASSERT_CUDA(cudaGraphLaunch(exec, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  const testing::Comparison c = testing::compare(p.output(), eager);
  EXPECT_TRUE(c.same_nonfinite && c.max_abs == 0) << "graph replay differs from the eager run: " << c.summary();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(FlashAttention, RefusesShapesItWasNotBuiltFor) {
  REQUIRE_HOPPER();
  DeviceBuffer b(1 << 16);
  ASSERT_TRUE(b.ptr);
  for (const AttentionShape& s : {AttentionShape{8, 8, 2, 64}, AttentionShape{8, 8, 2, 128, DType::kF16},
                                  AttentionShape{8, 8, 4, 128, DType::kBF16, 2}, AttentionShape{8, 8, 2, 128, DType::kBF16, 0, true},
                                  AttentionShape{0, 8, 2, 128}}) {
    const Status st = cuda::flash_attention(b.ptr, b.ptr, b.ptr, b.ptr, s, nullptr);
    EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << s.to_string() << ": " << st.to_string();
    EXPECT_NE(st.message().find("cuDNN"), std::string::npos) << st.message();  // says what to use instead
  }
  const AttentionShape ok{8, 8, 2, 128};
  EXPECT_EQ(cuda::flash_attention(static_cast<char*>(b.ptr) + 2, b.ptr, b.ptr, b.ptr, ok, nullptr).code(),
            ErrorCode::kInvalidArgument);  // misaligned q
  EXPECT_EQ(cuda::flash_attention(b.ptr, b.ptr, b.ptr, b.ptr, ok, nullptr, FlashAttentionOptions{.kv_block = 64}).code(),
            ErrorCode::kInvalidArgument);
}

// Informative on speed (prints, never fails on it); the outputs are spot-checked in double.
TEST(FlashAttention, TimingInformative) {
  REQUIRE_HOPPER();
  // H3 at 832x480 and 1344x768 on one GPU, and one SP2 rank's 28 heads at 1344x768.
  for_each_timed_shape({{15100, 56}, {37966, 56}, {37966, 28}}, [&](const TimedShape& c, cudaStream_t stream,
                                                                    DeviceBuffer& q, DeviceBuffer& k, DeviceBuffer& v,
                                                                    DeviceBuffer& o, double flop) {
    const AttentionShape shape{c.S, c.S, c.heads, 128};
    const std::vector<uint16_t> hq = download_bits(q), hk = download_bits(k), hv = download_bits(v);
    CudnnAttention cudnn(stream);
    const bool have_cudnn = CudnnAttention::compiled_with_frontend() && cudnn.prepare(shape).is_ok();
    struct Candidate {
      const char* name;
      bool cudnn;
      FlashAttentionOptions flash;
    };
    Expected<size_t> ws_bytes = cuda::flash_attention_workspace_bytes();
    ASSERT_TRUE(ws_bytes.has_value()) << ws_bytes.status().to_string();
    DeviceBuffer ws(*ws_bytes);
    ASSERT_TRUE(ws.ptr);
    const FlashAttentionOptions lazy{.workspace = ws.ptr, .workspace_bytes = *ws_bytes};  // the defaults
    FlashAttentionOptions eager = lazy, lazy176 = lazy;
    eager.lazy_rescale = false;
    lazy176.kv_block = 176;
    for (const Candidate& cand : {Candidate{"cudnn", true, {}}, Candidate{"flash 128 pp", false, {true, 128}},
                                  Candidate{"flash 176 pp", false, {true, 176}},
                                  Candidate{"flash 192 pp", false, {true, 192}},
                                  Candidate{"flash 192 plain", false, {false, 192}},
                                  Candidate{"flash 176 split lazy", false, lazy176},
                                  Candidate{"flash split eager", false, eager},
                                  Candidate{"flash split lazy", false, lazy}}) {
      if (cand.cudnn && !have_cudnn) continue;
      auto run = [&]() -> Status {
        if (cand.cudnn) return cudnn.run(q.ptr, k.ptr, v.ptr, o.ptr, shape, stream);
        return cuda::flash_attention(q.ptr, k.ptr, v.ptr, o.ptr, shape, stream, cand.flash);
      };
      Expected<CallTimes> t = time_calls(run, stream);
      ASSERT_TRUE(t.has_value()) << cand.name << ": " << t.status().to_string();
      const double rel = spot_check(hq, hk, hv, download_bits(o), c.S, c.heads, 128);
      std::printf("[flash-timing] S=%ld heads=%ld %-18s median %.3f ms (min %.3f, max %.3f) = %.1f TFLOP/s, "
                  "spot check rel_l2 %.2e\n",
                  static_cast<long>(c.S), static_cast<long>(c.heads), cand.name, t->median_ms, t->min_ms, t->max_ms,
                  flop / (t->median_ms * 1e-3) / 1e12, rel);
      EXPECT_LE(rel, 1e-2) << cand.name;
    }
  });
}

}  // namespace
}  // namespace orochi
