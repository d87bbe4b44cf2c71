#include "models/h3_video_vae/encoder_memory.h"

#include <algorithm>
#include <string>

#include "models/h3_video_vae/encoder_weights.h"
#include "models/h3_video_vae/tiling.h"

namespace orochi::h3vae {
namespace {

size_t aligned(size_t bytes) { return (bytes + kEncoderArenaAlignment - 1) / kEncoderArenaAlignment * kEncoderArenaAlignment; }

// cuDNN's 3-D algorithms want workspace; the allowance scales with the activations, within [64 MiB, 2 GiB].
size_t workspace_allowance(int64_t max_elems) {
  return std::clamp<size_t>(static_cast<size_t>(max_elems) * 4 * 2, size_t{64} << 20, size_t{2} << 30);
}

}  // namespace

Expected<EncoderTileShape> max_tile_shape(const VideoVaeConfig& config, const EncodeOptions& options, int64_t frames,
                                          int64_t height, int64_t width) {
  OROCHI_RETURN_IF_ERROR(config.validate_encoder());
  OROCHI_RETURN_IF_ERROR(options.validate(config));
  if (frames < 1 || height < 1 || width < 1 || height % config.spatial_ratio != 0 || width % config.spatial_ratio != 0)
    return invalid_argument("max_tile_shape: " + std::to_string(frames) + " frames of " + std::to_string(width) +
                            "x" + std::to_string(height) + " px: need >= 1 frame and sides multiple of " +
                            std::to_string(config.spatial_ratio));
  const TilePlan plan = options.plan(config, height, width);
  return EncoderTileShape{frames == 1 ? 1 : config.clip_length, plan.rows.lengths[0], plan.cols.lengths[0], height,
                          width};
}

EncoderTileShape covering_tile_shape(const EncoderTileShape& a, const EncoderTileShape& b) {
  return {std::max(a.frames, b.frames), std::max(a.height, b.height), std::max(a.width, b.width),
          std::max(a.clip_height, b.clip_height), std::max(a.clip_width, b.clip_width)};
}

int64_t encoder_tile_max_elems(const VideoVaeConfig& c, int64_t T, int64_t H, int64_t W) {
  int64_t most = 0;
  auto track = [&](int64_t ch, int64_t t, int64_t h, int64_t w) { most = std::max(most, ch * t * h * w); };
  int64_t C = c.in_channels;
  track((C + 3) / 4 * 4, T + 2, H + 2, W + 2);  // conv_in's padded input (channels last: rounded up to 4)
  C = c.block_out_channels[0];
  track(C, T, H, W);
  for (size_t i = 0; i < c.block_out_channels.size(); ++i) {
    const int64_t out = c.block_out_channels[i];
    for (int64_t j = 0; j < c.layers_per_block; ++j) {
      track(C, T + 2, H + 2, W + 2);    // the first conv's padded input
      track(out, T + 2, H + 2, W + 2);  // the second's
      track(out, T, H, W);
      C = out;
    }
    const int64_t sf = c.spatial_downsample_factors[i], tf = c.temporal_downsample_factors[i];
    if (sf * tf > 1) {
      const int64_t extra = sf == 2 ? 1 : 0;
      track(C, T + 2, H + extra, W + extra);
      T = (T + 2 - 3) / tf + 1;
      H = (H + extra - 3) / sf + 1;
      W = (W + extra - 3) / sf + 1;
      track(C, T, H, W);
    }
  }
  track(C, T + 2, H + 2, W + 2);  // conv_out's padded input
  track(2 * c.latent_channels, T, H, W);
  return most;
}

int64_t encoder_clip_elems(const VideoVaeConfig& config, const EncoderTileShape& tile) {
  return config.in_channels * tile.frames * tile.clip_height * tile.clip_width;
}

size_t encoder_weight_arena_bytes(const VideoVaeConfig& config) {
  size_t bytes = 1 << 20;
  for (const ParamSpec& s : encoder_parameters(config)) {
    const size_t n = static_cast<size_t>(shape_numel(s.shape));
    bytes += aligned(n * 4);
    if (s.shape.size() == 5 && s.shape[2] == 3) bytes += aligned(n / 3 * 4);
  }
  return bytes;
}

size_t encoder_activation_arena_bytes(const VideoVaeConfig& config, const EncoderTileShape& tile, bool device_tiles) {
  const int64_t elems = encoder_tile_max_elems(config, tile.frames, tile.height, tile.width);
  const size_t clip = device_tiles ? aligned(static_cast<size_t>(encoder_clip_elems(config, tile)) * 4) : 0;
  return kEncoderActivationBuffers * aligned(static_cast<size_t>(elems) * 4) + workspace_allowance(elems) + clip +
         5 * kEncoderArenaAlignment;
}

}  // namespace orochi::h3vae
