#include "pipeline/video_geometry.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace orochi::pipeline {

namespace {
constexpr int64_t kMultiple = 32, kMaxSide = 8192;
constexpr int64_t kMinFrames = 5, kMaxFrames = 17 * 1000 + 5;
}  // namespace

Expected<VideoGeometry> video_geometry(int64_t width, int64_t height, int64_t frames) {
  if (width <= 0 || height <= 0 || width % kMultiple || height % kMultiple || width > kMaxSide ||
      height > kMaxSide) {
    // The suggestion is a canvas this check accepts: the nearest multiple of 32 within [32, 8192].
    auto snap = [](int64_t v) {
      const int64_t rounded = v > kMaxSide ? kMaxSide : (v + kMultiple / 2) / kMultiple * kMultiple;
      return std::clamp<int64_t>(rounded, kMultiple, kMaxSide);
    };
    return invalid_argument("the canvas must be a positive multiple of 32 px up to 8192 per side, got " +
                            std::to_string(width) + "x" + std::to_string(height) + "; try " +
                            std::to_string(snap(width)) + "x" + std::to_string(snap(height)));
  }
  if (frames < kMinFrames || (frames - kMinFrames) % 17 != 0 || frames > kMaxFrames) {
    // Suggestions are counts this check accepts: the valid neighbours within [5, 17005].
    std::string nearest;
    if (frames < kMinFrames) {
      nearest = "the fewest are " + std::to_string(kMinFrames) + " (then " + std::to_string(kMinFrames + 17) + ")";
    } else if (frames > kMaxFrames) {
      nearest = "the most are " + std::to_string(kMaxFrames);
    } else {
      const int64_t below = (frames - kMinFrames) / 17 * 17 + kMinFrames;
      nearest = "the nearest valid counts are " + std::to_string(below) + " and " + std::to_string(below + 17);
    }
    return invalid_argument("the video VAE makes 17n + 5 frames, " + std::to_string(kMinFrames) + " to " +
                            std::to_string(kMaxFrames) + "; " + std::to_string(frames) + " is not one: " + nearest);
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
