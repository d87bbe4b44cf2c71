// The Qwen3-VL conditioner at --set conditioner-precision=fp8 / int8 (issue 25), on the CPU:
//  - the emulated quantized text stack (qwen3vl::emulate_quantization: every decoder linear as
//    core's emulated_quantized_linear, what the GPU encoder computes) against the f32 forward on
//    the tiny golden model: its distance printed and bounded, and non-zero (the quantization acts);
//  - the planner's text-encoder phase at each precision (codes + per-channel scales for the seven
//    linears; fewer layers streamed on a 24 GiB GPU);
//  - the switch: parsed, refused for fp8 below compute capability 8.9 and on the CPU engine.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/quantize.h"
#include "engine/engine.h"
#include "engine/gpu_capability.h"
#include "engine/run_switches.h"
#include "models/qwen3vl/text_model.h"
#include "planner/plan_memory.h"
#include "planner/text_encoder_memory.h"
#include "qwen3vl_quantized_bounds.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"
#include "support/planner_inputs.h"

namespace orochi {
namespace {

constexpr int64_t kStop = 3;  // the tiny golden's layers

std::string data_dir() { return testing::test_data_dir() + "/qwen3vl_text"; }

qwen3vl::TextWeights tiny_weights() {
  Expected<qwen3vl::TextWeights> w = qwen3vl::load_text_weights(data_dir() + "/text_encoder", kStop);
  OROCHI_CHECK(w.has_value(), w.status().to_string());
  return std::move(w).value();
}

Tensor golden_ids() {
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/golden.safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return testing::golden_tensor(*g, "in.input_ids");
}

Tensor encoded(const qwen3vl::TextWeights& w, const Tensor& ids) {
  Expected<Tensor> out = qwen3vl::encode_text(w, ids);
  OROCHI_CHECK(out.has_value(), out.status().to_string());
  return std::move(out).value();
}

// The emulated quantized stack vs the f32 one: each linear loses its operands' quantization error
// (e4m3's 3 mantissa bits; int8's 127 steps of each row's largest value), a few percent on this
// tiny model (hidden 64: dot products of 64-128 terms average little of it away), compounded over
// 7 linears a layer and 3 layers. Measured: fp8 7.6e-2, int8 2.2e-2 (cosine 0.9971 / 0.9998), the
// ~3.5x of the H3 tiny model's; the 2e-2 output bar is for the full-size stack, measured on
// the device (scripts/device/compare_qwen3vl_presentation.sh with PRECISIONS).
TEST(Qwen3VLPrecision, EmulatedQuantizedStackStaysNearTheF32Forward) {
  const qwen3vl::TextWeights f32 = tiny_weights();
  const Tensor ids = golden_ids();
  const Tensor reference = encoded(f32, ids);  // [L, hidden]
  double rel[2] = {0, 0};
  const Precision precisions[2] = {Precision::kFp8, Precision::kInt8};
  for (int i = 0; i < 2; ++i) {
    qwen3vl::TextWeights q = f32;  // views of the same checkpoint: only the flag differs
    qwen3vl::emulate_quantization(q, precisions[i]);
    EXPECT_EQ(q.emulated_codes, precision_weight_dtype(precisions[i]));
    const testing::Comparison c = testing::compare(encoded(q, ids), reference);
    std::printf("tiny Qwen3-VL text stack (%lld layers), %s emulated vs f32: %s\n", static_cast<long long>(kStop),
                precision_name(precisions[i]), c.summary().c_str());
    EXPECT_TRUE(c.same_nonfinite);
    rel[i] = c.rel_l2;
  }
  EXPECT_GT(rel[0], 1e-4) << "fp8 emulation changed nothing: is the quantized path taken?";
  EXPECT_GT(rel[1], 1e-5) << "int8 emulation changed nothing: is the quantized path taken?";
  EXPECT_LT(rel[0], 1.5e-1);
  EXPECT_LT(rel[1], 5e-2);
  EXPECT_LT(rel[1], rel[0]);  // 127 levels per sign beat e4m3's 3 mantissa bits at these magnitudes

  qwen3vl::TextWeights back = f32;
  qwen3vl::emulate_quantization(back, Precision::kFp8);
  qwen3vl::emulate_quantization(back, Precision::kBf16);  // bf16: the f32 reference again
  EXPECT_TENSOR_CLOSE(encoded(back, ids), reference, 0.0);
}

// One linear of the stack: the emulation is core's quantized linear on bf16-rounded operands, the
// GPU's contract (tests/cuda/test_qwen3vl_gpu_precision checks the GPU against it).
TEST(Qwen3VLPrecision, EmulatedLinearIsCoresQuantizedLinear) {
  const qwen3vl::TextWeights w = tiny_weights();
  const Tensor& weight = w.layers[0].q_proj;                                        // [q_dim, hidden]
  Tensor x = Tensor::empty({5, w.config.hidden_size}, DType::kF32);                   // [5, hidden]
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.37f * static_cast<float>((i * 7919) % 23) - 4.0f;
  for (const Precision p : {Precision::kFp8, Precision::kInt8}) {
    const DType codes = precision_weight_dtype(p);
    const Tensor y = emulated_quantized_linear(x, weight, nullptr, codes);  // [5, q_dim]
    const Tensor expected = quantized_linear(quantize_rows(x.to(DType::kBF16), codes),
                                             quantize_rows(weight.to(DType::kBF16), codes), nullptr);
    EXPECT_TENSOR_CLOSE(y, expected, 0.0);
  }
}

// f32 copy of t times `factor`.
Tensor scaled(const Tensor& t, float factor) {
  Tensor out = t.to(DType::kF32).contiguous().clone();
  for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] *= factor;
  return out;
}

// The GPU test's bound (qwen3vl_quantized_bounds.h: the GPU within c x sigma of the emulation,
// sigma the emulation's distance to f32) on the CPU, where both sides can be made on purpose:
//  - a correct implementation that differs only at bf16's level passes: the emulation on the
//    embedding table rounded to bf16 (what the GPU's bf16 residual stream starts from) moves the
//    output by a large part of sigma (measured 0.82 sigma fp8, 0.96 sigma int8: the codes it flips
//    feed every later linear), which is why the bound is not bf16's band, but stays inside it;
//  - a wrong scale fails: o_proj's output 10% too large in every layer (its per-channel scales
//    10% off; measured 1.42 sigma fp8, 4.49 sigma int8).
TEST(Qwen3VLPrecision, GpuEmulationBoundPassesBf16InputsAndFailsAWrongScale) {
  const qwen3vl::TextWeights f32 = tiny_weights();
  const Tensor ids = golden_ids();
  const Tensor reference = encoded(f32, ids);  // [L, hidden]
  for (const Precision p : {Precision::kFp8, Precision::kInt8}) {
    SCOPED_TRACE(precision_name(p));
    qwen3vl::TextWeights q = f32;
    qwen3vl::emulate_quantization(q, p);
    const Tensor emulated = encoded(q, ids);
    const double sigma = testing::compare(emulated, reference).rel_l2;
    const double bound = testing::qwen3vl_gpu_to_emulation_bound(p);

    qwen3vl::TextWeights bf16_input = q;
    bf16_input.embed_tokens = q.embed_tokens.to(DType::kBF16);
    const double rounded = testing::compare(encoded(bf16_input, ids), emulated).rel_l2 / sigma;

    qwen3vl::TextWeights wrong = q;
    for (qwen3vl::TextLayerWeights& l : wrong.layers) l.o_proj = scaled(l.o_proj, 1.1f);
    const double wrong_scale = testing::compare(encoded(wrong, ids), emulated).rel_l2 / sigma;

    std::printf("%s: sigma %.3g; bf16 embeddings %.3f sigma, o_proj scales 10%% off %.3f sigma (bound %.2f)\n",
                precision_name(p), sigma, rounded, wrong_scale, bound);
    EXPECT_GT(rounded, 0.3) << "a bf16-level input change no longer reaches the output: tighten the GPU bound";
    EXPECT_LT(rounded, bound);
    EXPECT_GT(wrong_scale, bound);
  }
}

uint64_t layer_bytes(Precision p) {
  const planner::ModelConfigs models = *planner::load_model_configs("h3");
  for (const planner::WeightGroup& g : planner::text_encoder_weight_groups(models, false, p))
    if (g.name == "layer 0") return g.bytes;
  ADD_FAILURE() << "no layer 0 group";
  return 0;
}

// The 32B stack's layer: ~0.98 GB in bf16; fp8 and int8 hold the 7 linears in 1 byte (+ 4-byte
// scales per output row), so a little over half.
TEST(Qwen3VLPrecision, PlannerCountsQuantizedLayerBytes) {
  const uint64_t bf16 = layer_bytes(Precision::kBf16), fp8 = layer_bytes(Precision::kFp8),
                 int8 = layer_bytes(Precision::kInt8);
  std::printf("Qwen3-VL-32B layer: bf16 %.1f MB, fp8 %.1f MB, int8 %.1f MB\n", bf16 / 1e6, fp8 / 1e6, int8 / 1e6);
  EXPECT_EQ(fp8, int8);
  EXPECT_GT(static_cast<double>(fp8), 0.5 * static_cast<double>(bf16));
  EXPECT_LT(static_cast<double>(fp8), 0.502 * static_cast<double>(bf16));
}

int streamed_text_layers(const planner::MemoryPlan& plan) {
  Expected<std::vector<bool>> layers = planner::streamed_text_encoder_layers(plan);
  EXPECT_TRUE(layers.has_value()) << layers.status().to_string();
  int n = 0;
  if (layers)
    for (bool s : *layers) n += s;
  return n;
}

// What the switch is for: on a 24 GiB GPU the fp8 text stack (24 GB instead of 49 GB) streams
// about half as many of its 50 layers from host RAM; the phase says which precision it plans.
TEST(Qwen3VLPrecision, A24GiBGpuStreamsFewerTextLayers) {
  planner::PlanInput in = testing::h3_plan_input(24);
  in.request.text_rows = 8228;  // the 2-image + video presentation of issue 22
  in.text_encoder_tiers = planner::TierPolicy{/*peer=*/false, /*host=*/true, 2};
  const planner::MemoryPlan bf16 = testing::plan_or_fail(in);
  in.conditioner_precision = Precision::kFp8;
  const planner::MemoryPlan fp8 = testing::plan_or_fail(in);
  const int streamed_bf16 = streamed_text_layers(bf16), streamed_fp8 = streamed_text_layers(fp8);
  std::printf("24 GiB, L = 8228: %d of 50 text layers streamed in bf16, %d in fp8\n", streamed_bf16, streamed_fp8);
  EXPECT_GT(streamed_bf16, 25);
  EXPECT_LT(streamed_fp8, streamed_bf16);
  EXPECT_LT(streamed_fp8, 50 - 2 * (50 - streamed_bf16) + 3);  // twice the resident layers, give or take
  EXPECT_NE(fp8.phases[0].about.find("fp8"), std::string::npos) << fp8.phases[0].about;
  EXPECT_NE(bf16.phases[0].about.find("bf16"), std::string::npos) << bf16.phases[0].about;
  // The quantized linears' activation buffers are counted (codes [L, 25600] alone are 210 MB).
  uint64_t act_bf16 = 0, act_fp8 = 0;
  for (const planner::BufferBytes& b : planner::text_encoder_buffers(in.models, 8228, 0)) act_bf16 += b.bytes;
  for (const planner::BufferBytes& b : planner::text_encoder_buffers(in.models, 8228, 0, Precision::kFp8))
    act_fp8 += b.bytes;
  EXPECT_GT(act_fp8, act_bf16 + 8228u * 25600u);
}

TEST(Qwen3VLPrecision, TheSwitchIsParsedCheckedAndRefusedWhereItCannotRun) {
  engine::RunSwitches s;
  EXPECT_EQ(s.conditioner_precision, Precision::kBf16);  // whatever --precision says
  ASSERT_TRUE(engine::set_run_switch(s, "conditioner-precision=fp8").is_ok());
  EXPECT_EQ(s.conditioner_precision, Precision::kFp8);
  EXPECT_EQ(engine::run_switches_json(s)["conditioner-precision"], "fp8");
  const Status bad = engine::set_run_switch(s, "conditioner-precision=fp16");
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("bf16, fp8 or int8"), std::string::npos) << bad.message();

  // fp8 needs FP8 tensor cores (8.9+); int8 runs everywhere.
  Expected<engine::RunSwitches> on_3090 = engine::switches_for_gpu(s, Precision::kBf16, {8, 6}, "RTX 3090");
  ASSERT_FALSE(on_3090.has_value());
  EXPECT_NE(on_3090.status().message().find("conditioner-precision=int8"), std::string::npos)
      << on_3090.status().message();
  EXPECT_TRUE(engine::switches_for_gpu(s, Precision::kBf16, {8, 9}, "RTX 4090").has_value());
  ASSERT_TRUE(engine::set_run_switch(s, "conditioner-precision=int8").is_ok());
  EXPECT_TRUE(engine::switches_for_gpu(s, Precision::kBf16, {8, 6}, "RTX 3090").has_value());

  // The CPU engine computes in f32 and says so.
  engine::EngineOptions options;
  options.device = "cpu";
  options.switches = s;
  Expected<std::unique_ptr<engine::Engine>> e = engine::Engine::open(engine::ModelSource{}, options);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.status().message().find("conditioner-precision=int8"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace orochi
