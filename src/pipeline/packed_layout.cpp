#include "pipeline/packed_layout.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace orochi::pipeline {
namespace {

constexpr double kFrameRescale = 5.0 / 3.0;  // rotary units per pixel frame (24 fps -> 40 units/s)
constexpr int kFramesPerLatent[5] = {1, 4, 4, 4, 4};
constexpr double kSpatialScale = 32.0;

// numpy's pairwise summation (blocks of 8 unrolled, split in halves above 128 elements), which the
// reference uses for the "last" keyframe anchor.
double pairwise_sum(const double* a, int64_t n) {
  if (n < 8) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += a[i];
    return s;
  }
  if (n <= 128) {
    double r[8];
    for (int i = 0; i < 8; ++i) r[i] = a[i];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) s += a[i];
    return s;
  }
  int64_t half = n / 2;
  half -= half % 8;
  return pairwise_sum(a, half) + pairwise_sum(a + half, n - half);
}

Tensor arange_indices(int64_t begin, int64_t end) {
  std::vector<int64_t> v(end - begin);
  std::iota(v.begin(), v.end(), begin);
  return Tensor::from_ints(v, {end - begin});
}

}  // namespace

std::vector<double> spatial_position_grid(int64_t dim, int64_t patch, double sqrt_area) {
  const double ratio = static_cast<double>(dim) / sqrt_area;
  const double left = (1.0 - ratio) / 2.0;
  const int64_t n = dim / patch;
  const double step = ((left + ratio) - left) / static_cast<double>(n);
  std::vector<double> grid(n);
  for (int64_t k = 0; k < n; ++k) grid[k] = (static_cast<double>(k) * step + left) * kSpatialScale;
  return grid;
}

FrameGrid frame_position_grid(int64_t latent_height, int64_t latent_width, int64_t patch_h, int64_t patch_w) {
  const double sqrt_area = std::sqrt(static_cast<double>(latent_height * latent_width));
  return {spatial_position_grid(latent_height, patch_h, sqrt_area),
          spatial_position_grid(latent_width, patch_w, sqrt_area)};
}

std::vector<double> temporal_position_grid(int64_t frames, double origin, double* span) {
  std::vector<double> t(frames);
  double acc = 0.0;
  for (int64_t k = 0; k < frames; ++k) {
    t[k] = origin + acc;
    acc += kFrameRescale * kFramesPerLatent[k % 5];
  }
  if (span) *span = acc;
  return t;
}

void fill_frame_positions(std::vector<double>& pos, int64_t first_row, double t, const FrameGrid& grid) {
  int64_t row = first_row;
  for (double h : grid.h)
    for (double w : grid.w) {
      pos[row * 3 + 0] = t;
      pos[row * 3 + 1] = h;
      pos[row * 3 + 2] = w;
      ++row;
    }
}

void fill_audio_positions(std::vector<double>& pos, int64_t first_row, int64_t latents, int64_t channels,
                          double t, const std::vector<double>& width_grid) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t j = 0; j < latents; ++j) {
      const int64_t row = first_row + c * latents + j;
      pos[row * 3 + 0] = t + static_cast<double>(j);
      pos[row * 3 + 1] = 0.0;
      pos[row * 3 + 2] = c == 0 ? width_grid.front() : width_grid.back();  // pinned to the grid's extremes
    }
}

