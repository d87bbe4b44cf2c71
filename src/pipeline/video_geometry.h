// From a user's canvas and frame count to latent sizes, with the errors a user needs: the canvas
// must be a multiple of 32 px and the frame count 17n + 5 (what the video VAE can produce).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace orochi::pipeline {

struct VideoGeometry {
  int64_t width = 0, height = 0, frames = 0;  // pixels, pixel frames (17n + 5)
  int64_t latent_frames = 0;                   // 5n + 2
  int64_t latent_height = 0, latent_width = 0; // pixels / 16
  int64_t audio_latents = 0;                   // per channel: round(frames / 24 fps * 40 latents/s)
};

Expected<VideoGeometry> video_geometry(int64_t width, int64_t height, int64_t frames);

}  // namespace orochi::pipeline
