// The audio VAE decoder's weights in one GPU arena, f32, in the layouts the CUDA ops take
// (backends/cuda/ops_audio.h): Conv1d as [Cout, K·Cin], ConvTranspose1d as [K·Cout, Cin], conv_post
// as stored [1, Cin, K]. Weight norm is folded on the host before upload (weights.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_audio_vae/config.h"
#include "models/h3_audio_vae/weights.h"

namespace orochi::h3_audio::gpu {

struct GpuConv {
  Tensor weight;  // GEMM layout (see above)
  Tensor bias;    // [Cout]; undefined when the layer has none
  const Tensor* bias_or_null() const { return bias.defined() ? &bias : nullptr; }
};

struct GpuSnake {
  Tensor log_alpha, log_beta;     // [C]
  Tensor up_filter, down_filter;  // [12]
};

struct GpuAmpBlock {
  int64_t kernel = 0;
  std::vector<int64_t> dilations;
  std::vector<GpuConv> convs1, convs2;
  std::vector<GpuSnake> acts;  // 2 per dilation
};

struct GpuStage {
  int64_t rate = 0, kernel = 0;
  GpuConv up;
  std::vector<GpuAmpBlock> blocks;
};

struct GpuAudioDecoderWeights {
  GpuConv dec_in_proj, conv_pre;
  std::vector<GpuStage> stages;
  GpuSnake act_post;
  Tensor conv_post;  // [1, C_last, 7], no bias
};

// Bytes of the weight arena for `config` (every tensor rounded up to the arena's alignment).
size_t weight_arena_bytes(const AudioVaeConfig& config);

// Every tensor of the config's shapes, allocated from `arena` (contents undefined).
Expected<GpuAudioDecoderWeights> allocate_weights(const AudioVaeConfig& config, cuda::DeviceArena& arena);

// Copies host weights (same config shapes) into allocated device weights, relaid for the GEMMs.
Status upload_weights(const AudioDecoderWeights& host, const GpuAudioDecoderWeights& device, cudaStream_t stream);

// Random weights generated on the device (cuda::fill_normal, one Philox stream per tensor), scaled
// so the signal stays O(1) through the 7 stages: convolutions N(0, 1/fan_in) (the AMP blocks'
// second convolutions 0.3x that std, so the residual sums do not grow), biases N(0, 0.01²),
// SnakeBeta logs N(0, 0.1²), and every filter the Kaiser-sinc low-pass of the release.
Status fill_random_weights(const AudioVaeConfig& config, const GpuAudioDecoderWeights& device, uint64_t seed,
                           cudaStream_t stream);

// BigVGAN's kaiser_sinc_filter1d(cutoff 0.25, half_width 0.3, 12 taps): the low-pass every
// alias-free activation of the release stores for its 2x resampling. Sums to 1.
Tensor kaiser_sinc_lowpass_filter();

}  // namespace orochi::h3_audio::gpu
