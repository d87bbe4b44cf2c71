// The original release's audio_vae/ folder (MiniMax-AI/MiniMax-H3 FL2VA/ and Ref2VA/, MODELS_H3.md
// §7): config.json (class MiniMaxH3AudioVAE: the latents' statistics, the file names), metadata.json
// ({"metadata": {"kwargs": the DAC constructor's arguments}}) and the fp32 model.safetensors, whose
// names are diffusers' own. Read into the fields of a diffusers audio_vae/config.json, so one
// AudioVaeConfig::from_json reads both layouts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace orochi::h3_audio {

// A folder whose config.json names class MiniMaxH3AudioVAE (the file decides, never the folder's name).
bool is_release_audio_vae_folder(const std::string& folder);

struct ReleaseAudioVaeFolder {
  nlohmann::json config;     // diffusers AutoencoderKLMiniMaxH3Audio field names
  std::string weights_file;  // <folder>/<source_safetensors_path>; may not exist
  std::string from;          // "<config.json> + <metadata.json>"
};

// metadata.json's kwargs: encoder_dim, encoder_rates, latent_dim, decoder_dim, decoder_rates,
// vae_latent_channels -> latent_channels, sample_rate -> sampling_rate; config.json's latents_mean /
// latents_std (and latent_channels, which must agree). The release's code fixes the BigVGAN kernels,
// its AMP blocks and the 8 attention heads for 32 kHz; those take the released values unless the
// kwargs state decoder_kernel_sizes / resblock_kernel_sizes / resblock_dilation_sizes /
// num_attention_heads (small test models do). Refused, naming the file: decoder_type other than
// bigvgan, attn_proj off, a missing metadata.json or latents statistics.
Expected<ReleaseAudioVaeFolder> read_release_audio_vae_folder(const std::string& folder);

}  // namespace orochi::h3_audio
