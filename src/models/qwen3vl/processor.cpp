#include "models/qwen3vl/processor.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "models/qwen3vl/processor_resize.h"

namespace orochi::qwen3vl {
namespace {

// Python's round() on a float: half to even (the default FE_TONEAREST mode of nearbyint).
int64_t round_half_even(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

Status check_aspect(int64_t height, int64_t width) {
  if (height <= 0 || width <= 0)
    return invalid_argument("an image or video frame of " + std::to_string(height) + "x" + std::to_string(width) +
                            " pixels has nothing to process");
  const double ratio = static_cast<double>(std::max(height, width)) / static_cast<double>(std::min(height, width));
  if (ratio > 200)
    return invalid_argument("a picture of " + std::to_string(width) + "x" + std::to_string(height) +
                            " has an aspect ratio over 200, which Qwen3-VL's processor refuses; crop it first");
  return Status::ok();
}

// Both smart_resize variants once the pixel count to test (t̄·h̄·w̄) and the one to scale by are known.
std::pair<int64_t, int64_t> fit_pixels(int64_t height, int64_t width, int64_t count_factor, double scale_count,
                                       const VisionProcessorConfig& c) {
  const int64_t f = c.factor();
  const double fd = static_cast<double>(f);
  int64_t h_bar = round_half_even(static_cast<double>(height) / fd) * f;
  int64_t w_bar = round_half_even(static_cast<double>(width) / fd) * f;
  const int64_t pixels = count_factor * h_bar * w_bar;
  if (pixels > c.max_pixels) {
    const double beta = std::sqrt(scale_count * static_cast<double>(height) * static_cast<double>(width) /
                                  static_cast<double>(c.max_pixels));
    h_bar = std::max<int64_t>(f, static_cast<int64_t>(std::floor(static_cast<double>(height) / beta / fd)) * f);
    w_bar = std::max<int64_t>(f, static_cast<int64_t>(std::floor(static_cast<double>(width) / beta / fd)) * f);
  } else if (pixels < c.min_pixels) {
    const double beta = std::sqrt(static_cast<double>(c.min_pixels) /
                                  (scale_count * static_cast<double>(height) * static_cast<double>(width)));
    h_bar = static_cast<int64_t>(std::ceil(static_cast<double>(height) * beta / fd)) * f;
    w_bar = static_cast<int64_t>(std::ceil(static_cast<double>(width) * beta / fd)) * f;
  }
  return {h_bar, w_bar};
}

Status check_view(const RgbView& v, const std::string& what) {
  if (v.rgb == nullptr || v.height <= 0 || v.width <= 0)
    return invalid_argument(what + " is empty (" + std::to_string(v.width) + "x" + std::to_string(v.height) +
                            " pixels, " + (v.rgb ? "with" : "without") + " data); pass a decoded RGB picture");
  return Status::ok();
}

// The fused rescale + normalize constants, in fp32 as torch computes them: mean/std tensors times
// (1 / rescale_factor), then (x − mean) / std per value.
struct Normalizer {
  explicit Normalizer(const VisionProcessorConfig& c) {
    const float inv = static_cast<float>(1.0 / c.rescale_factor);
    for (int k = 0; k < 3; ++k) {
      mean[k] = static_cast<float>(c.image_mean[k]) * inv;
      std[k] = static_cast<float>(c.image_std[k]) * inv;
    }
  }
  float operator()(uint8_t v, int channel) const { return (static_cast<float>(v) - mean[channel]) / std[channel]; }
  float mean[3], std[3];
};

// One picture resized to (out_h, out_w) when its size differs, as uint8 [out_h, out_w, 3].
std::vector<uint8_t> resized(const RgbView& v, int64_t out_h, int64_t out_w) {
  if (out_h == v.height && out_w == v.width) return {v.rgb, v.rgb + v.height * v.width * 3};
  return resize_rgb_bicubic_antialias(v.rgb, v.height, v.width, out_h, out_w);
}

// frames: grid_t · tp pictures of [H, W, 3] (already paired and padded). Writes grid_t·gh·gw rows
// of 3·tp·p·p values at `out`, in the processor's patch and value order.
void patchify(const std::vector<const uint8_t*>& frames, int64_t H, int64_t W, const VisionProcessorConfig& c,
              float* out) {
  const Normalizer norm(c);
  const int64_t p = c.patch_size, m = c.merge_size, tp = c.temporal_patch_size;
  const int64_t gt = static_cast<int64_t>(frames.size()) / tp, gh = H / p, gw = W / p;
  const int64_t values = 3 * tp * p * p;
  const int64_t blocks = gt * (gh / m) * (gw / m);
#pragma omp parallel for schedule(static) if (blocks > 64)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t t = b / ((gh / m) * (gw / m));
    const int64_t br = (b / (gw / m)) % (gh / m), bc = b % (gw / m);
    for (int64_t ir = 0; ir < m; ++ir)
      for (int64_t ic = 0; ic < m; ++ic) {
        const int64_t row = br * m + ir, col = bc * m + ic;
        float* o = out + ((b * m + ir) * m + ic) * values;  // [3, tp, p, p]
        for (int ch = 0; ch < 3; ++ch)
          for (int64_t k = 0; k < tp; ++k) {
            const uint8_t* frame = frames[static_cast<size_t>(t * tp + k)];
            for (int64_t py = 0; py < p; ++py)
              for (int64_t px = 0; px < p; ++px) {
                const uint8_t v = frame[((row * p + py) * W + col * p + px) * 3 + ch];
                o[((ch * tp + k) * p + py) * p + px] = norm(v, ch);
              }
          }
      }
  }
}

Status read_positive(const nlohmann::json& j, const char* key, int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_number_integer() || it->get<int64_t>() <= 0)
    return invalid_argument(std::string("processor config: '") + key + "' must be a positive integer, got " +
                            it->dump());
  out = it->get<int64_t>();
  return Status::ok();
}

Status read_triple(const nlohmann::json& j, const char* key, std::array<double, 3>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (it->is_number()) {
    out.fill(it->get<double>());
    return Status::ok();
  }
  if (!it->is_array() || it->size() != 3)
    return invalid_argument(std::string("processor config: '") + key + "' must be a number or 3 numbers (R, G, B)");
  for (size_t k = 0; k < 3; ++k) {
    if (!(*it)[k].is_number())
      return invalid_argument(std::string("processor config: '") + key + "' must hold numbers, got " + it->dump());
    out[k] = (*it)[k].get<double>();
  }
  return Status::ok();
}

Status require_flag(const nlohmann::json& j, const char* key, bool expected) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_boolean()) return invalid_argument(std::string("processor config: '") + key + "' must be true or false");
  if (it->get<bool>() != expected)
    return unsupported(std::string("processor config: ") + key + " = " + it->dump() +
                       " is not supported (MiniMax-H3's processor uses " + (expected ? "true" : "false") + ")");
  return Status::ok();
}

}  // namespace

