// Qwen3-VL's image and video processors as MiniMax-H3 uses them (REF2VA.md §4.1, §4.2), matching
// transformers 5.24's torchvision backend (`Qwen2VLImageProcessor`, the former ...Fast, and
// `Qwen3VLVideoProcessor` called with do_sample_frames=False):
//   1. smart_resize: the size rounded to multiples of patch·merge (32) and brought inside
//      [min_pixels, max_pixels] (for a video, counting the frames rounded to temporal pairs);
//   2. the uint8 bicubic antialiased resize when the size changes (processor_resize.h);
//   3. the fused rescale + normalize, (u8 − mean/rescale) / (std/rescale) in fp32: (u8 − 127.5) /
//      127.5 with H3's mean = std = 0.5;
//   4. patchify to [t·h·w, 3·2·16·16]: an image fills both temporal slots, a video's frames pair
//      up (the last repeated when the count is odd); patches in (t, block_row, block_col,
//      intra_row, intra_col) order, values in (channel, temporal, row, column) order.
// Inputs are RGB8 buffers (decoding lives in src/io); outputs go to the vision tower as they are
// (the GPU path rounds them to bf16 first, as diffusers does).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "models/qwen3vl/vision_grid.h"

namespace orochi::qwen3vl {

// A borrowed RGB picture, uint8 [height, width, 3]: rows top to bottom, pixels left to right
// (io::RgbImage's layout: pass {image.rgb.data(), image.height, image.width}).
struct RgbView {
  const uint8_t* rgb = nullptr;
  int64_t height = 0;
  int64_t width = 0;
};

struct VisionProcessorConfig {
  int64_t min_pixels = 65536;     // size.shortest_edge
  int64_t max_pixels = 16777216;  // size.longest_edge
  int64_t patch_size = 16;
  int64_t temporal_patch_size = 2;
  int64_t merge_size = 2;
  double rescale_factor = 1.0 / 255.0;
  std::array<double, 3> image_mean = {0.5, 0.5, 0.5};
  std::array<double, 3> image_std = {0.5, 0.5, 0.5};

  int64_t factor() const { return patch_size * merge_size; }
  int64_t patch_values() const { return 3 * temporal_patch_size * patch_size * patch_size; }
  Status validate() const;

  // MiniMax-H3's processor/preprocessor_config.json (images: 65 536 .. 16 777 216 pixels) and
  // video_preprocessor_config.json (videos: 4 096 .. 25 165 824), both patch 16, temporal 2, merge
  // 2, mean = std = 0.5, bicubic.
  static VisionProcessorConfig h3_images();
  static VisionProcessorConfig h3_videos();
  // A transformers preprocessor_config.json / video_preprocessor_config.json: size {shortest_edge,
  // longest_edge} (or the legacy min_pixels / max_pixels, which win when present, as transformers'
  // constructor does), patch_size, temporal_patch_size, merge_size, rescale_factor, image_mean,
  // image_std. Fields absent keep H3's values. Errors: invalid_argument (a wrong type or value),
  // unsupported (do_resize / do_rescale / do_normalize false, a resample other than bicubic (3), or
  // cap_pixels_per_frame true).
  static Expected<VisionProcessorConfig> from_json(const nlohmann::json& json, const VisionProcessorConfig& defaults);
};

// transformers' qwen2_vl `smart_resize` (images): (height, width) rounded to multiples of factor()
// inside [min_pixels, max_pixels]. invalid_argument when an aspect ratio exceeds 200 or a size is
// not positive.
Expected<std::pair<int64_t, int64_t>> smart_resize_image(int64_t height, int64_t width,
                                                         const VisionProcessorConfig& config);
// Qwen3-VL's video `smart_resize`: the pixel test counts num_frames rounded to temporal pairs.
// invalid_argument also when num_frames < temporal_patch_size.
Expected<std::pair<int64_t, int64_t>> smart_resize_video(int64_t num_frames, int64_t height, int64_t width,
                                                         const VisionProcessorConfig& config);

struct VisionInputs {
  Tensor pixel_values;         // f32 [sum of patches, 3·tp·p·p]
  std::vector<GridThw> grids;  // one per image or video, in input order
};

// All images of a request in one call (transformers batches them the same way; each image is
// processed on its own). Errors: invalid_argument (no images, an empty or null buffer, an aspect
// ratio over 200).
Expected<VisionInputs> process_images(const std::vector<RgbView>& images, const VisionProcessorConfig& config);

// Videos, each the frames the pipeline sampled (sample_video_frames), all of one size.
// Errors: invalid_argument (no videos, fewer frames than temporal_patch_size, frames of different
// sizes, an empty or null frame).
Expected<VisionInputs> process_videos(const std::vector<std::vector<RgbView>>& videos,
                                      const VisionProcessorConfig& config);

// Which frames of a reference video the conditioner sees, and their labels (diffusers'
// `Ref2VATextEncoderStep._sample_video_condition_frames`): every fps/sample_fps-th frame of the
// normalized canvas video (at 24 fps and 2 fps: 0, 12, 24, … < num_frames), and per temporal block
// the mean of its two timestamps (i / sample_fps; the last repeated to an even count), which the
// presentation renders as "<{ts:.1f} seconds>".
struct SampledVideoFrames {
  std::vector<int64_t> frame_indices;
  std::vector<double> block_timestamps;  // one per temporal block (= the video grid's t)
};
// invalid_argument when fewer than temporal_patch frames are sampled (under 13 frames at 24 -> 2
// fps), or a rate is not positive.
Expected<SampledVideoFrames> sample_video_frames(int64_t num_frames, double fps = 24.0, double sample_fps = 2.0,
                                                 int64_t temporal_patch = 2);

}  // namespace orochi::qwen3vl
