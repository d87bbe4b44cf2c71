// The shared DiT layers (src/layers/cuda/) on their own, with no model behind them: block
// streaming brings every streamed block's image into a slot, pass after pass (from pinned host
// RAM; from a peer GPU when there are two); the TP linear without a group is the plain linear,
// byte for byte. Inside a model they are tested through H3 (test_h3_gpu, test_h3_gpu_parallel,
// test_h3_gpu_streaming).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backends/cuda/gemm.h"
#include "backends/cuda/random_fill.h"
#include "layers/cuda/layer_context.h"
#include "layers/cuda/stage_timer.h"
#include "layers/cuda/streamed_blocks.h"
#include "layers/cuda/tp_linear.h"
#include "test_cuda_ops_support.h"

namespace orochi {
namespace {

using namespace cuda_test;

class SharedLayers : public GpuTest {};

// Block b's image: byte i is (b * 31 + i) mod 251, so blocks and offsets differ.
std::vector<unsigned char> image_of(int block, size_t bytes) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((block * 31 + i) % 251);
  return v;
}

// Six blocks, four streamed through two slots (they rotate), three passes: each acquired streamed
// block's slot holds its image; resident blocks get no slot.
void check_streaming(weights::WeightTier tier, int peer, cudaStream_t stream) {
  const size_t image = 4096;
  const std::vector<bool> streamed{true, false, true, true, false, true};
  const layers::gpu::BlockStreamingPlan plan{streamed, 2, tier, peer};
  auto made = layers::gpu::GpuStreamedBlocks::create(0, plan, image, stream, "test staging");
  ASSERT_TRUE(made.has_value()) << made.status().to_string();
  layers::gpu::GpuStreamedBlocks& blocks = **made;
  EXPECT_EQ(blocks.staging_bytes(), 2 * image);
  // Each streamed block is built at the staging base, then kept in the tier.
  for (int b = 0; b < static_cast<int>(streamed.size()); ++b) {
    if (!streamed[b]) continue;
    const std::vector<unsigned char> host = image_of(b, image);
    ASSERT_EQ(cudaMemcpyAsync(blocks.staging().base(), host.data(), image, cudaMemcpyHostToDevice, stream), cudaSuccess);
    const Status s = blocks.store(b, blocks.staging().base(), image);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  EXPECT_EQ(blocks.tier_bytes(), 4 * image);
  const char* slots = static_cast<const char*>(blocks.empty_slots().base());
  EXPECT_FALSE(blocks.started());
  ASSERT_TRUE(blocks.start().is_ok());
  ASSERT_TRUE(blocks.started());
  for (int pass = 0; pass < 3; ++pass) {
    ASSERT_TRUE(blocks.begin_pass().is_ok());
    for (int b = 0; b < static_cast<int>(streamed.size()); ++b) {
      Expected<int> slot = blocks.acquire(b);
      ASSERT_TRUE(slot.has_value()) << slot.status().to_string();
      if (!streamed[b]) {
        EXPECT_EQ(*slot, -1) << "block " << b;
      } else {
        ASSERT_GE(*slot, 0);
        ASSERT_LT(*slot, 2);
        // On the compute stream, after the copy acquire() ordered it behind.
        std::vector<unsigned char> got(image);
        ASSERT_EQ(cudaMemcpyAsync(got.data(), slots + *slot * image, image, cudaMemcpyDeviceToHost, stream), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        EXPECT_EQ(got, image_of(b, image)) << "block " << b << " pass " << pass;
      }
      ASSERT_TRUE(blocks.release(b).is_ok());
    }
  }
  ASSERT_NE(blocks.stats(), nullptr);
  EXPECT_GE(blocks.stats()->copies(), 4 * 3);  // more streamed blocks than slots: every pass copies each
}

TEST_F(SharedLayers, StreamedBlocksFromPinnedHost) { check_streaming(weights::WeightTier::kHost, -1, stream()); }

TEST_F(SharedLayers, StreamedBlocksFromPeerGpu) {
  int count = 0, can = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) GTEST_SKIP() << "needs two GPUs";
  if (cudaDeviceCanAccessPeer(&can, 0, 1) != cudaSuccess || !can) GTEST_SKIP() << "GPU 0 cannot reach GPU 1";
  check_streaming(weights::WeightTier::kPeer, 1, stream());
}

TEST_F(SharedLayers, TpLinearWithoutGroupIsTheLinear) {
  auto gemm = cuda::GemmRunner::create(0);
  ASSERT_TRUE(gemm.has_value()) << gemm.status().to_string();
  (*gemm)->set_autotune(false);  // the heuristic's pick: the same algorithm for both calls
  const int64_t M = 300, K = 256, N = 512;
  auto x = arena().tensor({M, K}, DType::kBF16), w = arena().tensor({N, K}, DType::kBF16);
  auto y_plain = arena().tensor({M, N}, DType::kBF16), y_layer = arena().tensor({M, N}, DType::kBF16);
  ASSERT_TRUE(x && w && y_plain && y_layer);
  ASSERT_TRUE(cuda::fill_normal(*x, 1, 0, 0.0f, 1.0f, stream()).is_ok());
  ASSERT_TRUE(cuda::fill_normal(*w, 1, 1, 0.0f, 0.05f, stream()).is_ok());
  ASSERT_TRUE((*gemm)->linear(*x, *w, nullptr, *y_plain, stream()).is_ok());  // [M, N]
  layers::gpu::StageTimer timer;  // off: records nothing
  const layers::gpu::LayerContext ctx{.stream = stream(), .gemm = gemm->get(), .timer = &timer, .comm_timer = &timer};
  const Status s = layers::gpu::tp_reduced_linear(ctx, nullptr, {*w, {}}, *x, *y_layer, "gemm");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  auto a = cuda::download(*y_plain, stream()), b = cuda::download(*y_layer, stream());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(std::memcmp(a->raw_data(), b->raw_data(), a->nbytes()), 0);
}

}  // namespace
}  // namespace orochi
