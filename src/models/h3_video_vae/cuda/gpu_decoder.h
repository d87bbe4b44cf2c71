// The MiniMax-H3 video VAE decoder on one GPU, computed as the reference decodes under fp16
// autocast (MODELS_H3.md §4, "Precision"): linears and attention in f16 with fp32 accumulation, the
// residual stream, the norms and the RoPE table in fp32, the decoded tile f16-valued. Only the tile
// ViT runs on the GPU (over 99% of the FLOPs); each tile comes back to the host as f32 and the CPU
// code tiles, stitches and assembles chunks (tiling.h, temporal.h), so the split of work and the
// blend arithmetic are exactly the CPU decoder's.
//
//   auto dec = GpuVideoDecoder::create(config, device, max_tile_tokens(config, options, h, w));
//   dec->upload(host_weights)  or  dec->init_random(seed)
//   dec->decode(latents, options, progress)   // host f32 [C, 5n+2, h, w] -> [3, 17n+5, 16h, 16w]
//
// To reproduce the fp16 reference, decode with options.blend_precision = BlendPrecision::kF16
// (the reference blends its f16 tiles in f16).
//
// Memory is planned: one arena for the weights (about 4.9 GB in the release), one for a tile's
// activations sized at create() for `max_tile_tokens`; decoding allocates no device memory (cuDNN
// sizes its attention workspace once per new tile shape).
//
// Deterministic: the same tile gives the same bits every time. GEMM autotuning is off by default,
// so every GPU of one model and software stack picks the same cuBLASLt algorithms, and a decode
// split over GPUs (by chunk or by tile) is bit-identical to a one-GPU decode.
//
// Not thread-safe: one decoder per GPU and thread.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "backends/cuda/attention_cudnn.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "dist/parallel_context.h"
#include "models/h3_video_vae/cuda/gpu_vae_weights.h"
#include "models/h3_video_vae/temporal.h"

namespace orochi::h3vae::gpu {

// Latent voxels (tokens before the registers) of the largest tile decode() meets for a latent
// canvas of latent_h x latent_w: window_latents · tile rows · tile cols (7·16·16 = 1792 for the
// release's 256 px tiles). An error when the options are invalid.
Expected<int64_t> max_tile_tokens(const VideoVaeConfig& config, const DecodeOptions& options, int64_t latent_h,
                        int64_t latent_w);

// Bytes of the activation arena for tiles of up to `max_tokens` latent voxels.
size_t activation_bytes(const VideoVaeConfig& config, int64_t max_tokens);

// Called after each decoded chunk: (chunks done, chunks in all).
using ChunkProgress = std::function<void(int64_t done, int64_t total)>;

struct ActivationBuffers;  // gpu_decoder.cpp

class GpuVideoDecoder {
 public:
  // A stream, the GEMM runner, the cuDNN attention and both arenas on GPU `device`.
  static Expected<std::unique_ptr<GpuVideoDecoder>> create(const VideoVaeConfig& config, int device,
                                                           int64_t max_tile_tokens);
  ~GpuVideoDecoder();
  GpuVideoDecoder(const GpuVideoDecoder&) = delete;
  GpuVideoDecoder& operator=(const GpuVideoDecoder&) = delete;

  // Host f32 weights (load_decoder_weights) whose parameter shapes match the create() config.
  Status upload(const DecoderWeights& host);
  // Random weights of the config's shapes, generated on the GPU (gpu_vae_weights.h).
  Status init_random(uint64_t seed);
  bool has_weights() const { return has_weights_; }