Expected<PackedLayout> build_packed_layout(const LayoutRequest& r) {
  if (r.text_rows < 1) return invalid_argument("the prompt produced no text rows");
  if (r.latent_frames < 1 || r.latent_height < r.patch_h || r.latent_width < r.patch_w)
    return invalid_argument("the canvas or frame count is too small for one latent patch");
  if (r.latent_height % r.patch_h || r.latent_width % r.patch_w)
    return invalid_argument("the latent canvas must be a multiple of the patch (canvas a multiple of 32 px)");
  if (r.audio_latents < 0 || r.audio_channels < 1) return invalid_argument("bad audio latent count");

  PackedLayout out;
  const int64_t L = r.text_rows;
  out.rows_per_frame = (r.latent_height / r.patch_h) * (r.latent_width / r.patch_w);
  out.condition_video_rows = static_cast<int64_t>(r.keyframes.size()) * out.rows_per_frame;
  const int64_t audio_rows = r.audio_latents * r.audio_channels;
  const int64_t video_rows = r.latent_frames * out.rows_per_frame;
  const int64_t cond_start = L, audio_start = cond_start + out.condition_video_rows;
  const int64_t video_start = audio_start + audio_rows;
  out.rows = video_start + video_rows;

  const FrameGrid grid = frame_position_grid(r.latent_height, r.latent_width, r.patch_h, r.patch_w);
  std::vector<double> pos(out.rows * 3, 0.0);
  for (int64_t j = 0; j < L; ++j) pos[j * 3] = static_cast<double>(j);
  for (size_t i = 0; i < r.keyframes.size(); ++i) {
    double t = static_cast<double>(L);
    if (r.keyframes[i] == KeyframeAnchor::kLast) {
      std::vector<double> spans(r.latent_frames);
      for (int64_t k = 0; k < r.latent_frames; ++k) spans[k] = kFrameRescale * kFramesPerLatent[k % 5];
      t = static_cast<double>(L) + pairwise_sum(spans.data(), r.latent_frames) - kFrameRescale;
    }
    fill_frame_positions(pos, cond_start + static_cast<int64_t>(i) * out.rows_per_frame, t, grid);
  }
  fill_audio_positions(pos, audio_start, r.audio_latents, r.audio_channels, static_cast<double>(L), grid.w);
  const std::vector<double> times = temporal_position_grid(r.latent_frames, static_cast<double>(L));
  for (int64_t k = 0; k < r.latent_frames; ++k)
    fill_frame_positions(pos, video_start + k * out.rows_per_frame, times[k], grid);

  std::vector<float> pos_f(pos.begin(), pos.end());
  out.positions = Tensor::from_floats(pos_f, {out.rows, 3});
  std::vector<int64_t> tags(out.rows, 0);  // video by default
  std::fill(tags.begin(), tags.begin() + L, 1);
  std::fill(tags.begin() + audio_start, tags.begin() + video_start, 2);
  out.token_tags = Tensor::from_ints(tags, {out.rows});
  std::vector<int64_t> video(out.condition_video_rows + video_rows);
  std::iota(video.begin(), video.begin() + out.condition_video_rows, cond_start);
  std::iota(video.begin() + out.condition_video_rows, video.end(), video_start);
  out.video_indices = Tensor::from_ints(video, {static_cast<int64_t>(video.size())});
  out.audio_indices = arange_indices(audio_start, video_start);
  out.text_indices = arange_indices(0, L);
  return out;
}

RowTimesteps assign_row_timesteps(const PackedLayout& layout, float t_video, float t_audio) {
  std::vector<float> row_t(layout.rows, t_video);
  const int64_t* vi = layout.video_indices.data<int64_t>();
  for (int64_t i = 0; i < layout.condition_video_rows; ++i) row_t[vi[i]] = std::max(t_video, kConditionTimestep);
  const int64_t* ai = layout.audio_indices.data<int64_t>();
  for (int64_t i = 0; i < layout.audio_indices.numel(); ++i)
    row_t[ai[i]] = i < layout.condition_audio_rows ? kReferenceAudioTimestep : t_audio;
  std::vector<float> distinct = row_t;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<int64_t> idx(layout.rows);
  for (int64_t s = 0; s < layout.rows; ++s)
    idx[s] = std::lower_bound(distinct.begin(), distinct.end(), row_t[s]) - distinct.begin();
  return {Tensor::from_floats(distinct, {static_cast<int64_t>(distinct.size())}),
          Tensor::from_ints(idx, {layout.rows})};
}

}  // namespace orochi::pipeline
