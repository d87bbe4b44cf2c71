// The video VAE encoder's weights (MiniMaxH3VideoEncoder3d + quant_conv) as f32 host tensors, under
// their diffusers names, grouped the way the encode uses them.
//
// Key policy: a vae/ folder holds the whole autoencoder. Encoding needs `encoder.*` and
// `quant_conv.*`; every such key must be one listed by encoder_parameters and every listed one
// must be present. The decoder's keys are accepted and skipped (load_decoder_weights checks them).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/config.h"
#include "models/h3_video_vae/parameters.h"
#include "models/h3_video_vae/weights.h"

namespace orochi::h3vae {

struct Conv3dWeights {
  Tensor weight;  // [Cout, Cin, kt, kh, kw]
  Tensor bias;    // [Cout]
};

struct GroupNormWeights {
  Tensor weight, bias;  // [C]
};

// GN, SiLU, conv1 (3x3x3), GN, SiLU, conv2 (3x3x3), plus a 1x1x1 shortcut when channels change.
struct EncoderResnetWeights {
  GroupNormWeights norm1, norm2;
  Conv3dWeights conv1, conv2;
  Conv3dWeights shortcut;  // undefined when in == out channels
};

struct EncoderLevelWeights {
  std::vector<EncoderResnetWeights> resnets;
  Conv3dWeights downsample;  // 3x3x3 strided; undefined when both factors are 1
  int64_t spatial_stride = 1, temporal_stride = 1;
  bool has_downsample() const { return downsample.weight.defined(); }
};

struct EncoderWeights {
  VideoVaeConfig config;
  Conv3dWeights conv_in;                   // [C0, in, 3, 3, 3]
  std::vector<EncoderLevelWeights> levels;
  GroupNormWeights norm_out;               // [C_last]
  Conv3dWeights conv_out;                  // [2·latent, C_last, 3, 3, 3]
  Conv3dWeights quant_conv;                // [2·latent, 2·latent, 1, 1, 1]
};

// encoder.conv_in, encoder.down_blocks.i.{resnets.j.*, downsamplers.0.conv}, encoder.norm_out,
// encoder.conv_out, quant_conv: names and shapes for this config.
std::vector<ParamSpec> encoder_parameters(const VideoVaeConfig& config);

Expected<EncoderWeights> assemble_encoder_weights(const VideoVaeConfig& config, const ParamSource& source);

// Loads the encoder half of a video VAE component (open_video_vae: a diffusers vae/ folder or a
// single file in either naming). A missing or unknown encoder key, or a wrong shape, is an error
// that names it.
Expected<EncoderWeights> load_encoder_weights(const std::string& path);

}  // namespace orochi::h3vae
