// The GPU video VAE encoder's device memory as plain arithmetic on the config, with no CUDA: the
// planner's encode phase adds these up and GpuVideoEncoder::create (cuda/gpu_encoder.h) allocates
// exactly them, so planned = allocated by construction.
//
//   EncoderTileShape tile = *max_tile_shape(config, EncodeOptions{}, F, H, W);   // F frames of H x W px
//   encoder_weight_arena_bytes(config) + encoder_activation_arena_bytes(config, tile, true)
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "models/h3_video_vae/config.h"
#include "models/h3_video_vae/encoder.h"

namespace orochi::h3vae {

// The device arenas' alignment (cuda::DeviceArena::kAlignment; gpu_encoder.cpp asserts they agree).
inline constexpr size_t kEncoderArenaAlignment = 256;
// The activation arena's tile buffers: state, normed / shortcut, conv output, padded copy, one spare.
inline constexpr int kEncoderActivationBuffers = 5;

// The largest tile encode_moments() meets: frames (1 or clip_length) x tile height x tile width.
// clip_height x clip_width: the whole frame (the device-tiles option keeps a clip of it on the GPU);
// 0 when unknown.
struct EncoderTileShape {
  int64_t frames = 1, height = 0, width = 0;
  int64_t clip_height = 0, clip_width = 0;
  bool operator==(const EncoderTileShape&) const = default;
};

// For pixels of F frames at H x W encoded with `options`; invalid_argument when the input or the
// options are invalid (a side not a multiple of the spatial ratio, no frame).
Expected<EncoderTileShape> max_tile_shape(const VideoVaeConfig& config, const EncodeOptions& options, int64_t frames,
                                          int64_t height, int64_t width);

// The smallest shape that holds tiles of both (one encoder for inputs of several sizes).
EncoderTileShape covering_tile_shape(const EncoderTileShape& a, const EncoderTileShape& b);

// The largest activation (padded copies included) a T x H x W tile goes through, in floats.
int64_t encoder_tile_max_elems(const VideoVaeConfig& config, int64_t frames, int64_t height, int64_t width);

// Floats of the device-tiles option's clip buffer [in_channels, frames, clip_height, clip_width].
int64_t encoder_clip_elems(const VideoVaeConfig& config, const EncoderTileShape& tile);

// The weight arena: every parameter, plus the last temporal tap of every 3x3x3 kernel (a single
// frame uses only that one), each rounded to the alignment, and 1 MiB of slack.
size_t encoder_weight_arena_bytes(const VideoVaeConfig& config);

// The activation arena for tiles up to `tile`: five buffers of the largest activation, cuDNN's
// workspace allowance and, with `device_tiles`, one clip of pixels.
size_t encoder_activation_arena_bytes(const VideoVaeConfig& config, const EncoderTileShape& tile, bool device_tiles);

}  // namespace orochi::h3vae
