// The video VAE decoder's parameters under their diffusers names (the converted layout of
// AutoencoderKLMiniMaxH3), with shapes from the config.
//
// Key policy: a vae/ folder holds the whole autoencoder. We only decode, so `encoder.*` and
// `quant_conv.*` keys are accepted and skipped; every other key must be a decoder parameter
// listed here, and every listed parameter must be present.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "models/h3_video_vae/config.h"

namespace orochi::h3vae {

struct ParamSpec {
  std::string name;  // e.g. "decoder.transformer_blocks.3.attn.to_q.weight"
  Shape shape;
};

// post_quant_conv, then decoder.{proj_in, register_tokens, transformer_blocks.i.*, norm_out, proj_out}.
std::vector<ParamSpec> decoder_parameters(const VideoVaeConfig& config);

// True for the encoder half's keys (`encoder.*`, `quant_conv.*`), which decoding ignores.
bool is_encoder_key(std::string_view name);

}  // namespace orochi::h3vae
