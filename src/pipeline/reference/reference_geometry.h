// Sizes and frame counts of ref2va / fl2va references, as diffusers' MiniMax-H3 pipeline computes them
// (../shared/docs/REF2VA.md §0, §1.2, §2): the canvas an aspect ratio resolves to, the 2048-short-edge
// size of a reference image (or the `match` policy), the fl2va cover crop, and the frame-count rules.
// Pure arithmetic in double with Python's rounding (round half to even), so the sizes equal D's.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace orochi::pipeline::reference {

struct CanvasRule {
  int64_t multiple = 32;               // both axes round to this
  int64_t short_edge = 768;            // config canvas_short_edge
  int64_t max_pixels = 768 * 1344;     // config canvas_max_pixels
};

struct Size {
  int64_t width = 0, height = 0;
  bool operator==(const Size&) const = default;
};

// D `resolve_canvas_size(aspect_w, aspect_h, ...)`: the short edge at rule.short_edge, the area capped
// at rule.max_pixels, both axes rounded to the multiple (half to even, at least one multiple).
// invalid_argument for a non-positive side or an aspect outside [1/4, 4].
Expected<Size> resolve_canvas_size(double aspect_width, double aspect_height, const CanvasRule& rule = {});

// How a reference image is sized before the VAE.
enum class ImageSizePolicy {
  kShortEdge,  // D (diffusers, S default): short edge 2048, upscaling included, no area cap
  kMatch,      // C default / S "match": never upscale; scale by sqrt(canvas area / image area) when larger
};

// D `Ref2VASetupStep`: s = short_edge / min(w, h); each axis round(side * s / 32) * 32, at least 32.
// kMatch: s = min(1, sqrt(canvas_w * canvas_h / (w * h))) with the same rounding.
// invalid_argument for an empty image or one beyond 4:1 either way.
Expected<Size> reference_image_size(int64_t width, int64_t height, ImageSizePolicy policy = ImageSizePolicy::kShortEdge,
                                    Size canvas = {1344, 768}, int64_t short_edge = 2048, int64_t multiple = 32);

// The canvas a reference video's frames are resized to: D's (and S's) canvas its own aspect resolves
// to (resolve_canvas_size with `rule`, upscaling included); under kMatch (ComfyUI's: never upscale) that
// canvas only when it is not larger than the video, else the video's own size snapped to the multiple.
// invalid_argument for an empty video or one beyond 4:1.
Expected<Size> reference_video_canvas(int64_t width, int64_t height, const CanvasRule& rule = {},
                                      ImageSizePolicy policy = ImageSizePolicy::kShortEdge);

// D `MiniMaxH3ResizeStep` for the second fl2va keyframe: the LANCZOS size that covers the canvas and the
// centred crop window inside it.
struct CoverCrop {
  Size resized;
  int64_t left = 0, top = 0;
};
Expected<CoverCrop> cover_crop(int64_t width, int64_t height, Size canvas);

// D `align_num_frames`: `frames` snapped up to the next 17n + 5. invalid_argument for frames < 1.
Expected<int64_t> align_num_frames(int64_t frames);

// D's snap-down of a reference video before the VAE: max(1, (n - 5) // 17) * 17 + 5 (n >= 1; fewer
// frames than that are padded with the last one by the encoder).
int64_t reference_video_vae_frames(int64_t frames);

// Latent frames of a 17n + 5 frame clip: 5n + 2 (and 1 for a single frame).
int64_t video_latent_frames(int64_t frames);

// A normalized reference video of `frames` frames (>= 1) as the VAE encodes it: its first
// min(frames, reference_video_vae_frames(frames)) frames (fewer than one clip stay as they are; the
// encoder pads them with the last one) in ceil(P / 17) clips of 5 latents each, less the last 3 of
// the whole sequence (1 latent for a single frame).
struct EncodedVideo {
  int64_t frames = 0;   // P
  int64_t latents = 0;  // T_r (5n + 2 for P = 17n + 5)
};
EncodedVideo encoded_reference_video(int64_t frames);

}  // namespace orochi::pipeline::reference