Status VisionProcessorConfig::validate() const {
  for (int64_t v : {patch_size, temporal_patch_size, merge_size, min_pixels, max_pixels})
    if (v <= 0) return invalid_argument("processor sizes and pixel limits must be positive");
  if (min_pixels > max_pixels)
    return invalid_argument("processor min_pixels (" + std::to_string(min_pixels) + ") exceeds max_pixels (" +
                            std::to_string(max_pixels) + ")");
  if (!(rescale_factor > 0)) return invalid_argument("processor rescale_factor must be positive");
  for (double s : image_std)
    if (s == 0) return invalid_argument("processor image_std must not be zero");
  return Status::ok();
}

VisionProcessorConfig VisionProcessorConfig::h3_images() { return VisionProcessorConfig{}; }

VisionProcessorConfig VisionProcessorConfig::h3_videos() {
  VisionProcessorConfig c;
  c.min_pixels = 4096;
  c.max_pixels = 25165824;
  return c;
}

Expected<VisionProcessorConfig> VisionProcessorConfig::from_json(const nlohmann::json& j,
                                                                 const VisionProcessorConfig& defaults) {
  if (!j.is_object()) return invalid_argument("a processor config must be a JSON object");
  VisionProcessorConfig c = defaults;
  if (auto it = j.find("size"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return invalid_argument("processor config: 'size' must be an object");
    OROCHI_RETURN_IF_ERROR(read_positive(*it, "shortest_edge", c.min_pixels));
    OROCHI_RETURN_IF_ERROR(read_positive(*it, "longest_edge", c.max_pixels));
  }
  OROCHI_RETURN_IF_ERROR(read_positive(j, "min_pixels", c.min_pixels));
  OROCHI_RETURN_IF_ERROR(read_positive(j, "max_pixels", c.max_pixels));
  OROCHI_RETURN_IF_ERROR(read_positive(j, "patch_size", c.patch_size));
  OROCHI_RETURN_IF_ERROR(read_positive(j, "temporal_patch_size", c.temporal_patch_size));
  OROCHI_RETURN_IF_ERROR(read_positive(j, "merge_size", c.merge_size));
  if (auto it = j.find("rescale_factor"); it != j.end() && !it->is_null()) {
    if (!it->is_number()) return invalid_argument("processor config: 'rescale_factor' must be a number");
    c.rescale_factor = it->get<double>();
  }
  OROCHI_RETURN_IF_ERROR(read_triple(j, "image_mean", c.image_mean));
  OROCHI_RETURN_IF_ERROR(read_triple(j, "image_std", c.image_std));
  OROCHI_RETURN_IF_ERROR(require_flag(j, "do_resize", true));
  OROCHI_RETURN_IF_ERROR(require_flag(j, "do_rescale", true));
  OROCHI_RETURN_IF_ERROR(require_flag(j, "do_normalize", true));
  OROCHI_RETURN_IF_ERROR(require_flag(j, "cap_pixels_per_frame", false));
  if (auto it = j.find("resample"); it != j.end() && !it->is_null() && !(it->is_number_integer() && *it == 3))
    return unsupported("processor config: resample " + it->dump() + " is not supported (bicubic, 3, only)");
  OROCHI_RETURN_IF_ERROR(c.validate().with_context("processor config"));
  return c;
}

Expected<std::pair<int64_t, int64_t>> smart_resize_image(int64_t height, int64_t width,
                                                         const VisionProcessorConfig& c) {
  OROCHI_RETURN_IF_ERROR(c.validate());
  OROCHI_RETURN_IF_ERROR(check_aspect(height, width));
  return fit_pixels(height, width, 1, 1.0, c);
}

Expected<std::pair<int64_t, int64_t>> smart_resize_video(int64_t num_frames, int64_t height, int64_t width,
                                                         const VisionProcessorConfig& c) {
  OROCHI_RETURN_IF_ERROR(c.validate());
  if (num_frames < c.temporal_patch_size)
    return invalid_argument("a video of " + std::to_string(num_frames) + " sampled frames is too short: Qwen3-VL " +
                            "merges frames in groups of " + std::to_string(c.temporal_patch_size));
  if (height <= 0 || width <= 0) return check_aspect(height, width);
  // Frames smaller than one merged patch are first scaled up (int() truncation, as the reference).
  const int64_t f = c.factor();
  if (height < f || width < f) {
    const double scale = std::max(static_cast<double>(f) / static_cast<double>(height),
                                  static_cast<double>(f) / static_cast<double>(width));
    height = static_cast<int64_t>(static_cast<double>(height) * scale);
    width = static_cast<int64_t>(static_cast<double>(width) * scale);
  }
  OROCHI_RETURN_IF_ERROR(check_aspect(height, width));
  const int64_t tp = c.temporal_patch_size;
  const int64_t t_bar = round_half_even(static_cast<double>(num_frames) / static_cast<double>(tp)) * tp;
  return fit_pixels(height, width, t_bar, static_cast<double>(num_frames), c);
}

Expected<VisionInputs> process_images(const std::vector<RgbView>& images, const VisionProcessorConfig& c) {
  OROCHI_RETURN_IF_ERROR(c.validate());
  if (images.empty()) return invalid_argument("process_images needs at least one image");
  VisionInputs out;
  std::vector<std::vector<uint8_t>> pixels;
  int64_t rows = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    OROCHI_RETURN_IF_ERROR(check_view(images[i], "image " + std::to_string(i)));
    OROCHI_ASSIGN_OR_RETURN(auto size, smart_resize_image(images[i].height, images[i].width, c));
    pixels.push_back(resized(images[i], size.first, size.second));
    out.grids.push_back({1, size.first / c.patch_size, size.second / c.patch_size});
    rows += patch_count(out.grids.back());
  }
  out.pixel_values = Tensor::uninitialized({rows, c.patch_values()}, DType::kF32);
  float* dst = out.pixel_values.data<float>();
  for (size_t i = 0; i < images.size(); ++i) {
    const GridThw& g = out.grids[i];
    // An image is its own temporal partner: both slots hold it.
    const std::vector<const uint8_t*> frames(static_cast<size_t>(c.temporal_patch_size), pixels[i].data());
    patchify(frames, g.h * c.patch_size, g.w * c.patch_size, c, dst);
    dst += patch_count(g) * c.patch_values();
  }
  return out;
}

