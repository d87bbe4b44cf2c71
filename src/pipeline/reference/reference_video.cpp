#include "pipeline/reference/reference_video.h"

#include <cmath>
#include <cstring>
#include <string>

#include "pipeline/reference/pil_lanczos.h"

namespace orochi::pipeline::reference {

Expected<std::vector<int64_t>> frame_indices_at_24fps(int64_t frames, double fps) {
  if (!(fps > 0) || !std::isfinite(fps))
    return invalid_argument("a reference video must have a positive frame rate, got " + std::to_string(fps) +
                            "; give the rate its frames were recorded at");
  if (frames < 0) return invalid_argument("negative frame count " + std::to_string(frames));
  std::vector<int64_t> indices;
  if (fps == kModelFps) {
    for (int64_t i = 0; i < frames; ++i) indices.push_back(i);
    return indices;
  }
  // numpy: floor(arange(N) * scale + 0.5) in float64, np.diff with the end slot appended.
  const double scale = kModelFps / fps;
  auto slot = [scale](int64_t i) { return static_cast<int64_t>(std::floor(static_cast<double>(i) * scale + 0.5)); };
  for (int64_t i = 0; i < frames; ++i) {
    const int64_t repeats = slot(i + 1) - slot(i);  // slot(N) is D's end slot
    for (int64_t r = 0; r < repeats; ++r) indices.push_back(i);
  }
  return indices;
}

Expected<io::VideoFrames> normalize_reference_video(const io::VideoFrames& video, double fps, int64_t num_frames,
                                                     const CanvasRule& rule, std::optional<Size> canvas_given) {
  OROCHI_RETURN_IF_ERROR(io::validate_video(video));
  if (num_frames < 1)
    return invalid_argument("the target frame count must be positive, got " + std::to_string(num_frames));
  OROCHI_ASSIGN_OR_RETURN(std::vector<int64_t> indices, frame_indices_at_24fps(video.frames, fps));
  if (static_cast<int64_t>(indices.size()) > num_frames) indices.resize(num_frames);
  if (indices.empty())
    return invalid_argument("a reference video of " + std::to_string(video.frames) + " frames at " +
                            std::to_string(fps) + " fps has no frame on the 24 fps grid; give a longer video");
  OROCHI_ASSIGN_OR_RETURN(
      const Size own, resolve_canvas_size(static_cast<double>(video.width), static_cast<double>(video.height), rule));
  const Size canvas = canvas_given.value_or(own);
  if (canvas.width <= 0 || canvas.height <= 0)
    return invalid_argument("a reference video's canvas must have a positive size");
  io::VideoFrames out;
  out.frames = static_cast<int64_t>(indices.size());
  out.height = canvas.height;
  out.width = canvas.width;
  out.fps = io::FrameRate{24, 1};
  out.rgb.resize(static_cast<size_t>(out.frames * out.frame_bytes()));
  // Each distinct source frame resized once (the frames on all threads); a repeated frame copies
  // the slot before it, as it resizes to the same pixels.
  std::vector<const uint8_t*> sources;
  std::vector<uint8_t*> targets;
  for (int64_t f = 0; f < out.frames; ++f)
    if (f == 0 || indices[f] != indices[f - 1]) {
      sources.push_back(video.frame(indices[f]));
      targets.push_back(out.frame(f));
    }
  pil_lanczos_resize_frames(sources, video.height, video.width, targets, out.height, out.width);
  for (int64_t f = 1; f < out.frames; ++f)
    if (indices[f] == indices[f - 1])
      std::memcpy(out.frame(f), out.frame(f - 1), static_cast<size_t>(out.frame_bytes()));
  return out;
}

}  // namespace orochi::pipeline::reference
