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
// Paths (GpuEncoderOptions::path, chosen at create()): kPaddedCopies is the first version (NCDHW,
// an explicit padded copy before every conv, separate GroupNorm, cuDNN's bias add, a residual add);
// the fused paths write each conv's padded input directly from the GroupNorm that precedes it (the
// reflect border and zero frames included), fold every conv bias into the next read (GroupNorm
// input, residual sum, output relayout), and differ in layout: NCDHW, or channels last (NDHWC)
// where cuDNN's TF32 tensor-core kernels read the activations without transposing. The arithmetic
// is the same up to the convolutions' own summation order (fp32 sums in the same order elsewhere).
//
// Precision: fp32 activations and weights; the convolutions use TF32 tensor cores by default, as
// the reference does (torch's default cudnn.allow_tf32 = True on an fp32 encode), or plain fp32
// FMAs with ConvMath::kF32 (for comparisons with the CPU reference). GroupNorm statistics in fp32
// (two passes).
//
// Memory is planned: one arena for the weights (about 0.72 GB in the release), one for a tile's
// activations (five buffers of the largest padded activation plus room for cuDNN's workspace),
// sized at create() for the largest tile by encoder_memory.h (the planner's encode phase uses the same
// functions); encoding allocates no device memory.
//
// Not thread-safe: one encoder per GPU and thread.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/ops_conv3d.h"
#include "models/h3_video_vae/encoder.h"
#include "models/h3_video_vae/encoder_memory.h"

namespace orochi::h3vae::gpu {

// The tile shape and the arenas' sizes are encoder_memory.h's (CPU arithmetic the planner shares).
using ::orochi::h3vae::EncoderTileShape;
using ::orochi::h3vae::max_tile_shape;

enum class EncoderPath { kPaddedCopies, kFusedNcdhw, kFusedNdhwc };
const char* encoder_path_name(EncoderPath path);

struct GpuEncoderOptions {
  cuda::ConvMath math = cuda::ConvMath::kTf32;
  // kFusedNdhwc by measurement (bench/RESULTS.md, 2026-12-02 session 15, one H200, TF32, after the
  // coalesced channels-last GroupNorm+pad): the 124x1344x768 video 12.91 s vs 14.94 s fused NCDHW
  // and 16.82 s padded copies (diffusers 14.24 s); the 3648x2048 image 1.098 s vs 1.115 s. With
  // ConvMath::kF32 fused NCDHW is faster (image 2.374 s vs 2.579 s): choose it there.
  EncoderPath path = EncoderPath::kFusedNdhwc;
  // Time cuDNN's algorithms per conv shape on first use and keep the fastest (Conv3dRunner's
  // autotune: faster, but runs may differ in the last bits).
  bool autotune = false;
  // encode_moments uploads each clip once and cuts its tiles on the GPU (encoder_tile_pad) instead
  // of slicing every tile on the host and uploading it; the stitch stays on the host (the same
  // stitch_tiles). Fused paths only; the plan grows by one clip of pixels. Off by default because it
  // needs the clip's frame size in the tile shape (max_tile_shape()); callers that have it turn it
  // on: the video above takes 9.37 s with it (0.66x diffusers) instead of 12.91 s.
  bool device_tiles = false;
};

// GPU time per stage of the tiles encoded while profiling was on (CUDA events around every op),
// with the convolutions' multiply-add FLOPs (2 per MAC) where the stage is a conv.
struct EncoderStageTime {
  std::string name;
  double ms = 0.0, flops = 0.0;
  int64_t calls = 0;
};

// Bytes of the activation arena for tiles up to `tile` (cuDNN workspace allowance included).
inline size_t encoder_activation_bytes(const VideoVaeConfig& config, const EncoderTileShape& tile,
                                       const GpuEncoderOptions& options = {}) {
  return encoder_activation_arena_bytes(config, tile, options.device_tiles);
}

class GpuVideoEncoder {
 public:
  static Expected<std::unique_ptr<GpuVideoEncoder>> create(const VideoVaeConfig& config, int device,
                                                           const EncoderTileShape& max_tile,
                                                           const GpuEncoderOptions& options);
  static Expected<std::unique_ptr<GpuVideoEncoder>> create(const VideoVaeConfig& config, int device,
                                                           const EncoderTileShape& max_tile,
                                                           cuda::ConvMath math = cuda::ConvMath::kTf32) {
    GpuEncoderOptions o;
    o.math = math;
    return create(config, device, max_tile, o);
  }
  ~GpuVideoEncoder();
  GpuVideoEncoder(const GpuVideoEncoder&) = delete;
  GpuVideoEncoder& operator=(const GpuVideoEncoder&) = delete;

