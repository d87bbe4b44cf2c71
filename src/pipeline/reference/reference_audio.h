// A reference soundtrack or clip onto the audio VAE's input, as diffusers' `_normalize_audio_condition`
// and the audio VAE's encode do it (../shared/docs/REF2VA.md §3): truncated at the native rate to the
// target's duration, mono repeated to stereo, resampled once to 32 kHz with torchaudio's sinc-Hann
// kernel, then right-padded with zeros to a whole number of 800-sample hops.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::pipeline::reference {

inline constexpr int64_t kAudioVaeRate = 32000;
inline constexpr int64_t kAudioVaeHop = 800;

// Samples per channel a reference of `samples` native samples at `sample_rate` becomes at 32 kHz:
// min(samples, int(max_seconds * sample_rate)) kept, then resampled (0 when nothing is kept).
// Rates must be positive. The planner sizes references from their headers with it.
int64_t reference_audio_samples(int64_t samples, int64_t sample_rate, double max_seconds);

// f32 [C, N] (C = 1 or 2) at `sample_rate` -> f32 [2, N'] at 32 kHz, N' = ceil(min(N, int(max_seconds *
// sample_rate)) * 32000 / sample_rate). invalid_argument for another channel count (D refuses more
// than 2; downmix first), a rate <= 0, max_seconds <= 0 or nothing left after the truncation.
Expected<Tensor> normalize_reference_audio(const Tensor& waveform, int64_t sample_rate, double max_seconds);

// f32 [C, N] -> f32 [C, ceil(N / hop) * hop], the tail zero (the audio VAE encoder's own padding).
Expected<Tensor> pad_to_hop(const Tensor& waveform, int64_t hop = kAudioVaeHop);

}  // namespace orochi::pipeline::reference
