// The audio VAE decoder's weights as f32 host tensors, weight norm already folded (w = g·v/‖v‖),
// grouped the way the decoder runs them. The encoder's are in encoder_weights.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/checkpoint_naming.h"
#include "models/h3_audio_vae/config.h"
#include "models/h3_audio_vae/parameters.h"

namespace orochi::weights {
struct ModelFolder;
}

namespace orochi::h3_audio {

struct ConvWeights {
  Tensor weight;  // Conv1d [Cout, Cin, K]; ConvTranspose1d [Cin, Cout, K]
  Tensor bias;    // [Cout]; undefined when the layer has none
  const Tensor* bias_or_null() const { return bias.defined() ? &bias : nullptr; }
};

// Alias-free SnakeBeta: upsample 2x, SnakeBeta, downsample 2x.
struct AliasFreeSnakeWeights {
  Tensor log_alpha, log_beta;     // [C], SnakeBeta's parameters as stored (log scale)
  Tensor up_filter, down_filter;  // [12] Kaiser-sinc low-pass taps, from the checkpoint
};

// BigVGAN AMP block: for each dilation d, x += conv2(act(conv1_d(act(x)))).
struct AmpBlockWeights {
  int64_t kernel = 0;
  std::vector<int64_t> dilations;
  std::vector<ConvWeights> convs1, convs2;  // one per dilation
  std::vector<AliasFreeSnakeWeights> acts;  // 2 per dilation: before conv1, before conv2
};

struct UpsampleStageWeights {
  int64_t rate = 0, kernel = 0;
  ConvWeights up;                       // ConvTranspose1d C -> C/2, stride rate, padding (kernel − rate)/2
  std::vector<AmpBlockWeights> blocks;  // averaged
};

struct AudioDecoderWeights {
  AudioVaeConfig config;
  ConvWeights dec_in_proj;  // [latent_dim, latent_channels, 1]
  ConvWeights conv_pre;     // [decoder_dim, latent_dim, 7]
  std::vector<UpsampleStageWeights> stages;
  AliasFreeSnakeWeights act_post;
  ConvWeights conv_post;  // [1, C_last, 7], no bias
};

// Weight norm with dim 0 (torch.nn.utils.weight_norm): w[o] = v[o] · g[o] / ‖v[o]‖, the norm over
// every dim but the first. g [O, 1, 1] (or [O]), v [O, ...] -> [O, ...].
Tensor fold_weight_norm(const Tensor& g, const Tensor& v);

// Produces each checkpoint tensor by name and expected shape (a checkpoint, a generator).
using TensorSource = std::function<Expected<Tensor>(const TensorSpec&)>;
// `naming` kFolded: the weight-normed convolutions come as plain `weight` tensors (checkpoint_naming.h).
Expected<AudioDecoderWeights> assemble_decoder(const AudioVaeConfig& config, const TensorSource& source,
                                               AudioVaeNaming naming = AudioVaeNaming::kWeightNorm);

// A folder's tensors as a TensorSource: each checked against its spec's shape (naming the key, both
// shapes and the folder) and converted to f32 whatever dtype the file stores. `model` must outlive it.
TensorSource checked_folder_source(const weights::ModelFolder& model);

// An audio VAE component as given: a diffusers audio_vae/ folder (the original release's names), or
// one .safetensors file in either naming (ComfyUI's folds the weight norm). Its config is the
// folder's config.json or one beside the file, else the released values (AudioVaeConfig's defaults)
// with the latents' statistics from the file (a single file with neither is refused). No weight is read.
struct AudioVaeComponent {
  weights::Checkpoint weights;
  AudioVaeConfig config;
  AudioVaeNaming naming = AudioVaeNaming::kWeightNorm;
  std::string config_from;  // the config.json, or "the released audio VAE config (latents from the file)"
  std::string describe() const;
};
Expected<AudioVaeComponent> open_audio_vae(const std::string& path);

// Loads the decoder of open_audio_vae(path). Missing or unknown keys are named, a wrong shape names
// the key and both shapes; encoder tensors and a file's latents are not decoder keys.
Expected<AudioDecoderWeights> load_decoder(const std::string& path);
Expected<AudioDecoderWeights> load_decoder(const AudioVaeComponent& vae);
// A checkpoint's tensors as a TensorSource, checked and converted as checked_folder_source does.
TensorSource checked_source(const weights::Checkpoint& checkpoint, const std::string& config_from);

}  // namespace orochi::h3_audio