Expected<VisionInputs> process_videos(const std::vector<std::vector<RgbView>>& videos,
                                      const VisionProcessorConfig& c) {
  OROCHI_RETURN_IF_ERROR(c.validate());
  if (videos.empty()) return invalid_argument("process_videos needs at least one video");
  VisionInputs out;
  std::vector<std::vector<std::vector<uint8_t>>> pixels(videos.size());
  int64_t rows = 0;
  for (size_t v = 0; v < videos.size(); ++v) {
    const std::vector<RgbView>& frames = videos[v];
    const std::string name = "video " + std::to_string(v);
    if (frames.empty()) return invalid_argument(name + " has no frames");
    for (size_t f = 0; f < frames.size(); ++f) {
      OROCHI_RETURN_IF_ERROR(check_view(frames[f], name + " frame " + std::to_string(f)));
      if (frames[f].height != frames[0].height || frames[f].width != frames[0].width)
        return invalid_argument(name + " frame " + std::to_string(f) + " is " + std::to_string(frames[f].width) + "x" +
                                std::to_string(frames[f].height) + " but frame 0 is " +
                                std::to_string(frames[0].width) + "x" + std::to_string(frames[0].height) +
                                ": a video's frames must share one size");
    }
    const int64_t n = static_cast<int64_t>(frames.size());
    OROCHI_ASSIGN_OR_RETURN(auto size, smart_resize_video(n, frames[0].height, frames[0].width, c));
    for (const RgbView& f : frames) pixels[v].push_back(resized(f, size.first, size.second));
    const int64_t tp = c.temporal_patch_size;
    out.grids.push_back({(n + tp - 1) / tp, size.first / c.patch_size, size.second / c.patch_size});
    rows += patch_count(out.grids.back());
  }
  out.pixel_values = Tensor::uninitialized({rows, c.patch_values()}, DType::kF32);
  float* dst = out.pixel_values.data<float>();
  for (size_t v = 0; v < videos.size(); ++v) {
    const GridThw& g = out.grids[v];
    std::vector<const uint8_t*> frames;
    for (const auto& f : pixels[v]) frames.push_back(f.data());
    // An odd count repeats the last frame to fill the final temporal pair.
    while (static_cast<int64_t>(frames.size()) < g.t * c.temporal_patch_size) frames.push_back(frames.back());
    patchify(frames, g.h * c.patch_size, g.w * c.patch_size, c, dst);
    dst += patch_count(g) * c.patch_values();
  }
  return out;
}

