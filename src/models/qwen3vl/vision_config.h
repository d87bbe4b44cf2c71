// Qwen3-VL vision tower hyper-parameters, read from the "vision_config" object of a Hugging Face
// Qwen3VLConfig `config.json` (MiniMax-H3's text_encoder/ folder), or from a bare vision config.
//
// A field absent from the file takes transformers' Qwen3VLVisionConfig default, as transformers
// itself would; `qwen3vl_32b()` gives the released 32B model's values (REF2VA.md §4.4).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::qwen3vl {

// The activation inside each ViT block's MLP (the mergers always use the erf GELU, nn.GELU()).
enum class VisionActivation {
  kGeluTanh,  // "gelu_pytorch_tanh" (the release)
  kGeluErf,   // "gelu"
};

struct VisionConfig {
  int64_t depth = 27;
  int64_t hidden_size = 1152;
  VisionActivation hidden_act = VisionActivation::kGeluTanh;
  int64_t intermediate_size = 4304;
  int64_t num_heads = 16;
  int64_t in_channels = 3;
  int64_t patch_size = 16;
  int64_t spatial_merge_size = 2;
  int64_t temporal_patch_size = 2;
  int64_t out_hidden_size = 3584;
  int64_t num_position_embeddings = 2304;  // a square: the learned table is side x side
  std::vector<int64_t> deepstack_visual_indexes = {8, 16, 24};
  // 2-D RoPE base: "rope_parameters": {"rope_type": "axial", "rope_theta": ...} in transformers 5
  // (absent in the released config: 10000).
  double rope_theta = 10000.0;

  // LayerNorm eps of the blocks and mergers: fixed in transformers' modules, not a config field.
  static constexpr double kLayerNormEps = 1e-6;

  int64_t head_dim() const { return hidden_size / num_heads; }
  // One patch's pixel values: channels x temporal patch x patch x patch (1536 in the release).
  int64_t patch_values() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
  // Width of a merged token before the merger's MLP: 4 patches of hidden_size (4608).
  int64_t merged_width() const { return hidden_size * spatial_merge_size * spatial_merge_size; }
  int64_t merge_unit() const { return spatial_merge_size * spatial_merge_size; }  // patches per token
  int64_t position_grid_side() const;  // sqrt(num_position_embeddings) (48)

  // Sizes positive, hidden a multiple of heads with an even head_dim split in 4 for the 2-D RoPE,
  // num_position_embeddings a square, DeepStack indexes distinct blocks in [0, depth).
  Status validate() const;
  std::string summary() const;  // a few lines for `orochi inspect`

  // `json` is a Qwen3VLConfig (model_type "qwen3_vl", the vision fields under "vision_config") or
  // a bare Qwen3VLVisionConfig (model_type "qwen3_vl_vision", or no model_type with a "depth").
  // Errors: invalid_argument (no vision_config, a field of the wrong type, values failing
  // validate()), unsupported (an activation, channel count or rope type this engine does not run).
  static Expected<VisionConfig> from_json(const nlohmann::json& json);
  // Qwen3-VL-32B's tower (MiniMax-H3's conditioner): 27 blocks of 1152, 16 heads, MLP 4304 (tanh
  // GELU), patch 16, temporal 2, merge 2, out 5120, 48x48 positions, DeepStack after 8/16/24.
  static VisionConfig qwen3vl_32b();
};

}  // namespace orochi::qwen3vl
