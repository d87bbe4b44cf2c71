// The MiniMax-H3 video VAE encoder on one GPU: the causal 3-D CNN + quant_conv of each tile runs on
// the device (cuDNN convolutions on explicitly padded copies, our GroupNorm / pad / add kernels);
// the tiling, the stitch of the moments and the temporal chunking are the CPU encoder's own code
// (encoder.h, encode_moments_with), so their arithmetic is shared bit for bit.
//
//   auto enc = GpuVideoEncoder::create(config, device, max_tile_shape(config, options, F, H, W));
//   enc->upload(load_encoder_weights(folder))
//   enc->encode_moments(pixels, options)   // host f32 [3, F, H, W] -> host [2·latent, T, H/r, W/r]
//   enc->encode_condition(u8, options)     // the pipeline's whole recipe (encoder_posterior.h)
//
// Precision: fp32 activations and weights; the convolutions use TF32 tensor cores by default, as
// the reference does (torch's default cudnn.allow_tf32 = True on an fp32 encode), or plain fp32
// FMAs with ConvMath::kF32 (for comparisons with the CPU reference). GroupNorm statistics in fp32
// (two passes).
//
// Memory is planned: one arena for the weights (about 0.72 GB in the release), one for a tile's
// activations (five buffers of the largest padded activation plus room for cuDNN's workspace),
// sized at create() for the largest tile; encoding allocates no device memory.
//
// Not thread-safe: one encoder per GPU and thread.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/ops_conv3d.h"
#include "models/h3_video_vae/encoder.h"

namespace orochi::h3vae::gpu {

// The largest tile encode_moments() meets: frames (1 or clip_length) x tile height x tile width.
struct EncoderTileShape {
  int64_t frames = 1, height = 0, width = 0;
};
// For pixels of F frames at H x W encoded with `options`; an error when the input or options are invalid.
Expected<EncoderTileShape> max_tile_shape(const VideoVaeConfig& config, const EncodeOptions& options, int64_t frames,
                                          int64_t height, int64_t width);

// Bytes of the activation arena for tiles up to `tile` (cuDNN workspace allowance included).
size_t encoder_activation_bytes(const VideoVaeConfig& config, const EncoderTileShape& tile);

class GpuVideoEncoder {
 public:
  static Expected<std::unique_ptr<GpuVideoEncoder>> create(const VideoVaeConfig& config, int device,
                                                           const EncoderTileShape& max_tile,
                                                           cuda::ConvMath math = cuda::ConvMath::kTf32);
  ~GpuVideoEncoder();
  GpuVideoEncoder(const GpuVideoEncoder&) = delete;
  GpuVideoEncoder& operator=(const GpuVideoEncoder&) = delete;

  // Host f32 weights (load_encoder_weights) whose config matches create()'s.
  Status upload(const EncoderWeights& host);
  bool has_weights() const { return has_weights_; }

  // One tile: host f32 [3, T, h, w] within the planned tile shape -> host f32 [2·latent, T', h/r, w/r],
  // the CPU encode_tile's output.
  Expected<Tensor> encode_tile(const Tensor& x);
  // As the CPU encode_moments, every tile on the GPU.
  Expected<Tensor> encode_moments(const Tensor& x, const EncodeOptions& options = {});
  // As the CPU encode_condition: uint8 pixels [3, F, H, W] -> normalized latents.
  Expected<Tensor> encode_condition(const Tensor& pixels_u8, const EncodeOptions& options = {},
                                    uint64_t seed = 42);

  // Time cuDNN's algorithms per conv shape on first use and keep the fastest (Conv3dRunner's
  // autotune: faster, but runs may differ in the last bits). Off by default.
  void set_conv_autotune(bool on) { conv_->set_autotune(on); }

  const VideoVaeConfig& config() const { return config_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  size_t weight_bytes() const { return weight_arena_ ? weight_arena_->used() : 0; }
  size_t activation_peak_bytes() const { return activation_arena_ ? activation_arena_->peak() : 0; }

 private:
  GpuVideoEncoder() = default;
  struct DeviceWeights;  // gpu_encoder.cpp
  struct Buffers;
  Status conv(const Conv3dWeights& c, const Tensor& x, int64_t stride_t, int64_t stride_s, const Tensor& y);
  // The padded copy of x in the pad buffer, then the conv into `out` (a buffer); returns the output view.
  Expected<Tensor> padded_conv(const Conv3dWeights& c, const Tensor& x, int64_t front, int64_t top, int64_t bottom,
                               int64_t left, int64_t right, int64_t stride_t, int64_t stride_s, void* out);
  Expected<Tensor> norm(const GroupNormWeights& n, const Tensor& x, bool silu, void* out);

  VideoVaeConfig config_;
  int device_ = 0;
  EncoderTileShape max_tile_;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, activation_arena_;
  std::unique_ptr<cuda::Conv3dRunner> conv_;
  std::unique_ptr<DeviceWeights> weights_;
  std::unique_ptr<Buffers> buf_;
  bool has_weights_ = false;
};

}  // namespace orochi::h3vae::gpu
