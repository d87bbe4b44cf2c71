// The shared Ulysses layer (layers/cuda/ulysses.h) across two GPUs with no model behind it: q, k
// and v come from plain linears (the QkvProjection a family supplies; here no norm and no RoPE),
// are exchanged by either scheme, attended over the gathered heads and projected out; each rank
// ends with its rows of the one-GPU result. The row shares are uneven, as a weighted SP split
// makes them. Needs two GPUs (skips otherwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/random_fill.h"
#include "dist/nccl/nccl_comm.h"
#include "layers/cuda/attention.h"
#include "layers/cuda/comm_overlap.h"
#include "layers/cuda/layer_context.h"
#include "layers/cuda/linear.h"
#include "layers/cuda/stage_timer.h"
#include "layers/cuda/ulysses.h"

namespace orochi {
namespace {

using layers::gpu::GpuLinear;

constexpr int kRanks = 2;
constexpr int64_t S = 300, H = 256, kHeads = 4, kHeadDim = 128;  // inner 512, C = 256 per rank
constexpr int64_t kInner = kHeads * kHeadDim, C = kInner / kRanks;
const std::vector<dist::Range> kShares{{0, 130}, {130, S}};

// One GPU's resources, as a model's runner would own them.
struct Gpu {
  int device = 0;
  cudaStream_t stream = nullptr, comm = nullptr;  // compute; the group's (a parallel context's in a run)
  std::unique_ptr<layers::gpu::CommOverlap> overlap;
  std::shared_ptr<cuda::DeviceArena> arena;
  std::unique_ptr<cuda::GemmRunner> gemm;
  layers::gpu::AttentionRunner attention{/*flash=*/false, {}};  // cuDNN on every shape
  layers::gpu::StageTimer timer, comm_timer;
  GpuLinear wq, wk, wv, wout;  // [inner, H] x3, [H, inner]
  Tensor x;                    // [S, H], the same on every GPU

  layers::gpu::LayerContext ctx() {
    return {.stream = stream, .gemm = gemm.get(), .attention = &attention, .overlap = overlap.get(), .timer = &timer,
            .comm_timer = &comm_timer};
  }
  Tensor tensor(const Shape& shape) {
    auto t = arena->tensor(shape, DType::kBF16);
    EXPECT_TRUE(t.has_value()) << t.status().to_string();
    return t.has_value() ? *t : Tensor();
  }
  ~Gpu() {
    if (!stream) return;
    cudaSetDevice(device);
    cudaStreamSynchronize(stream);
    attention.destroy();
    gemm.reset();
    overlap.reset();
    if (comm) cudaStreamDestroy(comm);
    cudaStreamDestroy(stream);
  }
};

// Relative L2 error of rows [begin, end) of `ref` [S, H] against `got` [end - begin, H].
double rel_l2(const Tensor& ref, const dist::Range& rows, const Tensor& got) {
  const Tensor r = ref.to(DType::kF32), g = got.to(DType::kF32);
  double num = 0, den = 0;
  for (int64_t i = 0; i < rows.size() * H; ++i) {
    const double a = r.data<float>()[rows.begin * H + i], b = g.data<float>()[i];
    num += (a - b) * (a - b);
    den += a * a;
  }
  return std::sqrt(num / den);
}

class UlyssesLayer : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    auto devices = cuda::list_devices();
    if (!devices || devices->size() < kRanks) GTEST_SKIP() << "needs " << kRanks << " GPUs";
    for (int d = 0; d < kRanks; ++d) {
      auto g = std::make_unique<Gpu>();
      g->device = d;
      ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
      ASSERT_EQ(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), cudaSuccess);
      ASSERT_EQ(cudaStreamCreateWithFlags(&g->comm, cudaStreamNonBlocking), cudaSuccess);
      auto overlap = layers::gpu::CommOverlap::create(g->stream, g->comm);
      ASSERT_TRUE(overlap.has_value()) << overlap.status().to_string();
      g->overlap = std::move(*overlap);
      auto arena = cuda::DeviceArena::create(d, size_t{256} << 20, "ulysses test");
      ASSERT_TRUE(arena.has_value()) << arena.status().to_string();
      g->arena = *arena;
      auto gemm = cuda::GemmRunner::create(d);
      ASSERT_TRUE(gemm.has_value()) << gemm.status().to_string();
      g->gemm = std::move(*gemm);
      g->gemm->set_autotune(false);
      g->attention.reset(g->stream);
      std::vector<cuda::AttentionShape> shapes{{.s_q = S, .s_kv = S, .heads = kHeads, .head_dim = kHeadDim},
                                               {.s_q = S, .s_kv = S, .heads = kHeads / kRanks, .head_dim = kHeadDim}};
      for (const dist::Range& r : kShares)
        shapes.push_back({.s_q = r.size(), .s_kv = S, .heads = kHeads / kRanks, .head_dim = kHeadDim});
      auto ws_bytes = g->attention.workspace_bytes(shapes);
      ASSERT_TRUE(ws_bytes.has_value()) << ws_bytes.status().to_string();
      auto ws = g->arena->allocate(std::max<size_t>(*ws_bytes, 256));
      ASSERT_TRUE(ws.has_value());
      ASSERT_TRUE(g->attention.set_workspace(*ws, *ws_bytes).is_ok());
      // The same draws on every GPU (counter-based RNG): one model, one input.
      int id = 0;
      for (GpuLinear* l : {&g->wq, &g->wk, &g->wv}) {
        l->weight = g->tensor({kInner, H});
        ASSERT_TRUE(cuda::fill_normal(l->weight, 5, id++, 0.0f, 1.0f / std::sqrt(float(H)), g->stream).is_ok());
      }
      g->wout.weight = g->tensor({H, kInner});
      ASSERT_TRUE(cuda::fill_normal(g->wout.weight, 5, id++, 0.0f, 1.0f / std::sqrt(float(kInner)), g->stream).is_ok());
      g->x = g->tensor({S, H});
      ASSERT_TRUE(cuda::fill_normal(g->x, 5, id++, 0.0f, 1.0f, g->stream).is_ok());
      gpus_.push_back(std::move(g));
    }
  }

  // out [S, H] on GPU 0 without SP: every row, every head.
  Tensor reference() {
    Gpu& g = *gpus_[0];
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    const layers::gpu::LayerContext ctx = g.ctx();
    const Tensor q = g.tensor({S, kInner}), k = g.tensor({S, kInner}), v = g.tensor({S, kInner});
    const Tensor o = g.tensor({S, kInner}), out = g.tensor({S, H});
    EXPECT_TRUE(layers::gpu::linear(ctx, g.wq, g.x, q).is_ok());
    EXPECT_TRUE(layers::gpu::linear(ctx, g.wk, g.x, k).is_ok());
    EXPECT_TRUE(layers::gpu::linear(ctx, g.wv, g.x, v).is_ok());
    EXPECT_TRUE(g.attention.attend(q.raw_data(), k.raw_data(), v.raw_data(), o.raw_data(),
                                   {.s_q = S, .s_kv = S, .heads = kHeads, .head_dim = kHeadDim}).is_ok());
    EXPECT_TRUE(layers::gpu::linear(ctx, g.wout, o, out).is_ok());
    auto host = cuda::download(out, g.stream);
    EXPECT_TRUE(host.has_value());
    return host.has_value() ? *host : Tensor();
  }

  std::vector<std::unique_ptr<Gpu>> gpus_;
};

