// The CPU reference of --precision fp8 / int8 (h3::emulate_quantization, issue 25): which linears it
// marks (the GPU's list, is_quantized_linear), that a marked linear is core's quantized_linear of
// its bf16-rounded input and weight, and what it does to the tiny model's forward. The GPU's
// quantized forward is held to this reference in tests/cuda/test_h3_gpu_precision.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "core/quantize.h"
#include "cuda/h3_narrow_model.h"
#include "models/h3/block_forward.h"
#include "models/h3/transformer.h"
#include "support/compare.h"
#include "support/golden.h"

namespace orochi {
namespace {

TEST(H3QuantizedEmulation, MarksTheGpusQuantizedLinearsOnly) {
  Expected<h3::H3Weights> loaded = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  h3::H3Weights w = *loaded;
  h3::emulate_quantization(w, Precision::kInt8);
  for (const h3::BlockWeights& b : w.blocks)
    for (const h3::LinearWeights* l : {&b.attn.to_q, &b.attn.to_k, &b.attn.to_v, &b.attn.to_out, &b.ff_in, &b.ff_out})
      EXPECT_EQ(l->emulated_codes, DType::kI8);
  for (const h3::BlockWeights& b : w.refiner) {  // the refiner stays bf16 on the GPU
    EXPECT_EQ(b.attn.to_q.emulated_codes, DType::kF32);
    EXPECT_EQ(b.ff_out.emulated_codes, DType::kF32);
  }
  EXPECT_EQ(w.context_embedder.emulated_codes, DType::kF32);
  EXPECT_EQ(w.proj_out.emulated_codes, DType::kF32);
  h3::emulate_quantization(w, Precision::kBf16);  // and back
  EXPECT_EQ(w.blocks[0].ff_in.emulated_codes, DType::kF32);
}

TEST(H3QuantizedEmulation, AMarkedLinearIsCoresQuantizedLinear) {
  const Tensor x = Tensor::from_floats({0.5f, -1.25f, 3.0f, 0.1f, 2.0f, -0.3f, 0.0f, 7.5f}, {2, 4});
  h3::LinearWeights l;
  l.weight = Tensor::from_floats({0.2f, -0.4f, 0.6f, 0.8f, -1.0f, 0.1f, 0.3f, -0.7f, 0.05f, 0.5f, -0.25f, 0.9f}, {3, 4});
  l.bias = Tensor::from_floats({0.1f, -0.2f, 0.3f}, {3});
  for (DType format : {DType::kI8, DType::kF8E4M3}) {
    l.emulated_codes = format;
    const Tensor got = h3::apply_linear(x, l);
    const Tensor want = quantized_linear(quantize_rows(x.to(DType::kBF16), format),
                                         quantize_rows(l.weight.to(DType::kBF16), format), &l.bias);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0) << dtype_name(format);
    const testing::Comparison c = testing::compare(got, h3::apply_linear(x, h3::LinearWeights{l.weight, l.bias, {}}));
    EXPECT_GT(c.rel_l2, 0.0) << dtype_name(format) << ": nothing was quantized";
    EXPECT_LT(c.rel_l2, 0.1) << dtype_name(format);
  }
}

// The tiny model (hidden 24) through the whole forward: int8 and fp8 emulation move the f32
// output by their quantization error (each linear's a few percent; e4m3's ~3x int8's), never by
// orders of magnitude.
TEST(H3QuantizedEmulation, TinyForwardMovesByTheQuantizationError) {
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(testing::h3_tiny_dir() + "/golden.safetensors");
  ASSERT_TRUE(golden.has_value());
  Expected<h3::H3Weights> loaded = h3::load_weights(testing::h3_tiny_dir() + "/transformer");
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  const h3::H3Inputs in = testing::golden_inputs(*golden);
  const Tensor timesteps = testing::golden_tensor(*golden, "in.timestep");
  const h3::ModulationTables tables = h3::compute_modulation_tables(*loaded, timesteps);
  Expected<h3::H3Outputs> f32 = h3::forward(*loaded, in, tables);
  ASSERT_TRUE(f32.has_value()) << f32.status().to_string();
  double err[2] = {0, 0};
  int i = 0;
  for (Precision p : {Precision::kInt8, Precision::kFp8}) {
    h3::H3Weights w = *loaded;
    h3::emulate_quantization(w, p);
    Expected<h3::H3Outputs> q = h3::forward(w, in, tables);
    ASSERT_TRUE(q.has_value()) << q.status().to_string();
    const testing::Comparison v = testing::compare(q->video, f32->video), a = testing::compare(q->audio, f32->audio);
    std::printf("tiny H3, %s emulated vs f32: video %s\n  audio %s\n", precision_name(p), v.summary().c_str(),
                a.summary().c_str());
    err[i++] = std::max(v.rel_l2, a.rel_l2);
    EXPECT_TRUE(v.same_nonfinite && a.same_nonfinite);
  }
  EXPECT_GT(err[0], 1e-4);  // int8 quantized something
  EXPECT_LT(err[0], 8e-2);
  EXPECT_GT(err[1], err[0]);  // e4m3's 3 mantissa bits lose more than int8's per-row absmax
  EXPECT_LT(err[1], 2e-1);
}

// attention-precision=fp8's reference: every block's attention (the refiner's too: the GPU runs
// every attention of head dim 128 in FP8) through the FP8 kernel's CPU emulation, on the narrow
// model (real head width 128). It adds its own error to the linears' (P and V in e4m3), stays
// within the GPU test's bound of f32, and emulate_quantization(bf16) takes it off again.
TEST(H3QuantizedEmulation, Fp8AttentionJoinsTheLinearsOnTheNarrowModel) {
  const h3::H3Config c = testing::quantizable_narrow_config();
  const testing::Request r = testing::narrow_request(c);
  const h3::H3Weights w = testing::scaled_host_weights(c);
  const h3::ModulationTables tables = h3::compute_modulation_tables(w, r.timesteps);
  Expected<h3::H3Outputs> f32 = h3::forward(w, r.in, tables);
  ASSERT_TRUE(f32.has_value()) << f32.status().to_string();
  auto error_to_f32 = [&](const h3::H3Weights& q, const char* what) {
    Expected<h3::H3Outputs> out = h3::forward(q, r.in, tables);
    EXPECT_TRUE(out.has_value()) << out.status().to_string();
    if (!out) return 1.0;
    const testing::Comparison v = testing::compare(out->video, f32->video), a = testing::compare(out->audio, f32->audio);
    std::printf("narrow H3, %s vs f32: video rel_l2=%.3e audio rel_l2=%.3e\n", what, v.rel_l2, a.rel_l2);
    EXPECT_TRUE(v.same_nonfinite && a.same_nonfinite) << what;
    return std::max(v.rel_l2, a.rel_l2);
  };
  h3::H3Weights linears = w, both = w;
  h3::emulate_quantization(linears, Precision::kFp8);
  h3::emulate_quantization(both, Precision::kFp8, /*fp8_attention=*/true);
  for (const auto* blocks : {&both.blocks, &both.refiner})
    for (const h3::BlockWeights& b : *blocks) EXPECT_TRUE(b.attn.emulated_fp8);
  EXPECT_FALSE(linears.blocks[0].attn.emulated_fp8);
  const double e_linears = error_to_f32(linears, "fp8 linears"), e_both = error_to_f32(both, "fp8 linears + attention");
  EXPECT_GT(e_linears, 1e-3);
  EXPECT_GT(e_both, e_linears);  // the attention's e4m3 P and V add to the linears' error
  EXPECT_LT(e_both, 3e-1);
  h3::emulate_quantization(both, Precision::kBf16);
  EXPECT_FALSE(both.refiner[0].attn.emulated_fp8);
  EXPECT_FALSE(both.blocks[0].attn.emulated_fp8);
}

}  // namespace
}  // namespace orochi
