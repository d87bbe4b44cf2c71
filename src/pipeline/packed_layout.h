// The packed sequence of a t2va / fl2va request, as diffusers' MiniMax-H3 pipeline builds it:
//   [text L | keyframe conditioning rows | target audio (channel-major) | target video]
// with rotary (t, h, w) positions, modality tags and the per-row timestep plan.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace orochi::pipeline {

enum class KeyframeAnchor { kFirst, kLast };

// The level conditioning rows are noised to and held at (components.keyframe_noise_aug): their
// latents are mixed 0.999·z + (1 − 0.999)·ε once, and their rows take max(t_v, 0.999) every step.
inline constexpr float kConditionTimestep = 0.999f;
// ref2va reference audio rows are clean and held at t = 1.0 every step.
inline constexpr float kReferenceAudioTimestep = 1.0f;

struct LayoutRequest {
  int64_t text_rows = 0;
  int64_t latent_frames = 0;      // T = 5n + 2 for 17n + 5 pixel frames
  int64_t latent_height = 0;      // pixel height / 16
  int64_t latent_width = 0;
  int64_t audio_latents = 0;      // per channel; round(frames / 24 * 40) in the pipeline
  int64_t audio_channels = 2;     // stereo, channel-major
  int64_t patch_h = 2, patch_w = 2;
  std::vector<KeyframeAnchor> keyframes;  // fl2va conditioning frames, in packed order
};

struct PackedLayout {
  int64_t rows = 0;                // S
  int64_t rows_per_frame = 0;
  int64_t condition_video_rows = 0;  // the leading video_indices that are conditioning rows
  int64_t condition_audio_rows = 0;  // the leading audio_indices that are reference rows (ref2va)
  Tensor positions;      // f32 [S, 3] (built in f64, cast once, as the reference does)
  Tensor token_tags;     // i64 [S]
  Tensor video_indices;  // i64 [Nv], conditioning rows first
  Tensor audio_indices;  // i64 [Na]
  Tensor text_indices;   // i64 [L]
};

Expected<PackedLayout> build_packed_layout(const LayoutRequest& request);

// The distinct timesteps of one forward and each row's index into them: text and target video
// at t_video, target audio at t_audio, conditioning video at max(t_video, 0.999), reference audio
// at 1.0 (D MiniMaxH3SetTimestepsStep.build_row_timesteps).
struct RowTimesteps {
  Tensor timesteps;  // f32 [n_t], sorted ascending
  Tensor indices;    // i64 [S]
};
RowTimesteps assign_row_timesteps(const PackedLayout& layout, float t_video, float t_audio);

// One spatial rotary axis: dim/patch aspect-normalized coordinates scaled by 32 (f64), computed
// as numpy's linspace(endpoint=False) computes them.
std::vector<double> spatial_position_grid(int64_t dim, int64_t patch, double sqrt_area);

// Pieces the t2va/fl2va and ref2va builders share, on an f64 [S, 3] position buffer.
// The (h, w) axes of one latent frame, aspect-normalized over its own area.
struct FrameGrid {
  std::vector<double> h, w;
  int64_t rows() const { return static_cast<int64_t>(h.size() * w.size()); }
};
FrameGrid frame_position_grid(int64_t latent_height, int64_t latent_width, int64_t patch_h, int64_t patch_w);
// Rotary time of each latent frame from `origin`: a sequential f64 cumulative sum of
// 5/3 * (1,4,4,4,4). `span`, if given, receives the sequential sum of all `frames` terms.
std::vector<double> temporal_position_grid(int64_t frames, double origin, double* span = nullptr);
// One frame's rows from `first_row`, row-major over the grid, all at time t.
void fill_frame_positions(std::vector<double>& pos, int64_t first_row, double t, const FrameGrid& grid);
// One channel-major audio block from `first_row`: row (c, j) at (t + j, 0, w) with w the first
// width coordinate for channel 0 and the last for the others.
void fill_audio_positions(std::vector<double>& pos, int64_t first_row, int64_t latents, int64_t channels,
                          double t, const std::vector<double>& width_grid);

}  // namespace orochi::pipeline
