// The GPU text encoder (bf16) on a mixed text + 2 images + 1 video sequence (tests/data/
// qwen3vl_mixed, made by scripts/golden/make_qwen3vl_mixed.py): vision features at the pad rows,
// M-RoPE positions from rope_index, DeepStack adds after layers 0..2, against the CPU reference
// (fp32) and transformers' fp32 run; text-only encodes unchanged by the mixed path; and a long
// sequence (36,864 tokens, the size of a 4-image + video ref2va presentation) through the same
// attention path, its first rows equal to a short encode of the same prefix (causal attention).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/cuda/device.h"
#include "backends/cuda/device_memory.h"
#include "models/qwen3vl/cuda/gpu_text_encoder.h"
#include "models/qwen3vl/rope_index.h"
#include "models/qwen3vl/text_model.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi::qwen3vl {
namespace {

using testing::golden_tensor;

#define REQUIRE_GPU() \
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU"

std::string model_dir() { return testing::test_data_dir() + "/qwen3vl_text/text_encoder"; }

weights::Checkpoint open_golden() {
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(testing::test_data_dir() + "/qwen3vl_mixed/golden.safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return std::move(g).value();
}

std::vector<MmTokenType> token_types(const weights::Checkpoint& g) {
  const Tensor t = golden_tensor(g, "in.mm_token_type_ids");
  std::vector<MmTokenType> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<MmTokenType>(t.data<int64_t>()[i]));
  return out;
}

std::vector<GridThw> grids(const weights::Checkpoint& g, const std::string& name) {
  const Tensor t = golden_tensor(g, name);
  std::vector<GridThw> out;
  for (int64_t i = 0; i + 2 < t.numel(); i += 3)
    out.push_back({t.data<int64_t>()[i], t.data<int64_t>()[i + 1], t.data<int64_t>()[i + 2]});
  return out;
}

VisionEmbeddings golden_vision(const weights::Checkpoint& g, int64_t hidden) {
  std::vector<Tensor> image_ds, video_ds;
  for (int k = 0; k < 3; ++k) {
    image_ds.push_back(golden_tensor(g, "image_deepstack." + std::to_string(k)));
    video_ds.push_back(golden_tensor(g, "video_deepstack." + std::to_string(k)));
  }
  Expected<VisionEmbeddings> v = vision_embeddings(token_types(g), hidden, golden_tensor(g, "image_features"),
                                                   image_ds, golden_tensor(g, "video_features"), video_ds);
  OROCHI_CHECK(v.has_value(), v.status().to_string());
  return std::move(v).value();
}

TEST(Qwen3VLGpuMixed, MatchesTheCpuAndTransformers) {
  REQUIRE_GPU();
  const weights::Checkpoint g = open_golden();
  constexpr int64_t kLayers = 4;  // every DeepStack add reaches the output
  Expected<TextWeights> w = load_text_weights(model_dir(), kLayers);
  ASSERT_TRUE(w.has_value()) << w.status().to_string();
  const Tensor ids = golden_tensor(g, "in.input_ids");
  Expected<Tensor> positions = rope_index(token_types(g), grids(g, "in.image_grid_thw"), grids(g, "in.video_grid_thw"));
  ASSERT_TRUE(positions.has_value()) << positions.status().to_string();
  const VisionEmbeddings vision = golden_vision(g, w->config.hidden_size);

  auto enc = gpu::GpuTextEncoder::create(w->config, kLayers, 0, 128);
  ASSERT_TRUE(enc.has_value()) << enc.status().to_string();
  ASSERT_TRUE((*enc)->upload(*w).is_ok());
  Expected<Tensor> gpu_out = (*enc)->encode(ids, *positions, vision);
  ASSERT_TRUE(gpu_out.has_value()) << gpu_out.status().to_string();
  Expected<Tensor> cpu_out = encode_mixed(*w, ids, *positions, vision);
  ASSERT_TRUE(cpu_out.has_value());
  const auto vs_cpu = testing::compare(*gpu_out, *cpu_out);
  const auto vs_golden = testing::compare(*gpu_out, golden_tensor(g, "layer_output.3"));
  std::printf("mixed sequence on GPU (bf16): vs CPU fp32 %s\n  vs transformers fp32 %s\n", vs_cpu.summary().c_str(),
              vs_golden.summary().c_str());
  EXPECT_TRUE(vs_cpu.same_nonfinite && vs_cpu.rel_l2 <= 2e-2) << vs_cpu.summary();
  EXPECT_TRUE(vs_golden.same_nonfinite && vs_golden.rel_l2 <= 2e-2) << vs_golden.summary();

  // Without DeepStack the GPU output leaves the band: the adds happen on the GPU.
  VisionEmbeddings no_deepstack = vision;
  no_deepstack.deepstack.clear();
  Expected<Tensor> plain = (*enc)->encode(ids, *positions, no_deepstack);
  ASSERT_TRUE(plain.has_value());
  EXPECT_GT(testing::compare(*plain, golden_tensor(g, "layer_output.3")).rel_l2, 4 * vs_golden.rel_l2);

  // Stopping after 3 layers gives hidden_states[3] (layer 2's output before its add).
  auto enc3 = gpu::GpuTextEncoder::create(w->config, 3, 0, 128);
  ASSERT_TRUE(enc3.has_value());
  ASSERT_TRUE((*enc3)->upload(*w).is_ok());
  Expected<Tensor> out3 = (*enc3)->encode(ids, *positions, vision);
  ASSERT_TRUE(out3.has_value());
  const auto vs3 = testing::compare(*out3, golden_tensor(g, "hidden_states.3"));
  std::printf("  3 layers vs transformers hidden_states[3] %s\n", vs3.summary().c_str());
  EXPECT_TRUE(vs3.same_nonfinite && vs3.rel_l2 <= 2e-2) << vs3.summary();

  // Vision tensors already on the GPU (the GPU vision tower's output), bf16 or f32, give the same
  // bits as host ones: they are rounded to bf16 at the same point.
  const int64_t V = static_cast<int64_t>(vision.rows.size()), C = w->config.hidden_size;
  for (const DType dtype : {DType::kBF16, DType::kF32}) {
    auto arena = cuda::DeviceArena::create(0, 4 * static_cast<size_t>(V * C) * 4 + 4096, "test vision");
    ASSERT_TRUE(arena.has_value()) << arena.status().to_string();
    VisionEmbeddings on_gpu;
    on_gpu.rows = vision.rows;
    Expected<Tensor> f = cuda::upload(vision.features, **arena, dtype);
    ASSERT_TRUE(f.has_value());
    on_gpu.features = *f;
    for (const Tensor& d : vision.deepstack) {
      Expected<Tensor> dd = cuda::upload(d, **arena, dtype);
      ASSERT_TRUE(dd.has_value());
      on_gpu.deepstack.push_back(*dd);
    }
    Expected<Tensor> from_gpu = (*enc)->encode(ids, *positions, on_gpu);
    ASSERT_TRUE(from_gpu.has_value()) << from_gpu.status().to_string();
    EXPECT_TENSOR_CLOSE(*from_gpu, *gpu_out, 0.0);
  }

  // The text-only entry point is the mixed path with no vision: bit-identical.
  Expected<Tensor> text_only = (*enc)->encode_text(ids);
  Expected<Tensor> text_empty = (*enc)->encode(ids, text_positions(ids.numel()), VisionEmbeddings{});
  ASSERT_TRUE(text_only.has_value() && text_empty.has_value());
  EXPECT_TENSOR_CLOSE(*text_only, *text_empty, 0.0);
}

// A presentation-sized sequence: text with image-like pad runs of 1024 tokens (a 2048x2048 image
// each, merged grid 32x32) up to `L` tokens, features and DeepStack random.
struct LongSequence {
  Tensor ids, positions;
  VisionEmbeddings vision;
};

LongSequence long_sequence(int64_t L, int64_t hidden, int64_t vocab) {
  std::vector<MmTokenType> types;
  std::vector<GridThw> images;
  while (static_cast<int64_t>(types.size()) + 1024 + 40 <= L) {
    types.insert(types.end(), 20, MmTokenType::kText);
    types.insert(types.end(), 1024, MmTokenType::kImage);
    images.push_back({1, 64, 64});
  }
  types.resize(static_cast<size_t>(L), MmTokenType::kText);
  LongSequence s;
  s.ids = Tensor::empty({L}, DType::kI64);
  for (int64_t i = 0; i < L; ++i) s.ids.data<int64_t>()[i] = (i * 7919) % vocab;
  Expected<Tensor> pos = rope_index(types, images, {});
  OROCHI_CHECK(pos.has_value(), pos.status().to_string());
  s.positions = *pos;
  const int64_t V = static_cast<int64_t>(images.size()) * 1024;
  auto random = [&](uint64_t salt) {
    Tensor t = Tensor::empty({V, hidden}, DType::kF32);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<float>()[i] = static_cast<float>(((i * 2654435761u + salt * 40503u) % 2001) / 1000.0 - 1.0);
    return t;
  };
  Expected<VisionEmbeddings> v = vision_embeddings(types, hidden, random(1), {random(2), random(3), random(4)},
                                                   Tensor(), {});
  OROCHI_CHECK(v.has_value(), v.status().to_string());
  s.vision = std::move(v).value();
  return s;
}

// The first `n` tokens of a sequence, with the vision rows inside them.
LongSequence prefix(const LongSequence& s, int64_t n) {
  LongSequence p;
  p.ids = s.ids.slice(0, 0, n).contiguous();
  p.positions = s.positions.slice(0, 0, n).contiguous();
  int64_t V = 0;
  while (V < static_cast<int64_t>(s.vision.rows.size()) && s.vision.rows[static_cast<size_t>(V)] < n) ++V;
  p.vision.rows.assign(s.vision.rows.begin(), s.vision.rows.begin() + V);
  p.vision.features = s.vision.features.slice(0, 0, V).contiguous();
  for (const Tensor& d : s.vision.deepstack) p.vision.deepstack.push_back(d.slice(0, 0, V).contiguous());
  return p;
}

TEST(Qwen3VLGpuMixed, LongPresentationsFitTheAttentionPath) {
  REQUIRE_GPU();
  constexpr int64_t kLayers = 4, kLong = 36864, kShort = 3000;
  Expected<TextWeights> w = load_text_weights(model_dir(), kLayers);
  ASSERT_TRUE(w.has_value());
  const LongSequence s = long_sequence(kLong, w->config.hidden_size, w->config.vocab_size);
  auto enc = gpu::GpuTextEncoder::create(w->config, kLayers, 0, kLong);
  ASSERT_TRUE(enc.has_value()) << enc.status().to_string();
  ASSERT_TRUE((*enc)->upload(*w).is_ok());
  Expected<Tensor> out = (*enc)->encode(s.ids, s.positions, s.vision);
  ASSERT_TRUE(out.has_value()) << out.status().to_string();

  // Causal attention: the first rows of the long encode are those of the prefix alone, which the
  // CPU reference checks too.
  const LongSequence p = prefix(s, kShort);
  Expected<Tensor> short_gpu = (*enc)->encode(p.ids, p.positions, p.vision);
  Expected<Tensor> short_cpu = encode_mixed(*w, p.ids, p.positions, p.vision);
  ASSERT_TRUE(short_gpu.has_value() && short_cpu.has_value());
  const Tensor head = out->slice(0, 0, kShort).contiguous();
  const auto long_vs_short = testing::compare(head, *short_gpu);
  const auto short_vs_cpu = testing::compare(*short_gpu, *short_cpu);
  std::printf("36,864-token sequence: first %lld rows vs the prefix encoded alone %s\n  prefix GPU vs CPU %s\n",
              static_cast<long long>(kShort), long_vs_short.summary().c_str(), short_vs_cpu.summary().c_str());
  EXPECT_TRUE(long_vs_short.same_nonfinite && long_vs_short.rel_l2 <= 2e-2) << long_vs_short.summary();
  EXPECT_TRUE(short_vs_cpu.same_nonfinite && short_vs_cpu.rel_l2 <= 2e-2) << short_vs_cpu.summary();
  // Finite everywhere, including the last rows that attend over all 36,864.
  for (int64_t i = 0; i < out->numel(); ++i) ASSERT_TRUE(std::isfinite(out->data<float>()[i])) << i;
}

}  // namespace
}  // namespace orochi::qwen3vl