Expected<SampledVideoFrames> sample_video_frames(int64_t num_frames, double fps, double sample_fps,
                                                 int64_t temporal_patch) {
  if (!(fps > 0) || !(sample_fps > 0) || temporal_patch <= 0)
    return invalid_argument("sample_video_frames needs positive rates and temporal patch, got fps " +
                            std::to_string(fps) + ", sample_fps " + std::to_string(sample_fps));
  const double stride = fps / sample_fps;
  SampledVideoFrames s;
  // A running cursor, rounded half to even and deduplicated, as the pipeline walks it.
  double cursor = 0.0;
  while (round_half_even(cursor) < num_frames) {
    const int64_t index = round_half_even(cursor);
    if (s.frame_indices.empty() || index > s.frame_indices.back()) s.frame_indices.push_back(index);
    cursor += stride;
  }
  const int64_t n = static_cast<int64_t>(s.frame_indices.size());
  if (n < temporal_patch) {
    const int64_t minimum = round_half_even(static_cast<double>(temporal_patch - 1) * stride) + 1;
    return invalid_argument("a reference video is read at " + std::to_string(sample_fps) +
                            " fps and its sampled frames are merged in groups of " + std::to_string(temporal_patch) +
                            ", so it must run at least " + std::to_string(minimum) + " frames at " +
                            std::to_string(fps) + " fps, got " + std::to_string(num_frames));
  }
  std::vector<double> ts;
  for (int64_t i = 0; i < n; ++i) ts.push_back(static_cast<double>(i) / sample_fps);
  while (static_cast<int64_t>(ts.size()) % temporal_patch != 0) ts.push_back(ts.back());
  for (size_t b = 0; b < ts.size(); b += static_cast<size_t>(temporal_patch))
    s.block_timestamps.push_back((ts[b] + ts[b + static_cast<size_t>(temporal_patch) - 1]) / 2);
  return s;
}

}  // namespace orochi::qwen3vl
