// The audio VAE encoder's weights as f32 host tensors, weight norm folded (w = g·v/‖v‖), grouped
// the way the encoder runs them: the DAC trunk, the attention projection `pre_block`, mean_proj.
// The unused log-std head (logs_proj) and the decoder are not loaded.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/config.h"
#include "models/h3_audio_vae/weights.h"

namespace orochi::h3_audio {

// DAC residual unit: x + conv_1x1(snake(conv_k7_dilated(snake(x)))).
struct ResidualUnitWeights {
  int64_t dilation = 1;
  Tensor alpha1;      // [C] Snake before the dilated conv
  ConvWeights conv1;  // [C, C, 7], padding 3·dilation
  Tensor alpha2;      // [C] Snake before the 1x1 conv
  ConvWeights conv2;  // [C, C, 1]
};

// Three residual units at C/2 channels, then Snake and the strided conv C/2 -> C
// (kernel 2·stride, padding ceil(stride/2)).
struct EncoderBlockWeights {
  int64_t stride = 1;
  std::vector<ResidualUnitWeights> units;
  Tensor alpha;      // [C/2]
  ConvWeights down;  // [C, C/2, 2·stride]
};

struct LayerNormWeights {
  Tensor weight, bias;  // [C] each (nn.LayerNorm, eps 1e-5)
};

struct LinearWeights {
  Tensor weight;  // [N, K]
  Tensor bias;    // [N]
};

// pre_block: h = proj(norm3(x)) + attn(norm1(x)); h += mlp(h), the GeGLU MLP normed twice
// (norm2, then the MLP's own norm), as the reference nests it.
struct PreBlockWeights {
  int64_t num_heads = 0;
  LayerNormWeights norm1, norm2, norm3, mlp_norm;
  Tensor qkv_weight;        // [3·in, in], no bias of its own
  Tensor qkv_bias;          // [3·in] = q_bias | zero_k_bias | v_bias, concatenated as the reference does
  LinearWeights attn_proj;  // [out, out], after the head pooling
  LinearWeights proj;       // [out, in], the norm3 branch
  LinearWeights w0, w1;     // [2·out, out]: gelu_tanh(w0 x) · w1 x
  LinearWeights w2;         // [out, 2·out]
};

struct AudioEncoderWeights {
  AudioVaeConfig config;
  ConvWeights conv_in;  // [encoder_dim, 1, 7]
  std::vector<EncoderBlockWeights> blocks;
  Tensor alpha_out;      // [trunk channels]
  ConvWeights conv_out;  // [latent_dim, trunk, 3]
  PreBlockWeights pre_block;
  ConvWeights mean_proj;  // [latent_channels, latent_channels, 1]
};

// Builds the encoder from named tensors (a checkpoint, a generator), each asked for by name and
// expected shape (encoder_tensors). Errors: the config cannot encode (validate_encoder), or the
// source's first failure. `naming` kFolded: plain `weight` tensors for the weight-normed convolutions.
Expected<AudioEncoderWeights> assemble_encoder(const AudioVaeConfig& config, const TensorSource& source,
                                               AudioVaeNaming naming = AudioVaeNaming::kWeightNorm);

// Loads the encoder of an audio VAE component (open_audio_vae: an audio_vae/ folder or a single file
// in either naming). Missing or unknown encoder-side keys are named, a wrong shape names the key and
// both shapes; the decoder's tensors and logs_proj, if present, are ignored.
Expected<AudioEncoderWeights> load_encoder(const std::string& path);

}  // namespace orochi::h3_audio
