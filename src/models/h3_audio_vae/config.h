// MiniMax-H3 audio VAE hyper-parameters, read from a diffusers `config.json`
// (AutoencoderKLMiniMaxH3Audio). Defaults are the released model's values: a mono 32 kHz model,
// hop 800 (40 latents/s), 32 latent channels, BigVGAN decoder 1024 -> 8 channels.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace orochi::h3_audio {

struct AudioVaeConfig {
  int64_t encoder_dim = 64;
  std::vector<int64_t> encoder_rates = {2, 4, 4, 5, 5};
  int64_t latent_dim = 2048;     // decoder input width (dec_in_proj output)
  int64_t latent_channels = 32;  // diffusion latent width
  int64_t num_attention_heads = 8;
  int64_t decoder_dim = 1024;  // BigVGAN's first width, halved at every stage
  std::vector<int64_t> decoder_rates = {5, 5, 2, 2, 2, 2, 2};
  std::vector<int64_t> decoder_kernel_sizes = {9, 9, 4, 4, 4, 4, 4};
  std::vector<int64_t> resblock_kernel_sizes = {3, 7, 11};
  std::vector<std::vector<int64_t>> resblock_dilation_sizes = {{1, 3, 5}, {1, 3, 5}, {1, 3, 5}};
  int64_t sampling_rate = 32000;
  // Per-channel latent statistics (the pipeline denormalizes z·std + mean before decoding);
  // empty when config.json has none.
  std::vector<float> latents_mean, latents_std;

  int64_t num_stages() const { return static_cast<int64_t>(decoder_rates.size()); }
  // Waveform samples per latent: the product of the decoder rates (800 released).
  int64_t hop_length() const;
  // Channels after upsampling stage i: decoder_dim / 2^(i+1).
  int64_t stage_channels(int64_t stage) const { return decoder_dim >> (stage + 1); }
  // The DAC encoder: one block per encoder rate, block i outputs encoder_dim · 2^(i+1) channels.
  int64_t num_encoder_blocks() const { return static_cast<int64_t>(encoder_rates.size()); }
  int64_t encoder_block_channels(int64_t block) const { return encoder_dim << (block + 1); }
  // The encoder's samples per latent: the product of the encoder rates (800 released; validate()
  // makes it equal to hop_length()).
  int64_t encoder_hop_length() const;

  // What diffusers' constructor enforces (matching encoder/decoder hop, latent_dim a multiple of
  // latent_channels) plus what a length-exact decode needs (odd AMP kernels, upsampler kernel − rate
  // even and >= 0, decoder_dim divisible down to the last stage).
  Status validate() const;
  // What encoding needs beyond validate(): 1 to 16 encoder rates, each >= 2, widths that stay
  // below 2^24, and latent_dim divisible into num_attention_heads heads (diffusers' reshape would
  // fail otherwise).
  Status validate_encoder() const;
  static Expected<AudioVaeConfig> from_json(const nlohmann::json& json);
};

}  // namespace orochi::h3_audio
