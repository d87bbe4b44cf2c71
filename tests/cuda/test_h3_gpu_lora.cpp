// LoRAs merged on the GPU (cuda::lora_merge, h3::gpu::merge_lora_on_gpu) against the host merge
// (h3::merge_lora): the op bit for bit on bf16 and f32 weights, and a narrow model whose LoRA is
// merged on the GPU (AdaLN projections, f32 islands and block linears) runs the forward of the same
// model merged on the host and uploaded, bit for bit.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/ops_lora.h"
#include "core/dtype.h"
#include "core/random.h"
#include "h3_narrow_model.h"
#include "models/h3/cuda/gpu_runner.h"
#include "models/h3/lora.h"

namespace orochi {
namespace {

Tensor normal(const Shape& shape, uint64_t stream, float stddev) {
  Tensor t = normal_tensor(shape, 0x10AA, stream);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= stddev;
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(H3GpuLora, MergeOpIsTheHostMergeBitForBit) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  auto arena = cuda::DeviceArena::create(0, 64 << 20, "test");
  ASSERT_TRUE(arena.has_value());
  struct Case {
    int64_t rows, cols, rank;
  };
  uint64_t stream = 1;
  for (const Case& c : {Case{37, 300, 5}, Case{8, 256, 1}, Case{129, 1001, 64}, Case{3, 5, 512}})
    for (DType dtype : {DType::kBF16, DType::kF32}) {
      // The host merge on a one-parameter "model": proj_in of a config shaped to the case.
      h3::H3Weights host;
      host.proj_in.weight = normal({c.rows, c.cols}, stream++, 0.5f).to(dtype);
      h3::H3Lora lora;
      lora.path = "case";
      lora.deltas.push_back({"proj_in.weight", "case", normal({c.rank, c.cols}, stream++, 0.3f),
                             normal({c.rows, c.rank}, stream++, 0.3f), 0.25f});
      const Tensor before = host.proj_in.weight;
      ASSERT_TRUE(h3::merge_lora(host, lora, 1.7f).is_ok());
      const size_t mark = (*arena)->mark();
      auto w = cuda::upload(before, **arena, dtype);
      auto up = cuda::upload(lora.deltas[0].up, **arena, DType::kF32);
      auto down = cuda::upload(lora.deltas[0].down, **arena, DType::kF32);
      ASSERT_TRUE(w && up && down);
      ASSERT_TRUE(cuda::lora_merge(*w, *up, *down, 1.7f * 0.25f, nullptr).is_ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const Tensor got = *cuda::download(*w);
      EXPECT_TRUE(same_bytes(got, host.proj_in.weight))
          << c.rows << "x" << c.cols << " rank " << c.rank << " " << dtype_name(dtype);
      (*arena)->reset(mark);
    }
}

// A LoRA over every kind of target the GPU weights have: block linears, an AdaLN projection (merged
// into each request's tables), norm_out's AdaLN, f32 islands and the context embedder.
h3::H3Lora narrow_lora(h3::H3Weights& host) {
  h3::H3Lora lora;
  lora.path = "narrow";
  uint64_t stream = 100;
  int64_t rank = 4;
  for (const std::string& name :
       {"transformer_blocks.0.attn.to_q.weight", "transformer_blocks.1.ff.net.0.proj.weight",
        "transformer_blocks.2.attn.to_out.0.weight", "transformer_blocks.2.adaln_proj.linear.weight",
        "norm_out.linear.weight", "proj_in.weight", "context_embedder.weight", "time_embedder.linear_1.weight"}) {
    for (auto& [param, t] : h3::linear_weights(host))
      if (param == name) {
        lora.deltas.push_back({name, name, normal({rank, t->dim(1)}, stream++, 0.2f),
                               normal({t->dim(0), rank}, stream++, 0.2f), 0.5f});
        rank = rank == 4 ? 8 : 4;
      }
  }
  return lora;
}

TEST(H3GpuLora, GpuMergedModelRunsTheHostMergedModel) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  const h3::H3Config c = testing::narrow_config();
  const testing::Request r = testing::narrow_request(c);
  // bf16 linears on the host, as the GPU path keeps a checkpoint's.
  h3::H3Weights base = h3::random_weights(c, 21);
  for (auto& [name, t] : h3::linear_weights(base))
    if (name.find("proj_in") == std::string::npos && name.find("time_embedder") == std::string::npos &&
        name.find("proj_out") == std::string::npos)
      *t = t->to(DType::kBF16);
  const h3::H3Lora lora = narrow_lora(base);
  ASSERT_EQ(lora.deltas.size(), 8u);
  h3::H3Weights merged = base;
  ASSERT_TRUE(h3::merge_lora(merged, lora, 0.9f).is_ok());
  h3::gpu::RunnerOptions options;
  options.kernels.gemm_timed_pick = false;  // both runners take cuBLASLt's first picks: same GEMMs
  auto run = [&](const h3::H3Weights& w, const h3::H3Lora* gpu_lora, h3::H3Outputs* before) -> h3::H3Outputs {
    auto runner = h3::gpu::H3GpuRunner::create(c, 0, r.size, {}, {}, options);
    EXPECT_TRUE(runner.has_value()) << runner.status().to_string();
    EXPECT_TRUE((*runner)->upload_weights(w).is_ok());
    if (gpu_lora) {
      EXPECT_TRUE((*runner)->set_request(r.timesteps, r.in).is_ok());
      EXPECT_TRUE((*runner)->forward().is_ok());
      *before = *(*runner)->outputs();
      const Status merged_status = (*runner)->merge_lora(*gpu_lora, 0.9f);
      EXPECT_TRUE(merged_status.is_ok()) << merged_status.to_string();
    }
    EXPECT_TRUE((*runner)->set_request(r.timesteps, r.in).is_ok());  // AdaLN tables with the LoRA
    EXPECT_TRUE((*runner)->forward().is_ok());
    return *(*runner)->outputs();
  };
  const h3::H3Outputs host_merged = run(merged, nullptr, nullptr);
  h3::H3Outputs unmerged;
  const h3::H3Outputs gpu_merged = run(base, &lora, &unmerged);
  EXPECT_TRUE(same_bytes(host_merged.video, gpu_merged.video));
  EXPECT_TRUE(same_bytes(host_merged.audio, gpu_merged.audio));
  EXPECT_FALSE(same_bytes(unmerged.video, gpu_merged.video)) << "the LoRA changed nothing";

  // Refused by name: a parameter the GPU weights do not hold.
  h3::H3Lora bad = lora;
  bad.deltas[0].param = "transformer_blocks.7.attn.to_q.weight";
  auto runner = h3::gpu::H3GpuRunner::create(c, 0, r.size, {}, {}, options);
  ASSERT_TRUE(runner.has_value());
  ASSERT_TRUE((*runner)->upload_weights(base).is_ok());
  const Status refused = (*runner)->merge_lora(bad, 1.0f);
  EXPECT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("transformer_blocks.7.attn.to_q.weight"), std::string::npos) << refused.to_string();
}

}  // namespace
}  // namespace orochi