TEST_P(UlyssesLayer, EachRankGetsItsRowsOfTheOneGpuResult) {
  const bool gather_rows = GetParam();
  const Tensor ref = reference();
  ASSERT_TRUE(ref.defined());
  auto group = dist::NcclGroup::create({0, 1}, {gpus_[0]->overlap->stream(), gpus_[1]->overlap->stream()});
  ASSERT_TRUE(group.has_value()) << group.status().to_string();
  std::vector<std::unique_ptr<dist::Comm>> comms;
  for (int r = 0; r < kRanks; ++r) comms.push_back((*group)->member(r));
  std::vector<Tensor> split(kRanks), one_call(kRanks);  // host [R, H] per rank, by each attention
  auto rank_body = [&](int r) {
    Gpu& g = *gpus_[r];
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    const dist::Range rows = kShares[r];
    const int64_t R = rows.size();
    const layers::gpu::LayerContext ctx = g.ctx();
    const layers::gpu::UlyssesShape shape{.rank = r, .size = kRanks, .rows = rows, .shares = kShares, .total_rows = S,
                                          .heads = kHeads / kRanks, .head_dim = kHeadDim};
    const layers::gpu::UlyssesBuffers b{.q = g.tensor({kRanks * R, C}), .k = g.tensor({kRanks * R, C}),
                                        .v = g.tensor({kRanks * R, C}), .qa = g.tensor({S, C}), .ka = g.tensor({S, C}),
                                        .va = g.tensor({S, C}), .oa = g.tensor({S, C}), .o = g.tensor({R, kRanks * C}),
                                        .xa = g.tensor({S - R, H})};
    layers::gpu::UlyssesExchange ulysses(ctx, *comms[r], shape, b);
    const layers::gpu::QkvProjection project = [&](const GpuLinear (&w)[3], const Tensor& x, const Tensor (&out)[3],
                                                   int64_t) -> Status {
      for (int i = 0; i < 3; ++i) OROCHI_RETURN_IF_ERROR(layers::gpu::linear(ctx, w[i], x, out[i]));
      return Status::ok();
    };
    const GpuLinear w[] = {g.wq, g.wk, g.wv};
    const Tensor x = g.x.slice(0, rows.begin, rows.end);  // [R, H], this rank's rows
    Status s = gather_rows ? ulysses.qkv_by_gathered_rows(w, x, project) : ulysses.qkv_by_heads(w, x, project);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    // Attention per share into o, then the out-projection; then again in one call with the
    // out-projection split by heads (qa/ka/va are still there).
    const Tensor out_split = g.tensor({R, H}), out_one = g.tensor({R, H});
    ASSERT_TRUE(ulysses.attention().is_ok());
    ASSERT_TRUE(layers::gpu::linear(ctx, g.wout, b.o, out_split).is_ok());
    ASSERT_TRUE(ulysses.attention_out(g.wout, out_one).is_ok());
    ASSERT_TRUE(comms[r]->synchronize().is_ok());
    auto a = cuda::download(out_split, g.stream), c = cuda::download(out_one, g.stream);
    ASSERT_TRUE(a.has_value() && c.has_value());
    split[r] = *a;
    one_call[r] = *c;
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rank_body, r);
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(split[r].defined() && one_call[r].defined()) << "rank " << r;
    // bf16 GEMMs of other shapes (a head chunk, a row share) may round a few values differently.
    EXPECT_LT(rel_l2(ref, kShares[r], split[r]), 1e-2) << "rank " << r;
    EXPECT_LT(rel_l2(ref, kShares[r], one_call[r]), 1e-2) << "rank " << r;
  }
  comms.clear();
}

INSTANTIATE_TEST_SUITE_P(Schemes, UlyssesLayer, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "GatheredRows" : "Heads"; });

}  // namespace
}  // namespace orochi
