#include "pipeline/reference/reference_geometry.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace orochi::pipeline::reference {
namespace {

// Python's round() on a double: half to even (nearbyint in the default rounding mode).
int64_t python_round(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

// max(multiple, round(side / multiple) * multiple), D's snap of one axis.
int64_t snap_axis(double side, int64_t multiple) {
  return std::max(multiple, python_round(side / static_cast<double>(multiple)) * multiple);
}

std::string size_text(int64_t w, int64_t h) { return std::to_string(w) + "x" + std::to_string(h); }

constexpr int64_t kFramesPerChunk = 17;   // the video VAE's clip_length
constexpr int64_t kLatentsPerChunk = 5;   // latent frames a chunk keeps

}  // namespace

Expected<Size> resolve_canvas_size(double aspect_width, double aspect_height, const CanvasRule& rule) {
  if (!(aspect_width > 0) || !(aspect_height > 0))
    return invalid_argument("the aspect ratio must be positive, got " + std::to_string(aspect_width) + ":" +
                            std::to_string(aspect_height));
  const double ratio = aspect_width / aspect_height;
  if (!(0.25 <= ratio && ratio <= 4.0))
    return invalid_argument("MiniMax-H3 supports aspect ratios from 1:4 to 4:1, got " + std::to_string(aspect_width) +
                            ":" + std::to_string(aspect_height) + "; crop the picture or video closer to that range");
  double width, height;
  if (ratio >= 1.0) {
    width = static_cast<double>(rule.short_edge) * ratio;
    height = static_cast<double>(rule.short_edge);
  } else {
    width = static_cast<double>(rule.short_edge);
    height = static_cast<double>(rule.short_edge) / ratio;
  }
  const double area = width * height;
  if (area > static_cast<double>(rule.max_pixels)) {
    const double scale = std::pow(static_cast<double>(rule.max_pixels) / area, 0.5);
    width = width * scale;
    height = height * scale;
  }
  return Size{snap_axis(width, rule.multiple), snap_axis(height, rule.multiple)};
}

Expected<Size> reference_image_size(int64_t width, int64_t height, ImageSizePolicy policy, Size canvas,
                                    int64_t short_edge, int64_t multiple) {
  if (width <= 0 || height <= 0)
    return invalid_argument("a reference image must have a positive size, got " + size_text(width, height));
  if (width > 4 * height || height > 4 * width)
    return invalid_argument("a reference image must be within 1:4 and 4:1, got " + size_text(width, height) +
                            "; crop it closer to that range");
  double scale;
  if (policy == ImageSizePolicy::kShortEdge) {
    scale = static_cast<double>(short_edge) / static_cast<double>(std::min(width, height));
  } else {
    // ComfyUI's "match": down only, to the canvas's area (math.sqrt of an int / int quotient).
    const double ratio = static_cast<double>(canvas.width * canvas.height) / static_cast<double>(width * height);
    scale = std::min(1.0, std::sqrt(ratio));
  }
  return Size{snap_axis(static_cast<double>(width) * scale, multiple),
              snap_axis(static_cast<double>(height) * scale, multiple)};
}

Expected<Size> reference_video_canvas(int64_t width, int64_t height, const CanvasRule& rule, ImageSizePolicy policy) {
  if (width <= 0 || height <= 0)
    return invalid_argument("a reference video must have a positive size, got " + size_text(width, height));
  OROCHI_ASSIGN_OR_RETURN(const Size own,
                          resolve_canvas_size(static_cast<double>(width), static_cast<double>(height), rule));
  if (policy == ImageSizePolicy::kShortEdge || own.width * own.height <= width * height) return own;
  // `match` at scale 1 (the canvas would upscale it): the source snapped to the multiple.
  return reference_image_size(width, height, ImageSizePolicy::kMatch, {width, height}, 0, rule.multiple);
}

Expected<CoverCrop> cover_crop(int64_t width, int64_t height, Size canvas) {
  if (width <= 0 || height <= 0 || canvas.width <= 0 || canvas.height <= 0)
    return invalid_argument("cannot cover a " + size_text(canvas.width, canvas.height) + " canvas with a " +
                            size_text(width, height) + " image: both need positive sizes");
  const double scale = std::max(static_cast<double>(canvas.width) / static_cast<double>(width),
                                static_cast<double>(canvas.height) / static_cast<double>(height));
  CoverCrop c;
  c.resized.width = std::max(canvas.width, python_round(static_cast<double>(width) * scale));
  c.resized.height = std::max(canvas.height, python_round(static_cast<double>(height) * scale));
  c.left = std::max<int64_t>(0, (c.resized.width - canvas.width) / 2);
  c.top = std::max<int64_t>(0, (c.resized.height - canvas.height) / 2);
  return c;
}

Expected<int64_t> align_num_frames(int64_t frames) {
  if (frames < 1) return invalid_argument("the frame count must be positive, got " + std::to_string(frames));
  const int64_t r = frames % kFramesPerChunk;
  return frames + (kLatentsPerChunk - r + kFramesPerChunk) % kFramesPerChunk;
}

int64_t reference_video_vae_frames(int64_t frames) {
  // Python's // floors: for n < 5 the quotient is negative and max(1, ...) takes over.
  const int64_t d = frames - kLatentsPerChunk;
  const int64_t chunks = d >= 0 ? d / kFramesPerChunk : -((-d + kFramesPerChunk - 1) / kFramesPerChunk);
  return std::max<int64_t>(1, chunks) * kFramesPerChunk + kLatentsPerChunk;
}

int64_t video_latent_frames(int64_t frames) {
  if (frames <= 1) return 1;
  return (frames - kLatentsPerChunk) / kFramesPerChunk * kLatentsPerChunk + 2;
}

EncodedVideo encoded_reference_video(int64_t frames) {
  EncodedVideo e;
  e.frames = std::min(frames, reference_video_vae_frames(frames));
  constexpr int64_t kDroppedLatents = 3;  // D drops the last 3 latents of the whole sequence
  e.latents = e.frames <= 1 ? 1
                            : (e.frames + kFramesPerChunk - 1) / kFramesPerChunk * kLatentsPerChunk - kDroppedLatents;
  return e;
}

}  // namespace orochi::pipeline::reference
