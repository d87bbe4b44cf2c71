// The MiniMax-H3 audio VAE encode path on CPU (fp32, the readable reference): a mono waveform at
// the model's rate (32 kHz released) is right-padded with zeros to a multiple of the hop (800), run
// through the DAC trunk, the attention projection `pre_block` and mean_proj, and the posterior
// mean is taken (the pipeline never samples it). Stereo is two batch items, as in the decoder.
// The reference-audio chain before this (decode, truncation to the target's duration at the
// native rate, the resampler) is the media readers'; this takes f32 [channels, N] at 32 kHz.
#pragma once

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/decoder.h"
#include "models/h3_audio_vae/encoder_input.h"  // normalize
#include "models/h3_audio_vae/encoder_weights.h"

namespace orochi::h3_audio {

// Mono waveforms [B, N] (any float dtype, N >= 1) -> posterior mean rows f32 [B, A, latent_channels],
// A = ceil(N / hop). The observer sees, in diffusers' layouts: "padded" [B, 1, hop·A],
// "encoder.conv_in", "encoder.block.<i>.unit.<u>", "encoder.block.<i>" and "encoder" [B, C, L];
// "pre_block.attn", "pre_block.proj", "pre_block.mlp" and "pre_block" [B, A, C]; "mean" [B, C, A].
// Errors: a waveform that is not float [B, N] with B >= 1 and N >= 1.
Expected<Tensor> encode(const AudioEncoderWeights& weights, const Tensor& waveform,
                        const AudioObserver& observer = nullptr);

// A reference soundtrack as the ref2va pipeline encodes it: f32 [channels, N] at the model's rate
// with 1 or 2 channels (mono is repeated to stereo, more channels are refused as the reference
// does) -> normalized latent rows [2, A, C]; view them as [2·A, C] for the packed sequence's
// channel-major audio rows. The observer sees encode()'s intermediates and "normalized".
Expected<Tensor> encode_reference_audio(const AudioEncoderWeights& weights, const Tensor& waveform,
                                        const AudioObserver& observer = nullptr);

}  // namespace orochi::h3_audio
