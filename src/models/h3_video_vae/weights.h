// The video VAE decoder's weights as f32 host tensors, grouped the way the decode uses them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/checkpoint_naming.h"
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

// A video VAE component as given: a diffusers vae/ folder, or one .safetensors file (ComfyUI's
// models/vae file in the original naming, or a diffusers-named file). Its config is the folder's
// config.json or one beside the file, else the released values (VideoVaeConfig's defaults) with the
// latents' statistics from the file (checkpoint_naming.h: take_file_latents). The naming is told by
// the keys (detect_vae_naming). No weight is read yet.
struct VaeComponent {
  weights::Checkpoint weights;
  VideoVaeConfig config;
  VaeNaming naming = VaeNaming::kDiffusers;
  std::string config_from;  // the config.json, or "the released video VAE config (latents from the file)"
  std::string describe() const;  // "<path>: original (ComfyUI) names; config from ..."
};
Expected<VaeComponent> open_video_vae(const std::string& path);

// Loads the decoder of open_video_vae(path). `encoder.*` / `quant_conv.*` keys are skipped (decode
// only), as are a file's latents and an original file's decoder.mask_token; any other unknown key, a missing
// key or a wrong shape is an error that names it.
Expected<DecoderWeights> load_decoder_weights(const std::string& path);
Expected<DecoderWeights> load_decoder_weights(const VaeComponent& vae);

// `spec`'s tensor in `ckpt`, checked against its shape and for a float dtype, as f32: how the
// decoder's and the encoder's loaders read every parameter.
Expected<Tensor> read_parameter_f32(const weights::Checkpoint& ckpt, const ParamSpec& spec);

}  // namespace orochi::h3vae
