// The Qwen3-VL vision tower's weights (transformers' Qwen3VLVisionModel), under the checkpoint's
// own names:
//   <prefix>patch_embed.proj.{weight [hidden, C, tp, p, p], bias}
//   <prefix>pos_embed.weight [num_position_embeddings, hidden]
//   <prefix>blocks.{i}.norm1.{weight, bias}, .norm2.{weight, bias}
//   <prefix>blocks.{i}.attn.qkv.{weight [3·hidden, hidden], bias}, .attn.proj.{weight, bias}
//   <prefix>blocks.{i}.mlp.linear_fc1.{weight, bias}, .mlp.linear_fc2.{weight, bias}
//   <prefix>merger.norm.{weight [hidden], bias}, .linear_fc1, .linear_fc2
//   <prefix>deepstack_merger_list.{k}.norm.{weight [4·hidden], bias}, .linear_fc1, .linear_fc2
// with <prefix> "model.visual." for a Qwen3VLForConditionalGeneration checkpoint (the release),
// "visual." for a Qwen3VLModel, "" for a bare Qwen3VLVisionModel.
//
// Tensors are zero-copy views of the checkpoint in its stored dtype (bf16 in the release); the
// CPU forward widens one block at a time to fp32.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/vision_config.h"
#include "weights/checkpoint.h"

namespace orochi::qwen3vl {

struct VisionLinear {
  Tensor weight;  // [out, in]
  Tensor bias;    // [out]
};

struct VisionNorm {  // LayerNorm with bias
  Tensor weight, bias;
};

struct VisionBlockWeights {
  VisionNorm norm1, norm2;  // [hidden]
  VisionLinear qkv;         // [3·hidden, hidden]: q, k, v stacked, each heads x head_dim
  VisionLinear proj;        // [hidden, hidden]
  VisionLinear fc1;         // [intermediate, hidden]
  VisionLinear fc2;         // [hidden, intermediate]
};

// The 2x2 merger (and each DeepStack merger): LayerNorm, then fc1 [4·hidden, 4·hidden], erf GELU,
// fc2 [out_hidden, 4·hidden]. The final merger norms each patch ([hidden]) before the 4 patches
// of a token are concatenated; a DeepStack merger norms the concatenation ([4·hidden]).
struct VisionMergerWeights {
  VisionNorm norm;
  VisionLinear fc1, fc2;
  bool norm_after_shuffle = false;  // true for the DeepStack mergers
};

struct VisionWeights {
  VisionConfig config;
  VisionLinear patch_embed;  // weight viewed [hidden, C·tp·p·p] (the Conv3d as a linear over patches)
  Tensor pos_embed;          // [num_position_embeddings, hidden]
  std::vector<VisionBlockWeights> blocks;
  VisionMergerWeights merger;
  std::vector<VisionMergerWeights> deepstack_mergers;  // one per config.deepstack_visual_indexes entry
  std::string prefix;                                  // key prefix found in the checkpoint
  std::vector<std::string> loaded_keys;                // every checkpoint key read, in load order
};

// The checkpoint keys the tower needs, in load order.
std::vector<std::string> vision_weight_keys(const std::string& prefix, const VisionConfig& config);

// Loads from a text_encoder/ folder (config.json with a vision_config + safetensors, single or
// sharded). Keys outside the tower's prefix (the language model, the LM head) are ignored.
// Errors: invalid_argument (no vision tower in the checkpoint; unknown or missing keys under the
// tower's prefix, listed by name), shape_mismatch (a tensor of the wrong shape or a non-float dtype,
// named), plus ModelFolder's and VisionConfig's errors.
Expected<VisionWeights> load_vision_weights(const std::string& folder);
Expected<VisionWeights> load_vision_weights(const weights::Checkpoint& checkpoint, const VisionConfig& config);

}  // namespace orochi::qwen3vl