  // Host f32 weights (load_encoder_weights) whose config matches create()'s.
  Status upload(const EncoderWeights& host);
  // Random weights of create()'s config (encoder_random.h's rule, --random-weights benchmarks): each
  // parameter drawn on the GPU in the weight arena, then laid out as upload() lays out host weights.
  Status init_random(uint64_t seed);
  bool has_weights() const { return has_weights_; }

  // Tiles up to `tile` from now on: the activation arena is given back and reserved anew for it
  // (the weights stay), so one encoder takes inputs of several sizes with each input's own arena,
  // as the planner's encode phase counts (planner/encode_memory.h). A no-op for the current shape.
  Status fit(const EncoderTileShape& tile);
  const EncoderTileShape& max_tile() const { return max_tile_; }

  // One tile: host f32 [3, T, h, w] within the planned tile shape -> host f32 [2·latent, T', h/r, w/r],
  // the CPU encode_tile's output.
  Expected<Tensor> encode_tile(const Tensor& x);
  // As the CPU encode_moments, every tile on the GPU.
  Expected<Tensor> encode_moments(const Tensor& x, const EncodeOptions& options = {});
  // One clip host f32 [3, 1 or clip_length, H, W] -> its stitched moments (encode_clip_with's): what
  // encode_moments_split gives each GPU (h3vae::ClipEncoder).
  Expected<Tensor> encode_clip(const Tensor& clip, const EncodeOptions& options = {});
  // As the CPU encode_condition: uint8 pixels [3, F, H, W] -> normalized latents.
  Expected<Tensor> encode_condition(const Tensor& pixels_u8, const EncodeOptions& options = {},
                                    uint64_t seed = 42);

  // Time cuDNN's algorithms per conv shape on first use and keep the fastest (Conv3dRunner's
  // autotune: faster, but runs may differ in the last bits). Off by default.
  void set_conv_autotune(bool on) { conv_->set_autotune(on); }

  // Per-stage CUDA-event timing of every tile encoded while on (off by default: it records ~60 events
  // per tile and reads them back after each tile's download).
  void set_profiling(bool on);
  std::vector<EncoderStageTime> stage_times() const;  // in first-seen order
  void reset_stage_times();

  const GpuEncoderOptions& options() const { return options_; }

  const VideoVaeConfig& config() const { return config_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  size_t weight_bytes() const { return weight_arena_ ? weight_arena_->used() : 0; }
  // What create() reserved: the weight and activation arenas' capacities (the plan's figures).
  size_t reserved_bytes() const;
  size_t activation_peak_bytes() const { return activation_arena_ ? activation_arena_->peak() : 0; }

 private:
  GpuVideoEncoder() = default;
  Status check_tile_shape(const EncoderTileShape& tile) const;
  Status reserve_activations(const EncoderTileShape& tile);  // the arena, the tile buffers, the clip
  struct DeviceWeights;  // gpu_encoder.cpp
  struct Buffers;
  struct Profiler;
  Expected<Tensor> encode_tile_fused(const Tensor& x);
  // The fused path from conv_in's padded input [Cin', front + T, H + 2, W + 2] (in r[1]) to the moments.
  Expected<Tensor> encode_padded_fused(const Tensor& padded_in, int64_t T, int64_t H, int64_t W);
  // `join` false: x is one clip, whose moments come back uncut.
  Expected<Tensor> encode_moments_device_tiles(const Tensor& x, const EncodeOptions& options, bool join = true);
  // Clip k of x [C, F, H, W] (frames past F repeat the last) through the device tiles.
  Expected<Tensor> device_tiles_clip(const Tensor& x, int64_t k, const TilePlan& plan);
  // Ends a stage: everything enqueued since the previous mark is `stage`'s (no-op when not profiling).
  void mark(const char* stage, double flops = 0.0);
  Status conv(const Conv3dWeights& c, const Tensor& x, int64_t stride_t, int64_t stride_s, const Tensor& y);
  // The padded copy of x in the pad buffer, then the conv into `out` (a buffer); returns the output view.
  Expected<Tensor> padded_conv(const Conv3dWeights& c, const Tensor& x, int64_t front, int64_t top, int64_t bottom,
                               int64_t left, int64_t right, int64_t stride_t, int64_t stride_s, void* out,
                               const char* stage);
  Expected<Tensor> norm(const GroupNormWeights& n, const Tensor& x, bool silu, void* out);

  VideoVaeConfig config_;
  GpuEncoderOptions options_;
  int device_ = 0;
  EncoderTileShape max_tile_;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceArena> weight_arena_, activation_arena_;
  std::unique_ptr<cuda::Conv3dRunner> conv_;
  std::unique_ptr<DeviceWeights> weights_;
  std::unique_ptr<Buffers> buf_;
  std::unique_ptr<Profiler> profiler_;
  void* clip_ = nullptr;  // device_tiles: one clip [in_channels, frames, clip_height, clip_width]
  int64_t clip_elems_ = 0;
  bool has_weights_ = false;
};

}  // namespace orochi::h3vae::gpu
