// The two namings of an audio VAE checkpoint. The original release and diffusers share theirs
// (parameters.h): weight-normed convolutions as `weight_g` / `weight_v` pairs. ComfyUI's models/vae
// file keeps the same module names with the weight norm folded into plain `weight` tensors
// (w = g·v/‖v‖, as fold_weight_norm computes it), and adds the latents' statistics as
// `latents_mean` / `latents_std` [C]. Told apart by the keys, never assumed.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "models/h3_audio_vae/config.h"
#include "models/h3_audio_vae/parameters.h"
#include "weights/checkpoint.h"

namespace orochi::h3_audio {

enum class AudioVaeNaming { kWeightNorm, kFolded };
const char* audio_vae_naming_name(AudioVaeNaming naming);  // "original / diffusers (weight norm)", "ComfyUI (folded)"

// From the decoder's first convolution (decoder.conv_pre.weight_v or .weight), else the encoder's;
// invalid_argument naming the file and its first keys when it is neither.
Expected<AudioVaeNaming> detect_audio_vae_naming(const weights::Checkpoint& checkpoint);

// `specs` as a folded file names them: every weight_g dropped, every weight_v called weight (same shape).
std::vector<TensorSpec> folded_tensors(const std::vector<TensorSpec>& specs);

// True for the latents' statistics a ComfyUI file stores beside the weights.
bool is_latents_key(const std::string& name);

// The latents' statistics of the file put into `config` (f32 [latent_channels] each): a config that
// has its own (from a config.json) must agree within fp16 rounding, else invalid_argument naming
// `what`; a file without them leaves `config` as it is.
Status take_file_latents(const weights::Checkpoint& checkpoint, AudioVaeConfig& config, const std::string& what);

}  // namespace orochi::h3_audio
