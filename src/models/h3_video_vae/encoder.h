// The video VAE encoder (AutoencoderKLMiniMaxH3.encode, CPU fp32 reference): the causal 3-D CNN
// with quant_conv on one spatial tile, the spatial tiling of a 17-frame clip, and the temporal
// chunking of a whole video into moments [2·latent, T, h, w] (mean ‖ logvar, before the clamp).
//
// Layout: one sample at a time, pixels [3, F, H, W] ImageNet-normalized fp32 (encode_condition in
// encoder_posterior.h makes them from uint8).
#pragma once

#include <functional>
#include <string>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/encoder_weights.h"
#include "models/h3_video_vae/tiling.h"

namespace orochi::dist {
class ParallelContext;
}  // namespace orochi::dist

namespace orochi::h3vae {

// Named intermediates, for golden comparisons: "conv_in", "down.<i>.resnet.<j>", "down.<i>.downsample",
// "norm_out" (before its SiLU), "conv_out", "moments" (after quant_conv); prefixed with
// "clip.<k>.tile.<r>.<c>." by encode_moments.
using EncodeObserver = std::function<void(const std::string& name, const Tensor& value)>;

struct EncodeOptions {
  bool tiling = true;  // the released model encodes tiled; turning it off changes the moments
  int64_t tile_height = 256, tile_width = 256;              // pixels
  int64_t min_overlap_height = 64, min_overlap_width = 64;  // pixels

  // Multiples of the spatial ratio, overlaps below tiles (DecodeOptions' rule).
  Status validate(const VideoVaeConfig& config) const;
  // The tile layout of an H x W pixel clip (one tile when tiling is off or the clip fits).
  TilePlan plan(const VideoVaeConfig& config, int64_t height, int64_t width) const;
};

// The smallest frame the encoder can take: every reflect pad needs a side of >= 2 pixels at its
// level. invalid_argument naming the side and the minimum otherwise.
Status check_frame_size(const VideoVaeConfig& config, int64_t height, int64_t width);

// The encoder + quant_conv on one tile: x [3, T, h, w] -> moments [2·latent, T', h/r, w/r] with
// T' = 1 for T = 1 and 5 for T = 17 at the released factors.
Tensor encode_tile(const EncoderWeights& weights, const Tensor& x, const EncodeObserver& observer = nullptr);

// One clip, tiled as `options` say, stitched on the moments: x [3, T, H, W] -> [2·latent, T', H/r, W/r].
Tensor encode_clip(const EncoderWeights& weights, const Tensor& x, const EncodeOptions& options,
                   const EncodeObserver& observer = nullptr);

// Encodes one tile [3, T, h, w] -> moments [2·latent, T', h/r, w/r]; `prefix` names the tile
// ("clip.<k>.tile.<r>.<c>.") for observers. The CPU's is encode_tile; the GPU encoder passes its own.
using TileEncoder = std::function<Expected<Tensor>(const Tensor& tile, const std::string& prefix)>;

// encode_clip / encode_moments with any tile encoder: the tiling, the stitch and the temporal
// chunking are this file's, so every backend shares their arithmetic bit for bit. `clip_observer`
// sees "clip.<k>" (a clip's stitched moments).
Expected<Tensor> encode_clip_with(const VideoVaeConfig& config, const TileEncoder& encode, const Tensor& x,
                                  const EncodeOptions& options, const std::string& prefix);
Expected<Tensor> encode_moments_with(const VideoVaeConfig& config, const TileEncoder& encode, const Tensor& x,
                                     const EncodeOptions& options, const EncodeObserver& clip_observer = nullptr);

// Encodes one clip [3, T, H, W] (T = 1 or clip_length) -> its stitched moments, as encode_clip_with
// does: the CPU's with encode_tile, a GPU encoder's with its own tiles.
using ClipEncoder = std::function<Expected<Tensor>(const Tensor& clip)>;

// encode_moments_with spread over several encoders at once (one per GPU; CPU ranks in the tests): the
// frames padded as it pads them, clip k given to rank floor(k·R / n)'s encoder (contiguous runs of the
// n clips over R = min(ranks, n) ranks, each on its worker of `workers`), the moments joined and cut as
// it joins and cuts them. Bit-identical to one encoder when every rank computes a clip as rank 0 does;
// a single frame is rank 0's. Errors: encode_moments_with's, more encoders than workers, and the first
// failing rank's (naming its clip).
Expected<Tensor> encode_moments_split(const VideoVaeConfig& config, dist::ParallelContext& workers,
                                      const std::vector<ClipEncoder>& ranks, const Tensor& x,
                                      const EncodeOptions& options = {});

// The reference's `_encode`: a single frame is one clip (one latent frame); otherwise the frames
// are padded with copies of the last one to a multiple of clip_length, every clip is encoded on its
// own, the moments are concatenated over time and the last token_drop latent frames dropped
// (17n+5 frames -> 5n+2 latents). x [3, F, H, W] fp32 -> [2·latent, T, H/r, W/r].
// Errors: invalid_argument for a wrong channel count, no frames, sizes that are not multiples of
// the spatial ratio or too small, or bad tile options.
Expected<Tensor> encode_moments(const EncoderWeights& weights, const Tensor& x, const EncodeOptions& options = {},
                                const EncodeObserver& observer = nullptr);

}  // namespace orochi::h3vae
