// The video VAE decoder's weights as f32 host tensors, grouped the way the decode uses them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/config.h"
#include "models/h3_video_vae/parameters.h"
#include "weights/checkpoint.h"

namespace orochi::h3vae {

struct Linear {
  Tensor weight;  // [out, in]
  Tensor bias;    // [out]
};

struct DecoderBlockWeights {
  Tensor norm1, norm2;             // [D] RMSNorm weights
  Linear to_q, to_k, to_v, to_out; // [D, D] + bias
  Tensor scale1, scale2;           // [D] LayerScale
  Linear ff_in;                    // [2F, D], rows [value; gate]
  Linear ff_out;                   // [D, F]
};

struct DecoderWeights {
  VideoVaeConfig config;
  Linear post_quant_conv;          // [C, C] (the 1x1x1 conv kernel viewed as a matrix)
  Linear proj_in;                  // [D, C]
  Tensor register_tokens;          // [R, D]
  std::vector<DecoderBlockWeights> blocks;
  Tensor norm_out_weight, norm_out_bias;  // [D]
  Linear proj_out;                 // [out_ch * pt * p * p, D]
};

// Produces each parameter (by diffusers name and shape) from somewhere: a checkpoint, a generator.
using ParamSource = std::function<Expected<Tensor>(const ParamSpec&)>;

Expected<DecoderWeights> assemble_decoder_weights(const VideoVaeConfig& config, const ParamSource& source);

// Loads a diffusers vae/ folder (config.json + safetensors). `encoder.*` / `quant_conv.*` keys are
// skipped (decode only); any other unknown key, a missing key or a wrong shape is an error that
// names it. The original release's naming (decoder.x_embedder, fused to_qkv) is refused with advice.
Expected<DecoderWeights> load_decoder_weights(const std::string& folder);

// `spec`'s tensor in `ckpt`, checked against its shape and for a float dtype, as f32: how the
// decoder's and the encoder's loaders read every parameter.
Expected<Tensor> read_parameter_f32(const weights::Checkpoint& ckpt, const ParamSpec& spec);

}  // namespace orochi::h3vae
