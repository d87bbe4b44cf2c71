// GpuVideoDecoder's clip, chunk and video decodes: the CPU decoder's tile plan, stitching and chunk
// assembly (tiling.h, temporal.h) around GPU tiles, so the result equals the CPU decode's
// arithmetic everywhere outside the tile ViT.
#include <algorithm>
#include <string>
#include <vector>

#include "models/h3_video_vae/cuda/gpu_decoder.h"

namespace orochi::h3vae::gpu {
namespace {

Status require_host_latents(const Tensor& latents) {
  if (latents.defined() && latents.device().kind != DeviceKind::kCPU)
    return invalid_argument("GpuVideoDecoder decodes host latents (f32 [C, T, H, W]); got a device tensor " +
                            latents.describe() + ": download it first");
  return Status::ok();
}

}  // namespace

Expected<int64_t> max_tile_tokens(const VideoVaeConfig& config, const DecodeOptions& options, int64_t latent_h,
                                  int64_t latent_w) {
  OROCHI_RETURN_IF_ERROR(options.validate(config));
  if (latent_h < 1 || latent_w < 1)
    return invalid_argument("max_tile_tokens: empty latent canvas " + std::to_string(latent_h) + "x" +
                            std::to_string(latent_w));
  const TilePlan plan = plan_tiles(config, latent_h, latent_w, options);
  int64_t rows = 0, cols = 0;
  for (int64_t len : plan.rows.lengths) rows = std::max(rows, len / config.spatial_ratio);
  for (int64_t len : plan.cols.lengths) cols = std::max(cols, len / config.spatial_ratio);
  return config.window_latents() * rows * cols;
}

Expected<Tensor> GpuVideoDecoder::decode_clip(const Tensor& window, const DecodeOptions& options) {
  OROCHI_RETURN_IF_ERROR(check_ready("decode_clip"));
  OROCHI_RETURN_IF_ERROR(require_host_latents(window));
  OROCHI_RETURN_IF_ERROR(options.validate(config_));
  if (!window.defined() || window.dtype() != DType::kF32 || window.ndim() != 4 ||
      window.dim(0) != config_.latent_channels || window.dim(2) < 1 || window.dim(3) < 1)
    return shape_mismatch("GpuVideoDecoder::decode_clip wants f32 [" + std::to_string(config_.latent_channels) +
                          ", T, h, w] latents, got " + (window.defined() ? window.describe() : std::string("nothing")));
  const TilePlan plan = plan_tiles(config_, window.dim(2), window.dim(3), options);
  std::vector<std::vector<Tensor>> tiles(plan.rows.count());
  for (int64_t r = 0; r < plan.rows.count(); ++r)
    for (int64_t c = 0; c < plan.cols.count(); ++c) {
      OROCHI_ASSIGN_OR_RETURN(Tensor tile, decode_tile(tile_latents(config_, window, plan, r, c)));
      tiles[r].push_back(std::move(tile));
    }
  if (plan.count() == 1) return tiles[0][0];
  return stitch_tiles(tiles, plan, options.blend_precision);
}

Expected<Tensor> GpuVideoDecoder::decode_chunk(const Tensor& latents, int64_t chunk, const DecodeOptions& options) {
  OROCHI_RETURN_IF_ERROR(check_ready("decode_chunk"));
  OROCHI_RETURN_IF_ERROR(require_host_latents(latents));
  OROCHI_RETURN_IF_ERROR(validate_latents(config_, latents));
  OROCHI_RETURN_IF_ERROR(options.validate(config_));
  OROCHI_ASSIGN_OR_RETURN(const int64_t chunks, count_chunks(config_, latents.dim(1)));
  if (chunk < 0 || chunk >= chunks)
    return invalid_argument("chunk " + std::to_string(chunk) + " does not exist: " + std::to_string(latents.dim(1)) +
                            " latent frames make " + std::to_string(chunks) + " chunks");
  return decode_clip(chunk_window(config_, latents, chunk), options);
}

Expected<Tensor> GpuVideoDecoder::decode(const Tensor& latents, const DecodeOptions& options,
                                         const ChunkProgress& progress) {
  OROCHI_RETURN_IF_ERROR(check_ready("decode"));
  OROCHI_RETURN_IF_ERROR(require_host_latents(latents));
  OROCHI_RETURN_IF_ERROR(validate_latents(config_, latents));
  OROCHI_RETURN_IF_ERROR(options.validate(config_));
  OROCHI_ASSIGN_OR_RETURN(const int64_t chunks, count_chunks(config_, latents.dim(1)));
  // Refuse a canvas whose tiles do not fit before decoding anything.
  OROCHI_ASSIGN_OR_RETURN(const int64_t tokens, max_tile_tokens(config_, options, latents.dim(2), latents.dim(3)));
  if (tokens > max_tokens_)
    return invalid_argument("a " + std::to_string(latents.dim(2)) + "x" + std::to_string(latents.dim(3)) +
                            " latent canvas decodes tiles of " + std::to_string(tokens) +
                            " tokens; this GpuVideoDecoder was created for at most " + std::to_string(max_tokens_) +
                            ": create it with max_tile_tokens() of the canvas, or turn tiling on");
  std::vector<Tensor> clips;
  for (int64_t i = 0; i < chunks; ++i) {
    OROCHI_ASSIGN_OR_RETURN(Tensor clip, decode_chunk(latents, i, options));
    clips.push_back(std::move(clip));
    if (progress) progress(i + 1, chunks);
  }
  return assemble_chunks(config_, clips, options.blend_precision);
}

}  // namespace orochi::h3vae::gpu
