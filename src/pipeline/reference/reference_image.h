// Reference images and fl2va keyframes to the pixels the VAE encodes, as diffusers' MiniMax-H3 steps
// make them (../shared/docs/REF2VA.md §1.2): a ref2va image at its 2048 short edge (or ComfyUI's
// `match`), the first fl2va keyframe stretched onto the canvas, the second cover-cropped. Every
// resize is Pillow's LANCZOS (pil_lanczos.h); a size that already matches is not resampled.
#pragma once

#include <optional>
#include <vector>

#include "core/status.h"
#include "io/media_in.h"
#include "pipeline/reference/reference_geometry.h"

namespace orochi::pipeline::reference {

// D `Ref2VASetupStep` for one image reference. `canvas` is only read by the kMatch policy,
// `short_edge` (D's reference_image_short_edge) only by kShortEdge. invalid_argument for an image
// beyond 4:1 either way (reference_image_size's message).
Expected<io::RgbImage> normalize_reference_image(const io::RgbImage& image,
                                                  ImageSizePolicy policy = ImageSizePolicy::kShortEdge,
                                                  Size canvas = {1344, 768}, int64_t short_edge = 2048);

// D `MiniMaxH3ResizeStep`: `keyframes` are the first and/or last keyframe present, in that order; the
// canvas is `canvas` when given, else the one the first keyframe's aspect resolves to. Returns the
// keyframes on the canvas (first stretched, second cover-cropped) and the canvas.
struct Keyframes {
  Size canvas;
  std::vector<io::RgbImage> images;
};
Expected<Keyframes> prepare_keyframes(const std::vector<io::RgbImage>& keyframes, std::optional<Size> canvas = {},
                                      const CanvasRule& rule = {});

}  // namespace orochi::pipeline::reference
