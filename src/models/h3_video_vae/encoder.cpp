#include "models/h3_video_vae/encoder.h"

#include <thread>

#include <algorithm>
#include <cstring>

#include "backends/cpu/ops.h"
#include "dist/parallel_context.h"
#include "backends/cpu/ops_conv3d.h"

namespace orochi::h3vae {
namespace {

// A MiniMaxH3VideoCausalConv3d: reflect-pad H and W by `spatial_pad` on both sides, put kt − 1
// zero frames in front, convolve.
Tensor causal_conv(const Conv3dWeights& c, const Tensor& x, int64_t spatial_pad, int64_t stride_t = 1,
                   int64_t stride_s = 1) {
  const Tensor padded = spatial_pad > 0 ? cpu::reflect_pad_hw(x, spatial_pad, spatial_pad, spatial_pad, spatial_pad) : x;
  cpu::Conv3dParams p;
  p.stride_t = stride_t, p.stride_h = stride_s, p.stride_w = stride_s;
  p.causal_pad_t = c.weight.dim(2) - 1;
  return cpu::conv3d(padded, c.weight, &c.bias, p);  // [Cout, T', H', W']
}

Tensor norm_silu(const GroupNormWeights& n, const Tensor& x, const VideoVaeConfig& config) {
  return cpu::group_norm_silu_per_frame(x, n.weight, n.bias, config.norm_num_groups,
                                        static_cast<float>(config.norm_eps));
}

void add_inplace(Tensor& acc, const Tensor& y) {
  OROCHI_CHECK(acc.shape() == y.shape(), "residual ", acc.describe(), " vs ", y.describe());
  float* a = acc.data<float>();
  const float* b = y.data<float>();
  for (int64_t i = 0; i < acc.numel(); ++i) a[i] += b[i];
}

Tensor resnet(const EncoderResnetWeights& r, const Tensor& x, const VideoVaeConfig& config) {
  Tensor h = causal_conv(r.conv1, norm_silu(r.norm1, x, config), 1);  // [Cout, T, H, W]
  h = causal_conv(r.conv2, norm_silu(r.norm2, h, config), 1);
  Tensor residual = r.shortcut.weight.defined() ? causal_conv(r.shortcut, x, 0) : x.clone();
  add_inplace(residual, h);  // residual + h, the reference's order
  return residual;
}

// MiniMaxH3VideoDownsample3d: a stride-2 level reflect-pads one pixel on the bottom and right
// only (so the output is ceil(size / 2)); the conv itself has no spatial padding.
Tensor downsample(const EncoderLevelWeights& level, const Tensor& x) {
  const Tensor padded = level.spatial_stride == 2 ? cpu::reflect_pad_hw(x, 0, 1, 0, 1) : x;
  return causal_conv(level.downsample, padded, 0, level.temporal_stride, level.spatial_stride);
}

// Frames [F, F + count) of x [C, F, H, W] along time: [C, count, H, W].
Tensor frames(const Tensor& x, int64_t first, int64_t count) { return x.slice(1, first, first + count).contiguous(); }

// x [C, F, H, W] with its last frame repeated until the count is a multiple of `multiple`.
Tensor pad_with_last_frame(const Tensor& x, int64_t multiple) {
  const int64_t C = x.dim(0), F = x.dim(1), plane = x.dim(2) * x.dim(3);
  const int64_t Fp = (F + multiple - 1) / multiple * multiple;
  if (Fp == F) return x;
  Tensor y = Tensor::uninitialized({C, Fp, x.dim(2), x.dim(3)}, DType::kF32);
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t f = 0; f < Fp; ++f)
      std::memcpy(dst + (c * Fp + f) * plane, src + (c * F + std::min(f, F - 1)) * plane, plane * sizeof(float));
  return y;
}

// Concatenates [C, T_k, h, w] pieces along time.
Tensor concat_time(const std::vector<Tensor>& pieces) {
  const int64_t C = pieces[0].dim(0), plane = pieces[0].dim(2) * pieces[0].dim(3);
  int64_t T = 0;
  for (const Tensor& p : pieces) T += p.dim(1);
  Tensor y = Tensor::uninitialized({C, T, pieces[0].dim(2), pieces[0].dim(3)}, DType::kF32);
  float* dst = y.data<float>();
  int64_t t0 = 0;
  for (const Tensor& p : pieces) {
    const int64_t Tk = p.dim(1);
    for (int64_t c = 0; c < C; ++c)
      std::memcpy(dst + (c * T + t0) * plane, p.data<float>() + c * Tk * plane, Tk * plane * sizeof(float));
    t0 += Tk;
  }
  return y;
}

EncodeObserver prefixed(const EncodeObserver& observer, const std::string& prefix) {
  if (!observer) return nullptr;
  return [observer, prefix](const std::string& name, const Tensor& t) { observer(prefix + name, t); };
}

}  // namespace

