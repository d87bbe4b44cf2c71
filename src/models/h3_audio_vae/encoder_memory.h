// The GPU audio VAE encoder's device memory as plain arithmetic on the config, with no CUDA: the
// planner's encode phase adds these up and GpuAudioEncoder::create (cuda/gpu_audio_encoder.h)
// allocates exactly them, so planned = allocated by construction.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/h3_audio_vae/config.h"

namespace orochi::h3_audio {

// The device arenas' alignment (cuda::DeviceArena::kAlignment; gpu_audio_encoder.cpp asserts they agree).
inline constexpr size_t kEncoderArenaAlignment = 256;

// Elements of the im2col scratch (64 MiB): a convolution's im2col is built and multiplied in pieces
// of as many output steps as fit.
inline constexpr int64_t kIm2colScratchFloats = int64_t{16} << 20;

// Elements of the activation buffers for up to `batch` mono items of `samples` samples: the padded
// waveform, each of the three signal buffers (the largest [B, L, C] of the trunk), the im2col scratch,
// and the pre_block's rows B·A.
struct EncoderBufferSizes {
  int64_t wave = 0, signal = 0, col = 0, rows = 0;
};
EncoderBufferSizes encoder_buffer_sizes(const AudioVaeConfig& config, int64_t samples, int64_t batch);

// `elements` floats rounded up to the arenas' alignment.
size_t encoder_buffer_bytes(int64_t elements);

// The weight arena for `config`'s encoder (f32, weight norm folded), and the activation arena for
// encodes of up to `max_batch` items of `max_samples` samples each (stereo is 2 items).
size_t audio_encoder_weight_bytes(const AudioVaeConfig& config);
size_t audio_encoder_activation_bytes(const AudioVaeConfig& config, int64_t max_samples, int64_t max_batch);

}  // namespace orochi::h3_audio
