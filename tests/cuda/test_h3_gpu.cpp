// The H3 denoiser on the GPU (bf16 with f32 islands) against diffusers' fp32 golden within the
// bf16 band, and one step captured in a CUDA graph against the eager step.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "backends/cuda/device.h"
#include "models/h3/cuda/gpu_runner.h"
#include "support/compare.h"
#include "support/golden.h"
#include "h3_narrow_model.h"

namespace orochi {
namespace {

TEST(H3Gpu, TinyGoldenWithinTheBf16Band) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(testing::h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  Expected<h3::H3Weights> w = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  const h3::H3Inputs in = testing::golden_inputs(*golden);
  const Tensor timesteps = testing::golden_tensor(*golden, "in.timestep");
  const h3::gpu::RequestSize size{in.rows(), in.text.dim(0), in.video.dim(0), in.audio.dim(0), timesteps.numel()};
  auto runner = h3::gpu::H3GpuRunner::create(w->config, 0, size);
  ASSERT_TRUE(runner.has_value()) << runner.status().to_string();
  ASSERT_TRUE((*runner)->upload_weights(*w).is_ok());
  ASSERT_TRUE((*runner)->set_request(timesteps, in).is_ok());
  for (int run = 0; run < 2; ++run) {  // the second run reuses every cached plan and buffer
    ASSERT_TRUE((*runner)->forward().is_ok());
    Expected<h3::H3Outputs> out = (*runner)->outputs();
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    const auto cv = testing::compare(out->video, testing::golden_tensor(*golden, "out.video"));
    const auto ca = testing::compare(out->audio, testing::golden_tensor(*golden, "out.audio"));
    std::printf("H3 tiny on GPU vs diffusers fp32: video %s\n  audio %s\n", cv.summary().c_str(), ca.summary().c_str());
    EXPECT_TRUE(cv.same_nonfinite && cv.rel_l2 <= 2e-2) << cv.summary();
    EXPECT_TRUE(ca.same_nonfinite && ca.rel_l2 <= 2e-2) << ca.summary();
  }
}

// A denoiser step is capturable in a CUDA graph (issue 3): after a warm-up forward (which plans and
// tunes every GEMM), forward() enqueues only kernels and cuBLASLt matmuls on the runner's stream.
// The replayed graph gives the eager forward's bits, and after update_rows (new rows in the same
// buffers) the same graph computes the next step.
TEST(H3Gpu, AStepReplaysFromACudaGraph) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  const h3::H3Config c = testing::narrow_config();
  const testing::Request r = testing::narrow_request(c);
  auto created = h3::gpu::H3GpuRunner::create(c, 0, r.size);
  ASSERT_TRUE(created.has_value()) << created.status().to_string();
  h3::gpu::H3GpuRunner& runner = **created;
  ASSERT_TRUE(runner.init_random_weights(3).is_ok());
  ASSERT_TRUE(runner.set_request(r.timesteps, r.in).is_ok());
  ASSERT_TRUE(runner.forward().is_ok());  // warm-up
  Expected<h3::H3Outputs> eager = runner.outputs();
  ASSERT_TRUE(eager.has_value()) << eager.status().to_string();

  cudaStream_t stream = runner.stream();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status captured = runner.forward();
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(captured.is_ok()) << captured.to_string();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  std::printf("one narrow H3 forward: %zu graph nodes\n", nodes);

  auto same_bits = [](const Tensor& a, const Tensor& b) {
    return a.numel() == b.numel() && std::memcmp(a.raw_data(), b.raw_data(), a.numel() * sizeof(float)) == 0;
  };
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  Expected<h3::H3Outputs> replayed = runner.outputs();
  ASSERT_TRUE(replayed.has_value()) << replayed.status().to_string();
  EXPECT_TRUE(same_bits(replayed->video, eager->video) && same_bits(replayed->audio, eager->audio));

  // The next step: other video and audio rows.
  h3::H3Inputs next = r.in;
  for (Tensor* t : {&next.video, &next.audio}) {
    *t = t->clone();
    for (int64_t i = 0; i < t->numel(); ++i) t->data<float>()[i] = -0.5f * t->data<float>()[i] + 0.25f;
  }
  ASSERT_TRUE(runner.update_rows(next).is_ok());
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  Expected<h3::H3Outputs> step2_graph = runner.outputs();
  ASSERT_TRUE(runner.forward().is_ok());
  Expected<h3::H3Outputs> step2_eager = runner.outputs();
  ASSERT_TRUE(step2_graph.has_value() && step2_eager.has_value());
  EXPECT_TRUE(same_bits(step2_graph->video, step2_eager->video) && same_bits(step2_graph->audio, step2_eager->audio));
  EXPECT_FALSE(same_bits(step2_eager->video, eager->video));  // the new rows did reach the forward
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace orochi
