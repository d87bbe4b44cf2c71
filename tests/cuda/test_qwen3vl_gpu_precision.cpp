// The Qwen3-VL text stack on the GPU at conditioner-precision fp8 / int8 (issue 25): the quantized
// encoder (seven linears per layer as codes + per-channel scales, activations per token, the
// denoiser's QuantizedGemmRunner) against its CPU emulation (qwen3vl::emulate_quantization) on the
// tiny golden model, within a multiple of the emulation's own quantization error; random init ==
// upload of the same host weights; streamed quantized layers == resident ones bit for bit; the
// planner's layer bytes == the GPU layout's; a checkpoint write is refused. The first test needs
// no GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "backends/cuda/device.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "models/qwen3vl/random_weights.h"
#include "models/qwen3vl/text_model.h"
#include "planner/text_encoder_memory.h"
#include "qwen3vl_quantized_bounds.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi {
namespace {

using qwen3vl::gpu::GpuTextEncoder;
using qwen3vl::gpu::TextStreaming;

#define REQUIRE_GPU() \
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU"

constexpr int64_t kLayers = 3;  // the tiny golden model's
const Precision kQuantized[] = {Precision::kFp8, Precision::kInt8};

std::string data_dir() { return testing::test_data_dir() + "/qwen3vl_text"; }

qwen3vl::TextWeights tiny_weights() {
  Expected<qwen3vl::TextWeights> w = qwen3vl::load_text_weights(data_dir() + "/text_encoder", kLayers);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

Tensor prompt(int64_t L, int64_t vocab) {
  Tensor ids = Tensor::empty({L}, DType::kI64);
  for (int64_t i = 0; i < L; ++i) ids.data<int64_t>()[i] = (i * 7919 + 3) % vocab;
  return ids;
}

std::unique_ptr<GpuTextEncoder> encoder(const qwen3vl::TextConfig& c, Precision p, const TextStreaming& s = {}) {
  auto e = GpuTextEncoder::create(c, kLayers, 0, 64, s, p);
  OROCHI_CHECK(e.has_value(), e.status().to_string());
  return std::move(e).value();
}

Tensor run(GpuTextEncoder& e, const Tensor& ids) {
  Expected<Tensor> out = e.encode_text(ids);
  OROCHI_CHECK(out.has_value(), out.status().to_string());
  return std::move(out).value();
}

// The planner's text-encoder layer and the GPU layout (codes, scales, norms, each 256-aligned)
// are the same bytes at every precision; no GPU needed.
TEST(Qwen3VLGpuPrecision, PlannerLayerBytesAreTheGpuLayout) {
  const planner::ModelConfigs models = *planner::load_model_configs("h3");
  for (const Precision p : {Precision::kBf16, Precision::kFp8, Precision::kInt8}) {
    uint64_t planned = 0;
    for (const planner::WeightGroup& g : planner::text_encoder_weight_groups(models, false, p))
      if (g.name == "layer 0") planned = g.bytes;
    EXPECT_EQ(planned, qwen3vl::gpu::layer_image_bytes(models.text_encoder, p)) << precision_name(p);
  }
}

// The GPU's quantized stack vs the CPU emulation of it, in units of sigma, the emulation's own
// distance to f32 (its quantization error). Not bf16's band: on this tiny stack every bf16-level
// difference of a linear's input (the GPU holds the residual stream, norms, q/k/v, RoPE, attention
// and SwiGLU in bf16; the emulation in f32) flips codes by a whole e4m3 / int8 step and the flips
// feed every later linear, so the two forwards' quantization errors decorrelate within a layer.
// A CPU model of the GPU's bf16 activations with the same scheme lands 0.84-0.89 sigma (fp8) /
// 1.01-1.08 sigma (int8) from the emulation; the H200 measured 6.96e-2 = 0.91 sigma and 2.27e-2 =
// 1.03 sigma (an absolute 3e-2 would sit below fp8's own noise, 7.6e-2). The bound
// (qwen3vl_quantized_bounds.h; tests/test_qwen3vl_precision checks it on the CPU) is still
// exceeded by a wrong scale (10% on one linear: 1.4 / 4.5 sigma) or a scale of the wrong row.
// Second, the quantization must cost what the emulation's does: the GPU's distance to its own bf16
// forward within [0.85, 1.3] sigma (CPU model 0.99-1.04 fp8, 1.03-1.11 int8; H200 1.02 and 1.06):
// fewer quantized linears would be nearer the bf16 forward, coarser scales farther.
TEST(Qwen3VLGpuPrecision, QuantizedStackMatchesItsCpuEmulation) {
  REQUIRE_GPU();
  const qwen3vl::TextWeights host = tiny_weights();
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  ASSERT_TRUE(g.has_value());
  const Tensor ids = testing::golden_tensor(*g, "in.input_ids");
  Expected<Tensor> f32 = qwen3vl::encode_text(host, ids);
  ASSERT_TRUE(f32.has_value());
  auto bf16 = encoder(host.config, Precision::kBf16);
  ASSERT_TRUE(bf16->upload(host).is_ok());
  const Tensor gpu_bf16 = run(*bf16, ids);
  const testing::Comparison band = testing::compare(gpu_bf16, *f32);
  std::printf("tiny stack, GPU bf16 vs CPU f32: %s\n", band.summary().c_str());
  for (const Precision p : kQuantized) {
    SCOPED_TRACE(precision_name(p));
    qwen3vl::TextWeights emulated = host;
    qwen3vl::emulate_quantization(emulated, p);
    Expected<Tensor> cpu = qwen3vl::encode_text(emulated, ids);
    ASSERT_TRUE(cpu.has_value());
    auto e = encoder(host.config, p);
    EXPECT_EQ(e->precision(), p);
    ASSERT_TRUE(e->upload(host).is_ok());
    const Tensor gpu = run(*e, ids);
    const testing::Comparison vs_emulation = testing::compare(gpu, *cpu), vs_f32 = testing::compare(gpu, *f32),
                              vs_bf16 = testing::compare(gpu, gpu_bf16);
    std::printf("tiny stack, GPU %s vs CPU %s emulation: %s\n  vs CPU f32: %s\n  vs GPU bf16: %s\n",
                precision_name(p), precision_name(p), vs_emulation.summary().c_str(), vs_f32.summary().c_str(),
                vs_bf16.summary().c_str());
    const double sigma = testing::compare(*cpu, *f32).rel_l2;  // the emulation's quantization error
    const double bound = testing::qwen3vl_gpu_to_emulation_bound(p);
    std::printf("  in units of the emulation's error vs f32 (%.4g): to the emulation %.3f (bound %.2f), to GPU bf16 "
                "%.3f (bounds 0.85, 1.3)\n",
                sigma, vs_emulation.rel_l2 / sigma, bound, vs_bf16.rel_l2 / sigma);
    EXPECT_TRUE(vs_emulation.same_nonfinite) << vs_emulation.summary();
    EXPECT_LE(vs_emulation.rel_l2, bound * sigma) << vs_emulation.summary();
    EXPECT_GT(vs_bf16.rel_l2, 1e-4) << "the quantized encoder gave the bf16 output: are its linears quantized?";
    EXPECT_GE(vs_bf16.rel_l2, 0.85 * sigma) << "the GPU quantizes less than its emulation";
    EXPECT_LE(vs_bf16.rel_l2, 1.3 * sigma) << "the GPU quantizes more coarsely than its emulation";
    EXPECT_LT(e->weight_bytes(), bf16->weight_bytes());
    EXPECT_TENSOR_CLOSE(run(*e, ids), gpu, 0.0);  // deterministic
    EXPECT_EQ(e->write_checkpoint(::testing::TempDir() + "/qwen3vl_fp8_ckpt").code(), ErrorCode::kUnsupported);
  }
}

// init_random quantizes the same bf16 values the bf16 encoder holds: == uploading the host rules'
// weights (random_weights.h) at that precision. Streamed quantized layers (whole images of codes
// and scales through the slots) == resident ones, bit for bit.
TEST(Qwen3VLGpuPrecision, RandomInitAndStreamingAtEachPrecision) {
  REQUIRE_GPU();
  const qwen3vl::TextConfig c = tiny_weights().config;
  const Tensor ids = prompt(40, c.vocab_size);
  const qwen3vl::TextWeights host = qwen3vl::random_text_weights(c, kLayers, 11);
  for (const Precision p : kQuantized) {
    SCOPED_TRACE(precision_name(p));
    auto filled = encoder(c, p), uploaded = encoder(c, p);
    ASSERT_TRUE(filled->init_random(11).is_ok());
    ASSERT_TRUE(uploaded->upload(host).is_ok());
    const Tensor resident = run(*filled, ids);
    const testing::Comparison same = testing::compare(resident, run(*uploaded, ids));
    std::printf("%s: init_random vs upload(random_text_weights) %s\n", precision_name(p), same.summary().c_str());
    EXPECT_TRUE(same.same_nonfinite && same.rel_l2 <= 1e-5) << same.summary();
    for (int slots : {1, 2}) {
      auto streamed = encoder(c, p, TextStreaming{{false, true, true}, slots, weights::WeightTier::kHost, -1});
      ASSERT_TRUE(streamed->init_random(11).is_ok());
      EXPECT_TENSOR_CLOSE(run(*streamed, ids), resident, 0.0);
      EXPECT_GT(streamed->tier_bytes(), 0u);
    }
  }
}

}  // namespace
}  // namespace orochi
