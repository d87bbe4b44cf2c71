// The audio VAE's checkpoint tensors (decoder and encoder), by name and shape. The names are the
// original release's and diffusers' alike (conversion is a passthrough): weight-normed convolutions as
// `weight_g` [Cout or Cin, 1, 1] / `weight_v` pairs, and the alias-free activations' Kaiser
// `filter` buffers [1, 1, 12].
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/h3_audio_vae/config.h"

namespace orochi::h3_audio {

struct TensorSpec {
  std::string name;  // e.g. "decoder.resblocks.4.convs1.2.weight_v"
  Shape shape;
};

// Taps of the anti-aliasing filters (diffusers' Activation1d default; the checkpoint stores them).
inline constexpr int64_t kAliasFreeTaps = 12;
inline constexpr int64_t kAliasFreeRatio = 2;

// The DAC encoder's fixed shape: each block's residual units (dilations 1, 3, 9, kernel 7), and the
// pre_block's GeGLU width (out_dim · 2).
inline constexpr int64_t kEncoderResidualUnits = 3;
inline constexpr int64_t kEncoderResidualKernel = 7;
inline constexpr int64_t kEncoderDilations[kEncoderResidualUnits] = {1, 3, 9};
inline constexpr int64_t kPreBlockMlpRatio = 2;

// Every tensor the decoder reads (dec_in_proj and decoder.*), in a stable order.
std::vector<TensorSpec> decoder_tensors(const AudioVaeConfig& config);

// Every tensor the encoder reads (encoder.*, pre_block.*, mean_proj.*), in a stable order. The
// unused posterior head logs_proj.* is not among them. Snake alphas are [1, C, 1]; the attention's
// zero_k_bias is a buffer the checkpoint stores (and the reference adds) like q_bias and v_bias.
std::vector<TensorSpec> encoder_tensors(const AudioVaeConfig& config);

// Prefixes of the encoder-side tensors a full checkpoint also holds; decoding ignores them.
bool is_encoder_tensor(const std::string& name);

}  // namespace orochi::h3_audio
