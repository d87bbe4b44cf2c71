// MiniMax-H3 video VAE hyper-parameters, read from the diffusers `vae/config.json`
// (AutoencoderKLMiniMaxH3): the ViT decoder's and the causal 3-D CNN encoder's fields. Defaults are
// the released model's values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace orochi::h3vae {

struct VideoVaeConfig {
  int64_t latent_channels = 24;
  int64_t out_channels = 3;
  int64_t spatial_ratio = 16;   // product of spatial_downsample_factors: the decoder's patch size
  int64_t temporal_ratio = 4;   // product of temporal_downsample_factors: the decoder's patch_size_t
  int64_t decoder_num_layers = 36;
  int64_t decoder_num_attention_heads = 32;
  int64_t decoder_attention_head_dim = 64;
  int64_t decoder_num_register_tokens = 4;
  int64_t decoder_ffn_mult = 4;
  double decoder_rope_theta = 100.0;
  double decoder_rope_dim_ratio = 0.75;
  double decoder_norm_eps = 1e-5;
  int64_t clip_length = 17;     // pixel frames per encoder chunk
  int64_t token_drop = 3;       // trailing latents the encoder drops per chunk
  std::vector<float> latents_mean = std::vector<float>(24, 0.0f);
  std::vector<float> latents_std = std::vector<float>(24, 1.0f);

  // Encoder (MiniMaxH3VideoEncoder3d): one level per block_out_channels entry, each with
  // layers_per_block resnets and, when its factors multiply past 1, a strided downsampler.
  int64_t in_channels = 3;
  std::vector<int64_t> block_out_channels = {128, 256, 256, 512, 512, 1024};
  int64_t layers_per_block = 2;
  std::vector<int64_t> spatial_downsample_factors = {2, 2, 2, 2, 1, 1};   // per level
  std::vector<int64_t> temporal_downsample_factors = {1, 2, 2, 1, 1, 1};  // per level
  int64_t norm_num_groups = 32;
  double norm_eps = 1e-6;
  std::string spatial_padding_mode = "reflect";  // the only mode the encoder implements

  int64_t dim() const { return decoder_num_attention_heads * decoder_attention_head_dim; }
  int64_t ffn_inner() const { return dim() * decoder_ffn_mult; }
  // Channels of each head that RoPE rotates: int(head_dim * ratio), 3 axes x rotate-half pairs.
  int64_t rope_dim() const;
  int64_t rope_freqs_per_axis() const { return rope_dim() / 6; }
  // Pixels one token unpatchifies to: out_channels x temporal_ratio x spatial_ratio².
  int64_t patch_values() const { return out_channels * temporal_ratio * spatial_ratio * spatial_ratio; }

  // Temporal chunk geometry, derived as the reference derives it (17 / 4 / 3 -> 3, 5, 2, 5, 20).
  int64_t frame_pre_padding() const;  // leading pixel frames of a decoded chunk that are discarded
  int64_t tokens_chunk() const;       // latents each chunk owns
  int64_t token_overlap() const;      // context latents a chunk borrows from the next one
  int64_t frame_overlap() const;      // pixel frames cross-faded between consecutive chunks
  int64_t chunk_frames() const { return tokens_chunk() * temporal_ratio; }
  int64_t window_latents() const { return tokens_chunk() + token_overlap(); }
  int64_t window_frames() const { return window_latents() * temporal_ratio; }

  Status validate() const;
  // The encoder's own fields (validate() checks only the decoder's, so a decode-only config with
  // odd encoder fields still loads); the encoder's loader runs both.
  Status validate_encoder() const;
  std::string summary() const;

  // Reads the fields present in `json`; absent ones keep their defaults.
  static Expected<VideoVaeConfig> from_json(const nlohmann::json& json);
};

}  // namespace orochi::h3vae
