// The Qwen3-VL text decoder's weights up to the layer a caller reads (MiniMax-H3 reads the residual
// stream after 50 of 64 layers), under the checkpoint's own names:
//   <prefix>embed_tokens.weight
//   <prefix>layers.{i}.input_layernorm.weight, .post_attention_layernorm.weight
//   <prefix>layers.{i}.self_attn.{q_proj,k_proj,v_proj,o_proj}.weight, .self_attn.{q_norm,k_norm}.weight
//   <prefix>layers.{i}.mlp.{gate_proj,up_proj,down_proj}.weight
// with <prefix> "model.language_model." for a Qwen3VLForConditionalGeneration checkpoint (the
// release), "language_model." for a Qwen3VLModel, "model." for ComfyUI's text_encoders file (its
// vision tower under "visual."), "" for a bare Qwen3VLTextModel.
//
// Only layers < stop_after_layers are read. Layers past it, the final norm, the LM head and the
// vision tower are never touched, so a checkpoint pruned to the first layers loads too.
//
// Tensors are zero-copy views of the checkpoint in its stored dtype (bf16 in the release): the
// forward converts one layer at a time to fp32, since 50 layers of the 32B model are ~49 GB in bf16
// and twice that in fp32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/precision.h"
#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/text_config.h"
#include "weights/checkpoint.h"

namespace orochi::qwen3vl {

struct TextLayerWeights {
  Tensor input_layernorm, post_attention_layernorm;  // [hidden]
  Tensor q_proj;                                     // [q_heads · head_dim, hidden]
  Tensor k_proj, v_proj;                             // [kv_heads · head_dim, hidden]
  Tensor o_proj;                                     // [hidden, q_heads · head_dim]
  Tensor q_norm, k_norm;                             // [head_dim], shared by every head
  Tensor gate_proj, up_proj;                         // [intermediate, hidden]
  Tensor down_proj;                                  // [hidden, intermediate]
};

struct TextWeights {
  TextConfig config;
  Tensor embed_tokens;                   // [vocab, hidden]
  std::vector<TextLayerWeights> layers;  // layers 0 .. stop_after_layers - 1
  std::string prefix;                    // key prefix found in the checkpoint
  std::vector<std::string> loaded_keys;  // every checkpoint key read, in load order
  // CPU forward only: kF8E4M3 / kI8 emulate the GPU's quantized decoder linears
  // (emulate_quantization); kF32, the default, is the plain f32 forward.
  DType emulated_codes = DType::kF32;

  int64_t stop_after_layers() const { return static_cast<int64_t>(layers.size()); }
};

// The checkpoint keys the decoder needs for its first `stop_after_layers` layers, in load order.
std::vector<std::string> text_weight_keys(const std::string& prefix, int64_t stop_after_layers);

// A text encoder component as given: a diffusers text_encoder/ folder, or one .safetensors file
// (ComfyUI's models/text_encoders file, truncated after the conditioning layer). Its config is the
// folder's config.json or one beside the file, else the released Qwen3-VL-32B config; a single
// file's layers are counted from its keys (`file_layers`; the folder's: its config's count).
struct TextComponent {
  TextConfig config;
  std::string config_from;  // the config.json, or "the released Qwen3-VL-32B config"
  bool single_file = false;
  int64_t file_layers = 0;  // decoder layers the weights hold (a single file may be truncated)
};
// The config and layer count alone (a file's header is read, no tensor).
Expected<TextComponent> text_encoder_component(const std::string& path);

// Loads from a text encoder component (text_encoder_component: a folder or a single file).
// `stop_after_layers` in [0, num_hidden_layers]: the output is transformers' hidden_states[k]
// (k < num_hidden_layers; hidden_states[num_hidden_layers] alone is the normed output, which this
// engine never produces). Errors: invalid_argument (k out of range, unknown keys under the language
// model's prefix in the layers read), not_found (missing keys, named), shape_mismatch (a tensor of
// the wrong shape or a non-float dtype, named), plus ModelFolder's and TextConfig's errors.
Expected<TextWeights> load_text_weights(const std::string& path, int64_t stop_after_layers);
Expected<TextWeights> load_text_weights(const weights::Checkpoint& checkpoint, const TextConfig& config,
                                        int64_t stop_after_layers);

// The conditioner's --set conditioner-precision on the CPU: with fp8 / int8 every decoder layer's
// linears (q, k, v, o, gate, up, down: all of them, as the GPU encoder quantizes them) run as
// core's emulated_quantized_linear (activations per token, weights per output channel); bf16 (the
// released precision) keeps the f32 reference. The embedding and the norms are never quantized.
void emulate_quantization(TextWeights& weights, Precision precision);

}  // namespace orochi::qwen3vl
