// The MiniMax-H3 audio VAE decoder on one GPU, f32 throughout (the reference decodes in fp32; the
// GEMMs run without TF32), the same math as the CPU h3_audio::decode: dec_in_proj, conv_pre, the
// BigVGAN stages (transposed-conv upsampler, then the mean of the AMP blocks with alias-free
// SnakeBeta), act_post, conv_post and the clamp to [-1, 1].
//
//   auto dec = GpuAudioDecoder::create(config, device, max_latents);
//   dec->upload(host_weights)  or  dec->init_random(seed)
//   dec->decode(latents)   // host f32 [B, A, C] denormalized -> host f32 [B, hop·A]
//
// Memory is planned: one arena for the weights (about 260 MB for the release), one for the
// activations sized at create() for up to max_batch · max_latents latent rows (about 170 MB for 2 x
// 207); decode() allocates no device memory. Activations are time-major [B, L, C] so every
// convolution is an im2col + f32 GEMM (backends/cuda/ops_audio.h).
//
// Not thread-safe: one decoder per GPU and thread.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "models/h3_audio_vae/cuda/gpu_audio_weights.h"

namespace orochi::h3_audio::gpu {

struct AudioBuffers;  // gpu_audio_decoder.cpp

// Bytes of the activation arena for decodes of up to `rows` = B · A latent rows in all.
size_t audio_activation_bytes(const AudioVaeConfig& config, int64_t rows);

class GpuAudioDecoder {
 public:
  // A stream, the GEMM runner and both arenas on GPU `device`. Decodes take any batch B and
  // length A with B · A <= max_batch · max_latents (stereo is B = 2).
  static Expected<std::unique_ptr<GpuAudioDecoder>> create(const AudioVaeConfig& config, int device,
                                                           int64_t max_latents, int64_t max_batch = 2);
  ~GpuAudioDecoder();
  GpuAudioDecoder(const GpuAudioDecoder&) = delete;
  GpuAudioDecoder& operator=(const GpuAudioDecoder&) = delete;

  // Host f32 weights (load_decoder / assemble_decoder, weight norm folded) of the create() config.
  Status upload(const AudioDecoderWeights& host);
  // Random weights of the config's shapes, generated on the GPU (gpu_audio_weights.h).
  Status init_random(uint64_t seed);
  bool has_weights() const { return has_weights_; }

  // Denormalized latents, host [B, A, latent_channels] (any float dtype) -> host f32 [B, hop · A]
  // in [-1, 1], as h3_audio::decode.
  Expected<Tensor> decode(const Tensor& latents);

  const AudioVaeConfig& config() const { return config_; }
  int device() const { return device_; }
  int64_t max_rows() const { return max_rows_; }
  cudaStream_t stream() const { return stream_; }
  size_t weight_bytes() const;
  size_t activation_bytes_used() const;

 private:
  GpuAudioDecoder() = default;
  // One upsampling stage from buffer x [B, Lin, C] (consumed) to x [B, rate·Lin, C/2].
  Status stage(const GpuStage& s, int64_t B, int64_t Lin, int64_t Cin);
  Status snake(const GpuSnake& a, const Tensor& x, const Tensor& out);

  AudioVaeConfig config_;
  int device_ = 0;
  int64_t max_rows_ = 0;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, activation_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  GpuAudioDecoderWeights weights_;
  bool has_weights_ = false;
  std::unique_ptr<AudioBuffers> buf_;
};

}  // namespace orochi::h3_audio::gpu