Status EncodeOptions::validate(const VideoVaeConfig& config) const {
  DecodeOptions d;
  d.tiling = tiling;
  d.tile_height = tile_height, d.tile_width = tile_width;
  d.min_overlap_height = min_overlap_height, d.min_overlap_width = min_overlap_width;
  return d.validate(config);
}

TilePlan EncodeOptions::plan(const VideoVaeConfig& config, int64_t height, int64_t width) const {
  if (!tiling) return {{{0}, {height}, {}}, {{0}, {width}, {}}};
  return {split_tiles(height, tile_height, min_overlap_height, config.spatial_ratio),
          split_tiles(width, tile_width, min_overlap_width, config.spatial_ratio)};
}

Status check_frame_size(const VideoVaeConfig& c, int64_t height, int64_t width) {
  const struct {
    const char* name;
    int64_t side;
  } sides[] = {{"height", height}, {"width", width}};
  for (const auto& s : sides) {
    int64_t side = s.side;
    bool fits = side >= 2;  // conv_in's reflect pad
    for (size_t i = 0; fits && i < c.spatial_downsample_factors.size(); ++i) {
      const int64_t sf = c.spatial_downsample_factors[i], tf = c.temporal_downsample_factors[i];
      if (sf * tf == 1) continue;                            // no downsampler at this level
      if (sf == 2) side = side >= 2 ? (side - 2) / 2 + 1 : 0;  // pad 1 bottom/right, 3 taps, stride 2
      else side = side >= 3 ? (side - 3) / sf + 1 : 0;       // no pre-pad
      fits = side >= 2;  // the next convs' reflect pad of 1
    }
    if (!fits)
      return invalid_argument(std::string("a frame (or tile) ") + s.name + " of " + std::to_string(s.side) +
                              " px is too small for the video VAE encoder: its reflect padding needs at least 2 "
                              "pixels at every level; use frames of at least " +
                              std::to_string(2 * c.spatial_ratio) + " px");
  }
  return Status::ok();
}

Tensor encode_tile(const EncoderWeights& w, const Tensor& x, const EncodeObserver& observer) {
  const VideoVaeConfig& config = w.config;
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (observer) observer(name, t);
  };
  Tensor h = causal_conv(w.conv_in, x, 1);  // [C0, T, H, W]
  emit("conv_in", h);
  for (size_t i = 0; i < w.levels.size(); ++i) {
    const EncoderLevelWeights& level = w.levels[i];
    const std::string name = "down." + std::to_string(i) + ".";
    for (size_t j = 0; j < level.resnets.size(); ++j) {
      h = resnet(level.resnets[j], h, config);  // [C_i, T, H_i, W_i]
      emit(name + "resnet." + std::to_string(j), h);
    }
    if (level.has_downsample()) {
      h = downsample(level, h);  // [C_i, T / st, H_i / ss, W_i / ss]
      emit(name + "downsample", h);
    }
  }
  if (observer)
    emit("norm_out", cpu::group_norm_per_frame(h, w.norm_out.weight, w.norm_out.bias, config.norm_num_groups,
                                               static_cast<float>(config.norm_eps)));
  h = causal_conv(w.conv_out, norm_silu(w.norm_out, h, config), 1);  // [2·latent, T', h, w]
  emit("conv_out", h);
  h = causal_conv(w.quant_conv, h, 0);  // 1x1x1
  emit("moments", h);
  return h;
}

