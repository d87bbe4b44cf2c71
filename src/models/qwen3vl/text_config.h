// Qwen3-VL text decoder hyper-parameters, read from a Hugging Face `config.json`: either a
// Qwen3VLConfig (model_type "qwen3_vl", the text fields nested under "text_config"; what MiniMax-H3's
// text_encoder/ folder holds) or a bare Qwen3VLTextConfig ("qwen3_vl_text").
//
// A field absent from the file takes transformers' class default (below), as transformers itself
// would; `qwen3vl_32b()` gives the released 32B model's values.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/status.h"

namespace orochi::qwen3vl {

struct TextConfig {
  int64_t vocab_size = 151936;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 22016;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;  // null / absent in the file: num_attention_heads
  int64_t head_dim = 128;
  double rms_norm_eps = 1e-6;
  int64_t max_position_embeddings = 262144;  // the longest prompt the model was built for
  // RoPE: "rope_parameters" (transformers 5) or the legacy "rope_scaling" + "rope_theta" (the released
  // checkpoints); theta defaults to Qwen3VLTextConfig.default_theta, the section to the rotary class's.
  double rope_theta = 500000.0;
  std::array<int64_t, 3> mrope_section = {24, 20, 20};
  // Recorded only: transformers' Qwen3-VL rotary interleaves whatever this says.
  bool mrope_interleaved = true;
  bool tie_word_embeddings = false;  // Qwen3VLConfig's; the LM head is never loaded here

  int64_t q_dim() const { return num_attention_heads * head_dim; }
  int64_t kv_dim() const { return num_key_value_heads * head_dim; }
  int64_t rope_freq_slots() const { return head_dim / 2; }
  // The decoder linears' widest input and output (q, k, v, o, [up; gate] as one, down): the row
  // widths of the quantized linears' activation buffers, for the GPU encoder and the planner.
  int64_t widest_linear_in() const { return std::max({hidden_size, q_dim(), intermediate_size}); }
  int64_t widest_linear_out() const { return std::max({q_dim(), kv_dim(), hidden_size, 2 * intermediate_size}); }

  // Sizes positive, head_dim even, query heads a multiple of kv heads, eps and theta positive.
  Status validate() const;
  std::string summary() const;  // a few lines for `orochi inspect`

  // Errors: invalid_argument (not a Qwen3-VL config, a field of the wrong type, values that fail
  // validate()), unsupported (a variant this engine does not run: hidden_act other than silu,
  // attention biases, a RoPE type other than "default").
  static Expected<TextConfig> from_json(const nlohmann::json& json);
  // Qwen3-VL-32B (MiniMax-H3's conditioner): 64 layers, hidden 5120, 64 q / 8 kv heads of 128,
  // SwiGLU 25600, vocab 151936, theta 5e6, sections [24, 20, 20], untied.
  static TextConfig qwen3vl_32b();
};

}  // namespace orochi::qwen3vl
