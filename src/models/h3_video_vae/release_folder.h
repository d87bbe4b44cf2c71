// The original release's video_vae/ folder (MiniMax-AI/MiniMax-H3 FL2VA/ and Ref2VA/, MODELS_H3.md
// §7): a wrapper config.json (class MiniMaxH3VideoVAE) holding the latents' statistics and the
// temporal / tiling numbers, and source/ with the autoencoder's own config.json (class
// AutoencoderKLLegacy) beside its fp32 weights (original names, checkpoint_naming.h). Read into the
// fields of a diffusers vae/config.json, so one VideoVaeConfig::from_json reads both layouts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace orochi::h3vae {

// A folder whose config.json names class MiniMaxH3VideoVAE (the file decides, never the folder's name).
bool is_release_vae_folder(const std::string& folder);

struct ReleaseVaeFolder {
  nlohmann::json config;     // diffusers AutoencoderKLMiniMaxH3 field names
  std::string weights_file;  // <folder>/<source_path>/<source_safetensors_path>; may not exist
  std::string from;          // "<wrapper config.json> + <source config.json>"
};

// The wrapper and source configs as one diffusers config. Mapped: embed_dim -> latent_channels (the
// wrapper's must agree), in_channels, out_ch -> out_channels, ch x ch_mult -> block_out_channels,
// num_res_blocks -> layers_per_block, space_down / time_down -> the downsample factors, padding_mode,
// vit_decoder_kwargs {num_layers, heads, dim_head, rope_theta, rope_dim_ratio, eps,
// num_register_tokens}, vae_clip_length -> clip_length, vae_token_drop -> token_drop, latents_mean /
// latents_std. What the release's code fixes rather than configures (GroupNorm 32 groups, eps 1e-6;
// the decoder FFN x4) takes those values unless the source config states norm_num_groups / norm_eps
// / vit_decoder_kwargs.ffn_mult (small test models do). Refused, naming the file and field: a
// variant the engine does not implement (2-D convs, a CNN decoder, a causal decoder, a non-causal
// encoder, non-ImageNet pixels, gated-off or non-SiLU FFN, LayerNorm blocks, z_channels !=
// embed_dim) and tiles other than the engine's 256 px with a 64 px minimum overlap.
Expected<ReleaseVaeFolder> read_release_vae_folder(const std::string& folder);

}  // namespace orochi::h3vae