Expected<Tensor> encode_clip_with(const VideoVaeConfig& config, const TileEncoder& encode, const Tensor& x,
                                  const EncodeOptions& options, const std::string& prefix) {
  const int64_t r = config.spatial_ratio;
  const TilePlan plan = options.plan(config, x.dim(2), x.dim(3));
  std::vector<std::vector<Tensor>> tiles(plan.rows.count());
  for (int64_t i = 0; i < plan.rows.count(); ++i)
    for (int64_t j = 0; j < plan.cols.count(); ++j) {
      const int64_t y0 = plan.rows.starts[i], x0 = plan.cols.starts[j];
      const Tensor tile = x.slice(2, y0, y0 + plan.rows.lengths[i]).slice(3, x0, x0 + plan.cols.lengths[j]).contiguous();
      OROCHI_ASSIGN_OR_RETURN(Tensor m, encode(tile, prefix + "tile." + std::to_string(i) + "." + std::to_string(j) + "."));
      OROCHI_CHECK(m.ndim() == 4 && m.dim(2) == plan.rows.lengths[i] / r && m.dim(3) == plan.cols.lengths[j] / r,
                   "tile moments ", m.describe(), " do not cover the tile's latents");
      tiles[i].push_back(std::move(m));
    }
  if (plan.count() == 1) return tiles[0][0];
  // The stitch runs on the latent grid: every pixel offset / ratio (sizes are whole latents).
  TilePlan latent = plan;
  for (TileAxis* axis : {&latent.rows, &latent.cols}) {
    for (int64_t& v : axis->starts) v /= r;
    for (int64_t& v : axis->lengths) v /= r;
    for (int64_t& v : axis->overlaps) v /= r;
  }
  // The blend runs in the moments' dtype, fp32.
  return stitch_tiles(tiles, latent, BlendPrecision::kF32);
}

Tensor encode_clip(const EncoderWeights& w, const Tensor& x, const EncodeOptions& options,
                   const EncodeObserver& observer) {
  const TileEncoder cpu = [&](const Tensor& tile, const std::string& prefix) -> Expected<Tensor> {
    return encode_tile(w, tile, prefixed(observer, prefix));
  };
  Expected<Tensor> m = encode_clip_with(w.config, cpu, x, options, "");
  OROCHI_CHECK(m.has_value(), m.status().to_string());  // the CPU tile encoder cannot fail
  return std::move(m).value();
}

namespace {

// encode_moments_with's checks of x and the options.
Status check_encoder_input(const VideoVaeConfig& config, const Tensor& x, const EncodeOptions& options) {
  if (!x.defined() || x.dtype() != DType::kF32 || x.ndim() != 4 || x.dim(0) != config.in_channels)
    return invalid_argument("the video VAE encoder takes fp32 pixels [" + std::to_string(config.in_channels) +
                            ", frames, height, width], got " + (x.defined() ? x.describe() : "nothing"));
  const int64_t F = x.dim(1), H = x.dim(2), W = x.dim(3), r = config.spatial_ratio;
  if (F < 1 || H < 1 || W < 1) return invalid_argument("the video VAE encoder got an empty input " + x.describe());
  if (H % r != 0 || W % r != 0)
    return invalid_argument("frames of " + std::to_string(W) + "x" + std::to_string(H) +
                            " px: the video VAE encoder needs both sides to be multiples of " + std::to_string(r) +
                            " px (the pipeline resizes references to multiples of 32)");
  OROCHI_RETURN_IF_ERROR(options.validate(config));
  const TilePlan plan = options.plan(config, H, W);
  return check_frame_size(config, plan.rows.lengths[0], plan.cols.lengths[0]);
}

// The clips' moments concatenated over time, the last token_drop latent frames dropped.
Expected<Tensor> join_clips(const VideoVaeConfig& config, const std::vector<Tensor>& clips) {
  Tensor moments = concat_time(clips);  // [2·latent, 5n, h, w]
  if (config.token_drop > 0) {
    if (moments.dim(1) <= config.token_drop)
      return invalid_argument("the encode gave " + std::to_string(moments.dim(1)) +
                              " latent frames, no more than token_drop; the config's clip geometry is unusable");
    moments = moments.slice(1, 0, moments.dim(1) - config.token_drop).contiguous();
  }
  return moments;
}

}  // namespace

