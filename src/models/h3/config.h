// MiniMax-H3 transformer hyper-parameters, read from a diffusers `config.json`
// (MiniMaxH3Transformer3DModel). Defaults are the released model's values.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace orochi::h3 {

// Rows of each AdaLN table block: one per (timestep, modality) with modality tags below.
inline constexpr int kModalities = 3;
enum TokenTag : int64_t { kTagVideo = 0, kTagText = 1, kTagAudio = 2 };

struct H3Config {
  int64_t num_attention_heads = 56;
  int64_t attention_head_dim = 128;
  int64_t hidden_size = 5376;
  int64_t num_layers = 50;
  int64_t num_refiner_layers = 2;
  int64_t ffn_dim = 14336;
  int64_t in_channels = 24;
  int64_t audio_in_channels = 32;
  std::array<int64_t, 3> patch_size = {1, 2, 2};
  int64_t text_dim = 5120;
  int64_t freq_dim = 256;
  int64_t time_embed_hidden_dim = 5376;
  int64_t time_embed_dim = 2688;
  // G of a pruned checkpoint's curve-form AdaLN table (adaln_curve.h), whose r is time_embed_dim;
  // 0 (every config.json): the time MLP. Set from the table's shape, never from a config.
  int64_t adaln_curve_points = 0;
  int64_t rope_freq_dim = 16;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  double qk_norm_eps = 1e-5;
  double final_norm_eps = 1e-5;

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  int64_t video_patch_dim() const { return in_channels * patch_size[0] * patch_size[1] * patch_size[2]; }
  int64_t rotary_dim() const { return 6 * rope_freq_dim; }  // (t, h, w) x rotate-half pairs

  // Checks the values are usable (positive, rotary fits in a head, even sinusoid width).
  Status validate() const;
  std::string summary() const;  // one line per field group, for `orochi inspect`

  // Reads the fields present in `json`; absent ones keep their defaults.
  static Expected<H3Config> from_json(const nlohmann::json& json);
  // The small configuration of the built-in demo model (random weights, runs on any CPU).
  static H3Config tiny_demo();
};

}  // namespace orochi::h3
