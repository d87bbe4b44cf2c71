// What the audio VAE encode does around its network, shared by the CPU reference and the GPU path:
// checking the waveform, stereo as the ref2va pipeline makes it, the zero right-padding to the
// hop, and the latent normalization.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/config.h"

namespace orochi::h3_audio {

// Errors unless `waveform` is a float [B, N] with 1 <= B and 1 <= N (one mono item per row).
Status check_mono_batch(const Tensor& waveform, const char* what);

// Latents per item for N samples: ceil(N / hop).
int64_t latents_for_samples(const AudioVaeConfig& config, int64_t samples);

// [B, N] -> f32 [B, 1, hop·A], zeros after the N samples (F.pad's right padding in encode).
Tensor pad_to_hop(const AudioVaeConfig& config, const Tensor& waveform);

// A reference soundtrack [channels, N] with 1 or 2 channels -> f32 [2, N]; mono repeated.
// Errors: not a 2-D float tensor, no samples, or more than 2 channels (with what to do).
Expected<Tensor> reference_stereo(const Tensor& waveform);

// (z − mean) / std per latent channel, with the statistics of config.json (two roundings, as the
// pipeline writes it): latents [B, A, C] (any float dtype) -> f32 [B, A, C].
// Errors: the config has no latents_mean / latents_std; the shape does not match.
Expected<Tensor> normalize(const AudioVaeConfig& config, const Tensor& latents);

}  // namespace orochi::h3_audio