Expected<Tensor> encode_moments_with(const VideoVaeConfig& config, const TileEncoder& encode, const Tensor& x,
                                     const EncodeOptions& options, const EncodeObserver& observer) {
  OROCHI_RETURN_IF_ERROR(check_encoder_input(config, x, options));
  const Tensor input = x.contiguous();
  if (input.dim(1) == 1) {  // a single frame is one clip of one frame: no temporal padding, one latent
    OROCHI_ASSIGN_OR_RETURN(Tensor m, encode_clip_with(config, encode, input, options, "clip.0."));
    if (observer) observer("clip.0", m);
    return m;
  }
  const int64_t L = config.clip_length;
  const Tensor padded = pad_with_last_frame(input, L);  // [3, L·n, H, W]
  std::vector<Tensor> clips;
  for (int64_t k = 0; k < padded.dim(1) / L; ++k) {
    const std::string name = "clip." + std::to_string(k);
    OROCHI_ASSIGN_OR_RETURN(Tensor m, encode_clip_with(config, encode, frames(padded, k * L, L), options, name + "."));
    if (observer) observer(name, m);
    clips.push_back(std::move(m));
  }
  return join_clips(config, clips);
}

Expected<Tensor> encode_moments_split(const VideoVaeConfig& config, dist::ParallelContext& workers,
                                      const std::vector<ClipEncoder>& ranks, const Tensor& x,
                                      const EncodeOptions& options) {
  if (ranks.empty() || static_cast<int>(ranks.size()) > workers.workers())
    return invalid_argument("encode_moments_split needs 1 to " + std::to_string(workers.workers()) +
                            " clip encoders (one per worker), got " + std::to_string(ranks.size()));
  OROCHI_RETURN_IF_ERROR(check_encoder_input(config, x, options));
  const Tensor input = x.contiguous();
  if (input.dim(1) == 1) return ranks[0](input);
  const int64_t L = config.clip_length;
  const Tensor padded = pad_with_last_frame(input, L);  // [3, L·n, H, W]
  const int64_t n = padded.dim(1) / L, R = std::min<int64_t>(static_cast<int64_t>(ranks.size()), n);
  std::vector<Tensor> clips(static_cast<size_t>(n));
  // Rank r takes clips [r·n/R, (r+1)·n/R): contiguous runs, as even as whole clips allow.
  OROCHI_RETURN_IF_ERROR(workers.run(static_cast<int>(R), [&](int r) -> Status {
    for (int64_t k = r * n / R; k < (r + 1) * n / R; ++k) {
      Expected<Tensor> m = ranks[static_cast<size_t>(r)](frames(padded, k * L, L));
      if (!m) return m.status().with_context("clip " + std::to_string(k));
      clips[static_cast<size_t>(k)] = std::move(m).value();
    }
    return Status::ok();
  }));
  return join_clips(config, clips);
}

Expected<Tensor> encode_moments(const EncoderWeights& w, const Tensor& x, const EncodeOptions& options,
                                const EncodeObserver& observer) {
  const TileEncoder cpu = [&](const Tensor& tile, const std::string& prefix) -> Expected<Tensor> {
    return encode_tile(w, tile, prefixed(observer, prefix));
  };
  return encode_moments_with(w.config, cpu, x, options, observer);
}

}  // namespace orochi::h3vae
