// One denoiser forward over a packed t2va layout with random inputs (`orochi forward`): a check that
// a model loads and computes finite velocities, and how long one forward takes, without a pipeline.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace orochi::engine {

struct ForwardRequest {
  int64_t width = 128, height = 64, frames = 22, text_rows = 16;
  uint64_t seed = 0;                    // keys the random rows (counter-based: the same everywhere)
  double t_video = 0.3, t_audio = 0.4;  // the rows' timesteps in [0, 1] (1 = clean)
};

struct ForwardResult {
  int64_t rows = 0, rows_per_frame = 0, latent_frames = 0, audio_latents = 0, timesteps = 0;
  Tensor video, audio;  // the velocities, f32 [Nv, video_patch_dim] and [Na, audio_in_channels]
  double load_s = 0, tables_s = 0, forward_s = 0;
  std::string device;
};

}  // namespace orochi::engine
