#include "pipeline/video_geometry.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace orochi::pipeline {

namespace {
constexpr int64_t kMultiple = 32, kMaxSide = 8192;
}  // namespace

Expected<VideoGeometry> video_geometry(int64_t width, int64_t height, int64_t frames) {
  if (width <= 0 || height <= 0 || width % kMultiple || height % kMultiple || width > kMaxSide ||
      height > kMaxSide) {
    auto snap = [](int64_t v) { return std::max<int64_t>(kMultiple, (v + kMultiple / 2) / kMultiple * kMultiple); };
    return invalid_argument("the canvas must be a positive multiple of 32 px up to 8192 per side, got " +
                            std::to_string(width) + "x" + std::to_string(height) + "; try " +
                            std::to_string(snap(width)) + "x" + std::to_string(snap(height)));
  }
  if (frames < 5 || (frames - 5) % 17 != 0 || frames > 17 * 1000 + 5) {
    const int64_t below = frames < 5 ? 5 : (frames - 5) / 17 * 17 + 5;
    const int64_t above = frames < 5 ? 22 : below + 17;
    return invalid_argument("the video VAE makes 17n + 5 frames; " + std::to_string(frames) +
                            " is not one: the nearest valid counts are " + std::to_string(below) + " and " +
                            std::to_string(above));
  }
  VideoGeometry g;
  g.width = width;
  g.height = height;
  g.frames = frames;
  g.latent_frames = (frames - 5) / 17 * 5 + 2;
  g.latent_height = height / 16;
  g.latent_width = width / 16;
  g.audio_latents = std::llround(static_cast<double>(frames) / 24.0 * 40.0);
  return g;
}

}  // namespace orochi::pipeline
