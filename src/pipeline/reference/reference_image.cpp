#include "pipeline/reference/reference_image.h"

#include <string>

#include "pipeline/reference/pil_lanczos.h"

namespace orochi::pipeline::reference {

Expected<io::RgbImage> normalize_reference_image(const io::RgbImage& image, ImageSizePolicy policy, Size canvas,
                                                  int64_t short_edge) {
  OROCHI_ASSIGN_OR_RETURN(const Size size, reference_image_size(image.width, image.height, policy, canvas, short_edge));
  if (size.width == image.width && size.height == image.height) return image;
  return pil_lanczos_resize(image, size.width, size.height);
}

Expected<Keyframes> prepare_keyframes(const std::vector<io::RgbImage>& keyframes, std::optional<Size> canvas,
                                      const CanvasRule& rule) {
  if (keyframes.empty() || keyframes.size() > 2)
    return invalid_argument("fl2va takes one or two keyframes (first and/or last), got " +
                            std::to_string(keyframes.size()));
  Keyframes out;
  if (canvas) {
    if (canvas->width <= 0 || canvas->height <= 0 || canvas->width % rule.multiple || canvas->height % rule.multiple)
      return invalid_argument("the canvas must be a positive multiple of " + std::to_string(rule.multiple) +
                              " on both axes, got " + std::to_string(canvas->width) + "x" +
                              std::to_string(canvas->height));
    out.canvas = *canvas;
  } else {
    OROCHI_ASSIGN_OR_RETURN(out.canvas, resolve_canvas_size(static_cast<double>(keyframes[0].width),
                                                            static_cast<double>(keyframes[0].height), rule));
  }
  for (size_t i = 0; i < keyframes.size(); ++i) {
    const io::RgbImage& k = keyframes[i];
    if (k.width == out.canvas.width && k.height == out.canvas.height) {
      out.images.push_back(k);
    } else if (i == 0) {  // the geometry anchor is stretched
      OROCHI_ASSIGN_OR_RETURN(io::RgbImage resized, pil_lanczos_resize(k, out.canvas.width, out.canvas.height));
      out.images.push_back(std::move(resized));
    } else {  // the follower is cover-cropped
      OROCHI_ASSIGN_OR_RETURN(const CoverCrop cc, cover_crop(k.width, k.height, out.canvas));
      OROCHI_ASSIGN_OR_RETURN(const io::RgbImage resized, pil_lanczos_resize(k, cc.resized.width, cc.resized.height));
      OROCHI_ASSIGN_OR_RETURN(io::RgbImage cropped,
                              crop(resized, cc.left, cc.top, out.canvas.width, out.canvas.height));
      out.images.push_back(std::move(cropped));
    }
  }
  return out;
}

}  // namespace orochi::pipeline::reference