  // One tile: z host f32 [C, T, h, w] (any strides, T·h·w <= max_tile_tokens) -> host f32
  // [out_ch, T·pt, h·p, w·p], the CPU decode_tile's output (f16-valued).
  Expected<Tensor> decode_tile(const Tensor& z);
  // As the CPU decode_clip / decode_chunk / decode (tiling.h, temporal.h), with every tile on the GPU.
  Expected<Tensor> decode_clip(const Tensor& window, const DecodeOptions& options);
  Expected<Tensor> decode_chunk(const Tensor& latents, int64_t chunk, const DecodeOptions& options);
  // The whole video: every tile, the stitching and the chunk cross-fades on the device (the host's
  // arithmetic, bit for bit), one download at the end. Allocates one arena for the decode's tiles,
  // two clips and the video (sized from the plan) for the duration of the call. With `helpers`
  // (decoders on other GPUs, same weights) the chunks are shared in contiguous runs: each helper
  // decodes its run on a worker of `workers` (decode_clips; worker 0 decodes this GPU's run, worker
  // i helper i's, so it needs 1 + helpers.size() of them), then this GPU copies the helpers' clips
  // over (peer copies) and fades them in order, so the video is bit-identical to the one-GPU decode.
  Expected<Tensor> decode(const Tensor& latents, const DecodeOptions& options = {},
                          const ChunkProgress& progress = nullptr, const std::vector<GpuVideoDecoder*>& helpers = {},
                          dist::ParallelContext* workers = nullptr);

  // Chunks [first, last) of `latents`, each stitched on this GPU into a raw clip [out_ch, 28, H·p,
  // W·p] kept in device memory (an arena of the call's own), finished when this returns:
  // what a helper GPU contributes to another decoder's decode(). `done(chunk)` after each.
  struct DeviceClips {
    std::shared_ptr<cuda::DeviceArena> arena;
    std::vector<Tensor> clips;  // f32, on `device`
    int device = 0;
  };
  Expected<DeviceClips> decode_clips(const Tensor& latents, int64_t first, int64_t last, const DecodeOptions& options,
                                     const std::function<void(int64_t chunk)>& done = nullptr);

  // Timing each GEMM shape's candidates picks the fastest, but may pick differently on two GPUs,
  // which breaks bit-identity between them: leave off for split decodes.
  void set_gemm_autotune(bool on) { gemm_->set_autotune(on); }

  const VideoVaeConfig& config() const { return config_; }
  int device() const { return device_; }
  int64_t max_tokens() const { return max_tokens_; }
  cudaStream_t stream() const { return stream_; }
  size_t weight_bytes() const;
  size_t activation_bytes_used() const;

 private:
  GpuVideoDecoder() = default;
  Status check_ready(const char* what) const;
  // decode()'s and decode_clips()' checks of the latents against the config, options and tiles.
  Expected<int64_t> check_decodable(const Tensor& latents, const DecodeOptions& options) const;
  Status upload_rope(int64_t T, int64_t H, int64_t W);
  Status linear(const GpuLinear& l, const Tensor& x, const Tensor& y);
  Status block(const GpuBlock& b, int64_t S);
  // Runs the ViT on the [N, C] f16 latents already in the buffers; leaves the tile (f32) on the device.
  Expected<Tensor> run_tile(int64_t T, int64_t H, int64_t W);
  // decode_tile without the download: the tile [out_ch, T·pt, h·p, w·p] f32 in the activation arena,
  // valid until the next tile.
  Expected<Tensor> tile_on_device(const Tensor& z);
  // Decodes chunk `chunk` of `latents` and stitches its tiles into `clip` (device f32
  // [out_ch, window_frames, H·p, W·p]), using `tiles` (device f32, room for every tile of the plan).
  Status stitch_chunk_on_device(const Tensor& latents, int64_t chunk, const DecodeOptions& options,
                                const Tensor& tiles, const Tensor& clip);

  VideoVaeConfig config_;
  int device_ = 0;
  int64_t max_tokens_ = 0;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, activation_arena_;
  std::unique_ptr<cuda::GemmRunner> gemm_;
  std::unique_ptr<cuda::CudnnAttention> attention_;
  GpuDecoderWeights weights_;
  bool has_weights_ = false;
  std::unique_ptr<ActivationBuffers> buf_;
  int64_t rope_grid_[3] = {0, 0, 0};  // the T, H, W whose RoPE table is on the device
};

}  // namespace orochi::h3vae::gpu
