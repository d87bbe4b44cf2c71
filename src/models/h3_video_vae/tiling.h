// Spatial tiling of one temporal chunk, as the reference decodes it (on by default; it changes the
// output, so it is part of the model): tiles of `tile` px with at least `min_overlap` px of overlap,
// laid out in pixel space, each decoded on its own, then cross-faded and cropped into one clip.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/h3_video_vae/blend.h"
#include "models/h3_video_vae/vit_decoder.h"

namespace orochi::h3vae {

struct DecodeOptions {
  bool tiling = true;  // the released model decodes tiled; turning it off changes the frames
  int64_t tile_height = 256, tile_width = 256;              // pixels
  int64_t min_overlap_height = 64, min_overlap_width = 64;  // pixels
  // The dtype the reference's blends run in: fp32 for an fp32 decode (ours), fp16 under autocast.
  BlendPrecision blend_precision = BlendPrecision::kF32;

  // Tile sizes and overlaps must be multiples of the spatial ratio (tiles stay latent-aligned)
  // and overlaps smaller than tiles.
  Status validate(const VideoVaeConfig& config) const;
};

// Tiles along one axis, in pixels. One tile covers the axis when it fits (no overlaps).
struct TileAxis {
  std::vector<int64_t> starts, lengths, overlaps;  // overlaps[i]: between tile i and i + 1
  int64_t count() const { return static_cast<int64_t>(starts.size()); }
};

// The fewest tiles whose union covers `length` with every overlap >= min_overlap; the slack is
// spread round-robin over the overlaps in steps of `ratio`. 832 -> starts 0/192/384/576.
TileAxis split_tiles(int64_t length, int64_t tile, int64_t min_overlap, int64_t ratio);

struct TilePlan {
  TileAxis rows, cols;  // pixels; latent offsets are these / spatial_ratio
  int64_t count() const { return rows.count() * cols.count(); }
};

// The tile layout for a latent canvas of latent_h x latent_w (one tile when tiling is off).
TilePlan plan_tiles(const VideoVaeConfig& config, int64_t latent_h, int64_t latent_w, const DecodeOptions& options);

// Latents of tile (r, c) of `window` [C, T, h, w]: a view.
Tensor tile_latents(const VideoVaeConfig& config, const Tensor& window, const TilePlan& plan, int64_t r, int64_t c);

// Decoded tiles tiles[r][c] ([ch, F, th, tw] each) -> one clip [ch, F, H, W]. Tile (r, c) is
// cross-faded over its top overlap with the raw tile (r−1, c), then over its left overlap with the
// raw tile (r, c−1), then cropped by its bottom and right overlaps.
Tensor stitch_tiles(const std::vector<std::vector<Tensor>>& tiles, const TilePlan& plan, BlendPrecision precision);

// Decodes one latent window [C, T, h, w] into a clip [ch, T·pt, h·p, w·p], tiled as `options` say.
// Observer names are decode_tile's prefixed "tile.<r>.<c>.", plus "clip" for the stitched clip.
Tensor decode_clip(const DecoderWeights& weights, const Tensor& window, const DecodeOptions& options,
                   const DecodeObserver& observer = nullptr);

}  // namespace orochi::h3vae
