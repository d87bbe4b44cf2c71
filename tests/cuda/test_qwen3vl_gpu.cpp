// The Qwen3-VL text stack on the GPU (bf16) against transformers on the tiny golden model (its bf16
// run and its fp32 run), for text and 3-axis positions; the 50-layer 32B stack with random weights
// of the real shapes, timed; and the errors a caller can cause.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "backends/cuda/device.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "models/qwen3vl/text_model.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using testing::golden_tensor;

#define REQUIRE_GPU() \
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU"

constexpr int64_t kStop = 3;  // the golden's layers

std::string data_dir() { return testing::test_data_dir() + "/qwen3vl_text"; }

TEST(Qwen3VLGpu, TinyGoldenWithinTheBf16Band) {
  REQUIRE_GPU();
  Expected<qwen3vl::TextWeights> w = qwen3vl::load_text_weights(data_dir() + "/text_encoder", kStop);
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  ASSERT_TRUE(g.has_value());
  auto enc = qwen3vl::gpu::GpuTextEncoder::create(w->config, kStop, 0, 64);
  ASSERT_TRUE(enc.has_value()) << enc.status().to_string();
  ASSERT_TRUE((*enc)->upload(*w).is_ok());
  const Tensor ids = golden_tensor(*g, "in.input_ids");
  Expected<Tensor> out = (*enc)->encode_text(ids);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  const auto vs_bf16 = testing::compare(*out, golden_tensor(*g, "bf16.hidden_states.3"));
  const auto vs_f32 = testing::compare(*out, golden_tensor(*g, "hidden_states.3"));
  std::printf("Qwen3-VL tiny on GPU: vs transformers bf16 %s\n  vs transformers fp32 %s\n", vs_bf16.summary().c_str(),
              vs_f32.summary().c_str());
  EXPECT_TRUE(vs_bf16.same_nonfinite && vs_bf16.rel_l2 <= 1e-2) << vs_bf16.summary();
  EXPECT_TRUE(vs_f32.same_nonfinite && vs_f32.rel_l2 <= 2e-2) << vs_f32.summary();

  // 3-axis M-RoPE positions (golden [3, L] -> ours [L, 3]).
  const Tensor p = golden_tensor(*g, "in.position_ids_3d");
  const int64_t L = p.dim(1);
  Tensor positions = Tensor::empty({L, 3}, DType::kI64);
  for (int64_t i = 0; i < L; ++i)
    for (int a = 0; a < 3; ++a) positions.data<int64_t>()[i * 3 + a] = p.data<int64_t>()[a * L + i];
  Expected<Tensor> mrope = (*enc)->encode(ids, positions);
  ASSERT_TRUE(mrope.has_value()) << mrope.status().to_string();
  const auto vs_mrope = testing::compare(*mrope, golden_tensor(*g, "mrope.hidden_states.3"));
  std::printf("  3-axis positions vs transformers fp32 %s\n", vs_mrope.summary().c_str());
  EXPECT_TRUE(vs_mrope.same_nonfinite && vs_mrope.rel_l2 <= 2e-2) << vs_mrope.summary();

  // Deterministic, and a repeat needs no new plan.
  Expected<Tensor> again = (*enc)->encode_text(ids);
  ASSERT_TRUE(again.has_value());
  EXPECT_TENSOR_CLOSE(*again, *out, 0.0);
}

TEST(Qwen3VLGpu, RefusesWhatItWasNotPlannedFor) {
  REQUIRE_GPU();
  Expected<qwen3vl::TextWeights> w = qwen3vl::load_text_weights(data_dir() + "/text_encoder", kStop);
  ASSERT_TRUE(w.has_value());
  auto enc = qwen3vl::gpu::GpuTextEncoder::create(w->config, kStop, 0, 8);
  ASSERT_TRUE(enc.has_value());
  Tensor ids = Tensor::empty({9}, DType::kI64);
  for (int64_t i = 0; i < 9; ++i) ids.data<int64_t>()[i] = i;
  EXPECT_EQ((*enc)->encode_text(ids).status().code(), ErrorCode::kInternal);  // no weights yet
  ASSERT_TRUE((*enc)->upload(*w).is_ok());
  Expected<Tensor> too_long = (*enc)->encode_text(ids);
  ASSERT_FALSE(too_long.has_value());
  EXPECT_NE(too_long.status().message().find("at most 8"), std::string::npos) << too_long.status().to_string();
  ids.data<int64_t>()[2] = w->config.vocab_size;
  EXPECT_EQ((*enc)->encode_text(ids.slice(0, 0, 4).contiguous()).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(qwen3vl::gpu::GpuTextEncoder::create(w->config, 99, 0, 8).has_value());
}

// 256 prompt tokens through the 50 layers H3 reads, random weights of the 32B model's shapes.
TEST(Qwen3VLGpu, FiftyLayerStackTiming) {
  REQUIRE_GPU();
  const qwen3vl::TextConfig config = qwen3vl::TextConfig::qwen3vl_32b();
  constexpr int64_t kLayers = 50, kTokens = 256;
  auto enc = qwen3vl::gpu::GpuTextEncoder::create(config, kLayers, 0, kTokens);
  ASSERT_TRUE(enc.has_value()) << enc.status().to_string();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*enc)->init_random(7).is_ok());
  const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Tensor ids = Tensor::empty({kTokens}, DType::kI64);
  for (int64_t i = 0; i < kTokens; ++i) ids.data<int64_t>()[i] = (i * 7919) % config.vocab_size;
  std::vector<double> ms;
  Tensor out;
  for (int run = 0; run < 7; ++run) {
    const auto a = std::chrono::steady_clock::now();
    Expected<Tensor> o = (*enc)->encode_text(ids);  // includes the RoPE upload and the f32 download
    ASSERT_TRUE(o.has_value()) << o.status().to_string();
    if (run >= 2) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    out = *o;
  }
  std::sort(ms.begin(), ms.end());
  const float* p = out.data<float>();
  double sum2 = 0;
  for (int64_t i = 0; i < out.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(p[i])) << "non-finite output at " << i;
    sum2 += static_cast<double>(p[i]) * p[i];
  }
  std::printf("[qwen3vl-gpu] 50 layers x %lld tokens, bf16: median %.2f ms (min %.2f, max %.2f over %zu), weights "
              "%.2f GiB generated in %.2f s, activations %.1f MiB, out rms %.4f\n",
              static_cast<long long>(kTokens), ms[ms.size() / 2], ms.front(), ms.back(), ms.size(),
              (*enc)->weight_bytes() / double(1 << 30), init_s, (*enc)->activation_bytes() / double(1 << 20),
              std::sqrt(sum2 / static_cast<double>(out.numel())));
}

}  // namespace
}  // namespace orochi
