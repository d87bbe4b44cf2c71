// The MiniMax-H3 audio VAE encoder on one GPU, f32 throughout (the reference encodes in fp32 with
// TF32 off; the GEMMs here run without TF32), the same math as the CPU h3_audio::encode: the zero
// right-pad to the hop, the DAC trunk, pre_block (LayerNorms, causal attention pooled over heads,
// the GeGLU MLP) and mean_proj, giving the posterior mean.
//
//   auto enc = GpuAudioEncoder::create(config, device, max_samples);
//   enc->upload(host_weights)                     // load_encoder / assemble_encoder (or init_random(seed))
//   enc->encode(waveform)                         // host [B, N] mono items -> host f32 [B, A, C]
//   enc->encode_reference_audio(soundtrack)       // host [1 or 2, N] -> normalized rows [2, A, C]
//
// Memory is planned at create(): one arena for the weights (346 MB for the release), one for the
// activations of up to max_batch items of max_samples samples: three signal buffers of the largest
// [B, L, C] of the trunk (about 85 MB each for 2 x 5 s), the pre_block's rows and a fixed im2col
// scratch (kIm2colScratchFloats; the convolutions run in pieces that fit it). encode() allocates no
// device memory. Signals are time-major [B, L, C] (backends/cuda/ops_audio_encoder.h).
//
// Not thread-safe: one encoder per GPU and thread.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "models/h3_audio_vae/config.h"
#include "models/h3_audio_vae/encoder_memory.h"
#include "models/h3_audio_vae/encoder_weights.h"

namespace orochi::h3_audio::gpu {

struct EncoderBuffers;          // gpu_audio_encoder.cpp
struct GpuAudioEncoderWeights;  // gpu_audio_encoder.cpp

// The arenas' sizes (audio_encoder_weight_bytes, audio_encoder_activation_bytes) and the im2col
// scratch (kIm2colScratchFloats) are encoder_memory.h's: CPU arithmetic the planner shares.

class GpuAudioEncoder {
 public:
  // A stream, the GEMM runner and both arenas on GPU `device`. Encodes take up to max_batch items of
  // up to max_samples samples (stereo is 2 items). Errors: a config the encoder cannot run
  // (validate_encoder), sizes that are not positive or that the attention kernel cannot hold, or
  // the GPU's memory.
  static Expected<std::unique_ptr<GpuAudioEncoder>> create(const AudioVaeConfig& config, int device,
                                                           int64_t max_samples, int64_t max_batch = 2);
  ~GpuAudioEncoder();
  GpuAudioEncoder(const GpuAudioEncoder&) = delete;
  GpuAudioEncoder& operator=(const GpuAudioEncoder&) = delete;

  // Host f32 weights of the create() config (weight norm folded), relaid for the GEMMs.
  Status upload(const AudioEncoderWeights& host);
  // Random weights of create()'s config (encoder_random.h's rule, --random-weights benchmarks): each
  // tensor drawn on the GPU in the weight arena, folded and laid out as upload() does host weights.
  Status init_random(uint64_t seed);
  bool has_weights() const { return has_weights_; }

  // Mono items, host [B, N] (any float dtype) -> posterior mean rows, host f32 [B, A, latent_channels]
  // with A = ceil(N / hop), as h3_audio::encode.
  Expected<Tensor> encode(const Tensor& waveform);
  // A reference soundtrack, host [1 or 2, N] -> normalized rows [2, A, C], as
  // h3_audio::encode_reference_audio (mono repeated, more channels refused).
  Expected<Tensor> encode_reference_audio(const Tensor& waveform);

  const AudioVaeConfig& config() const { return config_; }
  int device() const { return device_; }
  int64_t max_samples() const { return max_samples_; }
  int64_t max_batch() const { return max_batch_; }
  cudaStream_t stream() const { return stream_; }
  size_t weight_bytes() const;
  size_t activation_bytes_used() const;
  // What create() reserved: the weight and activation arenas' capacities (the plan's figures).
  size_t reserved_bytes() const;

 private:
  GpuAudioEncoder();
  Status residual_unit(int unit_block, int unit, int64_t B, int64_t L, int64_t C);
  Status pre_block(int64_t B, int64_t A);

  AudioVaeConfig config_;
  int device_ = 0;
  int64_t max_samples_ = 0, max_batch_ = 0;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, activation_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  std::unique_ptr<GpuAudioEncoderWeights> weights_;
  bool has_weights_ = false;
  std::unique_ptr<EncoderBuffers> buf_;
};

}  // namespace orochi::h3_audio::gpu
