#include "models/h3_video_vae/tiling.h"

#include <cstring>

namespace orochi::h3vae {

Status DecodeOptions::validate(const VideoVaeConfig& config) const {
  if (!tiling) return Status::ok();
  const int64_t r = config.spatial_ratio;
  const struct {
    const char* axis;
    int64_t tile, overlap;
  } axes[] = {{"height", tile_height, min_overlap_height}, {"width", tile_width, min_overlap_width}};
  for (const auto& a : axes) {
    if (a.tile <= 0 || a.tile % r != 0 || a.overlap < 0 || a.overlap % r != 0 || a.overlap >= a.tile)
      return invalid_argument(std::string("VAE tile ") + a.axis + " " + std::to_string(a.tile) +
                              " px with minimum overlap " + std::to_string(a.overlap) +
                              " px: both must be multiples of " + std::to_string(r) +
                              " px and the overlap smaller than the tile (the release uses 256 and 64)");
  }
  return Status::ok();
}

TileAxis split_tiles(int64_t length, int64_t tile, int64_t min_overlap, int64_t ratio) {
  OROCHI_CHECK(length > 0 && tile > 0 && min_overlap >= 0 && min_overlap < tile && ratio > 0,
               "split_tiles(", length, ", ", tile, ", ", min_overlap, ", ", ratio, ")");
  if (tile >= length) return {{0}, {length}, {}};
  int64_t n = (length + tile - 1) / tile;
  while (tile * n - min_overlap * (n - 1) < length) ++n;
  TileAxis axis;
  axis.overlaps.assign(n - 1, min_overlap);
  const int64_t slack = tile * n - min_overlap * (n - 1) - length;
  for (int64_t i = 0; i < slack / ratio; ++i) axis.overlaps[i % (n - 1)] += ratio;
  axis.starts.push_back(0);
  for (int64_t i = 0; i + 1 < n; ++i) axis.starts.push_back(axis.starts.back() + tile - axis.overlaps[i]);
  axis.lengths.assign(n, tile);
  return axis;
}

TilePlan plan_tiles(const VideoVaeConfig& c, int64_t latent_h, int64_t latent_w, const DecodeOptions& o) {
  const int64_t H = latent_h * c.spatial_ratio, W = latent_w * c.spatial_ratio;
  if (!o.tiling) return {{{0}, {H}, {}}, {{0}, {W}, {}}};
  TilePlan plan{split_tiles(H, o.tile_height, o.min_overlap_height, c.spatial_ratio),
                split_tiles(W, o.tile_width, o.min_overlap_width, c.spatial_ratio)};
  // With sizes in whole latents the last tile ends exactly on the canvas edge.
  OROCHI_CHECK(plan.rows.starts.back() + plan.rows.lengths.back() == H &&
                   plan.cols.starts.back() + plan.cols.lengths.back() == W,
               "tiles do not cover the canvas exactly");
  return plan;
}

Tensor tile_latents(const VideoVaeConfig& c, const Tensor& window, const TilePlan& plan, int64_t r, int64_t col) {
  const int64_t p = c.spatial_ratio;
  const int64_t y0 = plan.rows.starts[r] / p, x0 = plan.cols.starts[col] / p;
  return window.slice(2, y0, y0 + plan.rows.lengths[r] / p).slice(3, x0, x0 + plan.cols.lengths[col] / p);
}

Tensor stitch_tiles(const std::vector<std::vector<Tensor>>& tiles, const TilePlan& plan, BlendPrecision precision) {
  const int64_t rows = plan.rows.count(), cols = plan.cols.count();
  OROCHI_CHECK(static_cast<int64_t>(tiles.size()) == rows && rows > 0 && static_cast<int64_t>(tiles[0].size()) == cols,
               "stitch_tiles: tile grid does not match the plan");
  const Tensor& first = tiles[0][0];
  const int64_t ch = first.dim(0), F = first.dim(1);
  const int64_t H = plan.rows.starts.back() + plan.rows.lengths.back();
  const int64_t W = plan.cols.starts.back() + plan.cols.lengths.back();
  Tensor clip = Tensor::empty({ch, F, H, W}, DType::kF32);
  float* out = clip.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      Tensor tile = tiles[r][c];
      if (r > 0) tile = linear_blend(tiles[r - 1][c], tile, plan.rows.overlaps[r - 1], 2, precision);
      if (c > 0) tile = linear_blend(tiles[r][c - 1], tile, plan.cols.overlaps[c - 1], 3, precision);
      const int64_t th = tile.dim(2), tw = tile.dim(3);
      // Cropped at the bottom / right by the next overlap: what remains fills [start, next start).
      const int64_t keep_h = r + 1 < rows ? th - plan.rows.overlaps[r] : th;
      const int64_t keep_w = c + 1 < cols ? tw - plan.cols.overlaps[c] : tw;
      const int64_t y0 = plan.rows.starts[r], x0 = plan.cols.starts[c];
      OROCHI_CHECK(y0 + keep_h <= H && x0 + keep_w <= W, "tile (", r, ", ", c, ") overflows the clip");
      const float* src = tile.data<float>();
#pragma omp parallel for schedule(static) if (ch * F * keep_h * keep_w > (int64_t{1} << 16))
      for (int64_t k = 0; k < ch * F; ++k)
        for (int64_t y = 0; y < keep_h; ++y)
          std::memcpy(out + (k * H + y0 + y) * W + x0, src + (k * th + y) * tw, keep_w * sizeof(float));
    }
  }
  return clip;
}

Tensor decode_clip(const DecoderWeights& w, const Tensor& window, const DecodeOptions& options,
                   const DecodeObserver& observer) {
  const TilePlan plan = plan_tiles(w.config, window.dim(2), window.dim(3), options);
  std::vector<std::vector<Tensor>> tiles(plan.rows.count());
  for (int64_t r = 0; r < plan.rows.count(); ++r)
    for (int64_t c = 0; c < plan.cols.count(); ++c) {
      DecodeObserver tile_observer;
      if (observer) {
        const std::string prefix = "tile." + std::to_string(r) + "." + std::to_string(c) + ".";
        tile_observer = [&observer, prefix](const std::string& name, const Tensor& t) { observer(prefix + name, t); };
      }
      tiles[r].push_back(decode_tile(w, tile_latents(w.config, window, plan, r, c), tile_observer));
    }
  Tensor clip = plan.count() == 1 ? tiles[0][0] : stitch_tiles(tiles, plan, options.blend_precision);
  if (observer) observer("clip", clip);
  return clip;
}

}  // namespace orochi::h3vae
