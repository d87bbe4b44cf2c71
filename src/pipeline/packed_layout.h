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
  int64_t condition_video_rows = 0;
  Tensor positions;      // f32 [S, 3] (built in f64, cast once, as the reference does)
  Tensor token_tags;     // i64 [S]
  Tensor video_indices;  // i64 [Nv], conditioning rows first
  Tensor audio_indices;  // i64 [Na]
  Tensor text_indices;   // i64 [L]
};

Expected<PackedLayout> build_packed_layout(const LayoutRequest& request);

// The distinct timesteps of one forward and each row's index into them: text and target video
// at t_video, target audio at t_audio, conditioning video at max(t_video, 0.999).
struct RowTimesteps {
  Tensor timesteps;  // f32 [n_t], sorted ascending
  Tensor indices;    // i64 [S]
};
RowTimesteps assign_row_timesteps(const PackedLayout& layout, float t_video, float t_audio);

// One spatial rotary axis: dim/patch aspect-normalized coordinates scaled by 32 (f64), computed
// as numpy's linspace(endpoint=False) computes them.
std::vector<double> spatial_position_grid(int64_t dim, int64_t patch, double sqrt_area);

}  // namespace orochi::pipeline
