// The MiniMax-H3 audio VAE decode path on CPU: denormalize the audio latents, then dec_in_proj and
// the BigVGAN decoder, ending in a waveform clamped to [-1, 1]. The model is mono: stereo is two
// batch items. The packed sequence's audio rows are channel-major, [channels · A, C], so
// `rows.view({channels, A, C})` is what both functions take.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/weights.h"

namespace orochi::h3_audio {

// Sees every named intermediate ("dec_in_proj", "conv_pre", "stage.0.up", "stage.0.amp.1",
// "stage.0", "stage.0.amp.0.act.0", "act_post", "conv_post", "out"), each [B, C, L].
using AudioObserver = std::function<void(const std::string& name, const Tensor& value)>;

// z · std + mean per latent channel, with the statistics of config.json:
// latents [B, A, C] (any float dtype) -> f32 [B, A, C].
// Errors: the config has no latents_mean / latents_std; the shape does not match.
Expected<Tensor> denormalize(const AudioVaeConfig& config, const Tensor& latents);

// Denormalized latents [B, A, latent_channels] -> waveform f32 [B, hop · A] in [-1, 1]
// (hop = 800 for the released model: 32 kHz, 40 latents/s).
Expected<Tensor> decode(const AudioDecoderWeights& weights, const Tensor& latents,
                        const AudioObserver& observer = nullptr);

}  // namespace orochi::h3_audio
