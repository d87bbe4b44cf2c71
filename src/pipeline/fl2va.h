// A MiniMax-H3 first/last-keyframe-to-video-with-audio run (fl2va), as diffusers' modular pipeline
// runs it (MODELS_H3.md §1.6, §2; REF2VA.md §0, §1): the keyframes are put onto the canvas
// (MiniMaxH3ResizeStep: the first present stretched, a second cover-cropped, PIL LANCZOS), each is
// encoded as one latent frame by the video VAE's spatial path with the seed-42 posterior sample,
// fp16 rounding and normalization (h3vae::encode_condition), and the rest is t2va's run (t2va.h)
// with those latents as keyframe conditioning rows: noised once to 0.999, held at max(t_v, 0.999),
// never stepped, cut off before the decode.
#pragma once

#include <atomic>
#include <optional>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "io/media_in.h"
#include "pipeline/encoders.h"
#include "pipeline/reference/reference_geometry.h"
#include "pipeline/t2va.h"

namespace orochi::pipeline {

struct Fl2vaKeyframe {
  KeyframeAnchor anchor = KeyframeAnchor::kFirst;
  io::RgbImage image;  // as read (read_image: EXIF applied, RGB)
};

// The keyframes on the canvas, in packed order (first, then last).
struct Fl2vaKeyframes {
  reference::Size canvas;
  std::vector<KeyframeAnchor> anchors;
  std::vector<io::RgbImage> images;  // each canvas.width x canvas.height
};

// D MiniMaxH3ResizeStep. `keyframes`: at most one first and one last, in any order (they are put
// into packed order). The canvas is `canvas` when given, else the one `rule` resolves the first
// present keyframe's aspect to (REF2VA.md §0; the release's rule is CanvasRule{}). invalid_argument
// for no keyframe, two of one anchor, an aspect beyond 4:1, or a canvas not a multiple of 32.
Expected<Fl2vaKeyframes> prepare_fl2va_keyframes(const std::vector<Fl2vaKeyframe>& keyframes,
                                                 std::optional<reference::Size> canvas = {},
                                                 const reference::CanvasRule& rule = {});

// One canvas image as the VAE takes it: u8 [3, 1, H, W].
Tensor keyframe_pixels(const io::RgbImage& image);

// Every keyframe through the encoder's encode_condition (one frame, tiled, posterior seed 42, fp16,
// normalized): f32 [C, 1, H/16, W/16] each, in the given order. `progress` sees stage "keyframe
// encode" once per keyframe; kCancelled when `cancel` is set before one.
Expected<std::vector<Tensor>> encode_keyframes(VideoEncoder& encoder, const std::vector<io::RgbImage>& images,
                                               const T2vaProgressCallback& progress = nullptr,
                                               const std::atomic<bool>* cancel = nullptr);

// plan_t2va for a shape with one or two keyframes (invalid_argument without any).
Expected<T2vaPlan> plan_fl2va(const h3::H3Config& config, const T2vaShape& shape);

struct Fl2vaRequest {
  T2vaRequest base;                   // sizes = the keyframes' canvas; condition_latents left empty
  std::vector<io::RgbImage> keyframes;  // on the canvas, in the plan's packed order
};

// Encodes the keyframes (progress stage "keyframe encode", once per keyframe), then runs t2va's
// stages with them as the conditioning (run_t2va). The result's times.condition_encode_s is the encode.
Expected<T2vaResult> run_fl2va(models::Denoiser& denoiser, VideoDecoder& video_vae, AudioDecoder& audio_vae,
                               VideoEncoder& encoder, const Fl2vaRequest& request,
                               const T2vaPlan& plan, const T2vaRunOptions& options = {});

}  // namespace orochi::pipeline
