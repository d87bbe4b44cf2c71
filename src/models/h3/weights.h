// The MiniMax-H3 transformer's weights as f32 host tensors (the CPU reference computes in f32
// whatever the checkpoint stores), grouped the way the forward uses them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/precision.h"
#include "core/status.h"
#include "core/tensor.h"
#include "models/h3/checkpoint_layout.h"
#include "models/h3/config.h"
#include "models/h3/parameters.h"

namespace orochi::h3 {

// An unmerged low-rank update of a linear layer (h3::attach_lora): y += scale · up·(down·x).
struct LoraAdapter {
  Tensor down;  // f32 [r, in]
  Tensor up;    // f32 [out, r]
  float scale = 1.0f;  // strength · alpha / r
};

struct LinearWeights {
  Tensor weight;  // [out, in]
  Tensor bias;    // [out], undefined when the layer has none
  std::vector<LoraAdapter> adapters;  // CPU forward only; empty unless a LoRA is attached unmerged
  // CPU forward only: kF8E4M3 / kI8 emulate the GPU's quantized linear (emulate_quantization);
  // kF32, the default, is the plain f32 linear.
  DType emulated_codes = DType::kF32;
  const Tensor* bias_or_null() const { return bias.defined() ? &bias : nullptr; }
};

struct AttentionWeights {
  LinearWeights to_q, to_k, to_v, to_out;
  Tensor norm_q, norm_k;  // [head_dim]
  // CPU forward only: attention as the GPU's FP8 kernel computes it (cpu::attention_fp8_emulated
  // of bf16 q, k, v; emulate_quantization); false, the default, is the f32 softmax attention.
  bool emulated_fp8 = false;
};

struct BlockWeights {
  Tensor norm1, norm2;        // [H]
  AttentionWeights attn;
  LinearWeights ff_in;        // [2F, H], rows [value; gate]
  LinearWeights ff_out;       // [H, F]
  LinearWeights adaln;        // [18H, time_embed_dim]; undefined in refiner blocks
};

struct H3Weights {
  H3Config config;
  LinearWeights proj_in, audio_proj_in, context_embedder;
  LinearWeights time_linear_1, time_linear_2;  // undefined in the curve form
  Tensor adaln_t_table;  // [G, r]: the pruned curve-form AdaLN's table (adaln_curve.h), else undefined
  std::vector<BlockWeights> refiner;
  Tensor refiner_final_norm;
  std::vector<BlockWeights> blocks;
  Tensor norm_out;            // [H]
  LinearWeights norm_out_linear;  // [2H, time_embed_dim]: shift | scale
  LinearWeights proj_out, audio_proj_out;
};

// Produces each parameter (by diffusers name and shape) from somewhere: a checkpoint, a generator.
using ParamSource = std::function<Expected<Tensor>(const ParamSpec&)>;

Expected<H3Weights> assemble_weights(const H3Config& config, const ParamSource& source);

// Loads a transformer folder (config.json + safetensors, diffusers or original names). Reports
// unknown/missing keys by name and wrong shapes by key. The CPU forward needs every tensor in f32;
// the GPU upload converts on the way, so `as_stored` keeps the checkpoint's own dtype (zero-copy
// views of the mapped files, bf16 in the release: 66 GB of host memory instead of 132 GB in f32).
Expected<H3Weights> load_weights(const std::string& folder, bool as_stored = false);

// A single-file transformer (ComfyUI's models/diffusion_models/*.safetensors): original names under
// `model.diffusion_model.` or `diffusion_model.` (or none), or diffusers names. Its config is, in
// order: `config_path` when given; a config.json beside the file; else the released MiniMax-H3
// config (H3Config's defaults). Every key and shape is checked against that config (the error names
// the key). The fused qkv order is `qkv_order` when given, else detected (detect_qkv_order) and
// refused as ambiguous naming the file and the votes. A file holding `adaln_t_table` is the pruned
// curve-form AdaLN (adaln_curve.h: no time MLP; G and r from the table's shape, into the config). F8_E4M3 / F8_E5M2 weights are dequantized with
// their scale (weights/scaled_fp8.h: scale_weight or weight_scale, per tensor or per row) to f32, or
// to bf16 with as_stored.
struct TransformerFileOptions {
  std::optional<std::string> config_path;
  std::optional<QkvOrder> qkv_order;  // none: detect
  bool as_stored = false;             // as load_weights
};
struct TransformerFile {
  H3Weights weights;
  std::string config_from;  // the config's path, or "the released MiniMax-H3 config"
  std::string layout;       // KeyLayout::describe(), with how the qkv order was found
};
// The config the file would be read with (no weights touched), and where it came from.
Expected<std::pair<H3Config, std::string>> transformer_file_config(const std::string& path,
                                                                   const std::optional<std::string>& config_path);
Expected<TransformerFile> load_transformer_file(const std::string& path, const TransformerFileOptions& options = {});
// "auto" -> none, "interleaved", "thirds"; anything else is a usage error.
Expected<std::optional<QkvOrder>> parse_qkv_order(const std::string& text);

// The CPU reference of --precision fp8 / int8 (for tests): every linear the GPU quantizes
// (is_quantized_linear) runs as core/quantize.h's quantized_linear of its input and weight, each
// rounded to bf16 first (as the GPU holds them) and quantized per row; the rest stays f32. With
// `fp8_attention` every block's attention (refiner and main; head dim 128) runs as the FP8 kernel's
// CPU reference too (backends/cpu/attention_fp8.h).
void emulate_quantization(H3Weights& weights, Precision precision, bool fp8_attention = false);

// Deterministic random weights (the built-in demo model): N(0, 0.2) matrices, N(0, 0.05) biases,
// 1 + N(0, 0.1) norm weights, from `seed`.
H3Weights random_weights(const H3Config& config, uint64_t seed);

}  // namespace orochi::h3
