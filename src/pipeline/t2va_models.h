// The three models a t2va run decodes with on the CPU: the H3 denoiser, the video VAE decoder and
// the audio VAE decoder, either loaded from a diffusers-layout pipeline folder or generated (the
// built-in tiny demo model, so a first-time user gets a video without a checkpoint), and the VAEs'
// encoders for fl2va keyframes and ref2va references.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "models/h3/weights.h"
#include "models/h3_audio_vae/encoder_weights.h"
#include "models/h3_audio_vae/weights.h"
#include "models/h3_video_vae/encoder_weights.h"
#include "models/h3_video_vae/weights.h"

namespace orochi::pipeline {

struct T2vaModels {
  std::string name;  // what produced the weights, for reports
  bool demo = false;
  h3::H3Weights transformer;
  h3vae::DecoderWeights video_vae;
  h3_audio::AudioDecoderWeights audio_vae;
  // The video VAE's encoder (fl2va keyframes): the demo's is generated with it; a checkpoint's is
  // read when a request first needs it (load_video_encoder).
  std::optional<h3vae::EncoderWeights> video_encoder;
  // The audio VAE's encoder (ref2va soundtracks and clips): the demo's is generated with it.
  std::optional<h3_audio::AudioEncoderWeights> audio_encoder;
};

// The built-in demo: H3Config::tiny_demo with VAEs of the real geometry (16x spatial, 4x temporal,
// 17-frame clips, 32 kHz audio at 800 samples per latent) but a few channels wide; random weights
// drawn from `seed`; its video encoder is the real causal CNN's structure, a few channels per level,
// its audio encoder the real DAC trunk (rates 2, 4, 4, 5, 5) from 4 channels, with its attention.
// Decodes a 5 s clip in seconds on a laptop CPU. The output is noise-like: the
// weights are random, the pipeline around them is the real one.
T2vaModels demo_t2va_models(uint64_t seed);

// The encoder half of the video VAE component `vae` (a vae/ folder or a single file: fl2va keyframes,
// ref2va references), checked against the decoder's latent channels. not_found naming the path when
// there is none; the loader's error (naming the key) for one without encoder weights.
Expected<h3vae::EncoderWeights> load_video_encoder(const std::string& vae, const T2vaModels& models);

// Loads the denoiser, the video VAE and the audio VAE of the model folder `root`, either layout
// (h3::model_folder_parts: diffusers transformer/, vae/, audio_vae/; the release's FL2VA/ or Ref2VA/
// transformer/, video_vae/, audio_vae/; the denoiser is the folder's opening partition). A missing
// folder is not_found naming it and what it holds.
// `transformer_as_stored`: the denoiser's weights stay in the checkpoint's dtype (for a GPU run,
// whose upload converts; see h3::load_weights).
Expected<T2vaModels> load_t2va_models(const std::string& root, bool transformer_as_stored = false);

// The three agree where they meet: the denoiser's video channels (in_channels) are the video VAE's
// latent channels, its audio channels the audio VAE's; the VAE geometry is the pipeline's (16x
// spatial = 2x2 patches over 32 px, 4x temporal, 800 samples per latent at 32 kHz).
Status check_t2va_models(const T2vaModels& models);

}  // namespace orochi::pipeline
