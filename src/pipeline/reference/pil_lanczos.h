// Pillow's LANCZOS resize, bit for bit: `PIL.Image.resize((W, H), Image.LANCZOS)` on an RGB image, as
// the reference pipeline resizes every reference image, keyframe and reference-video frame
// (../shared/docs/REF2VA.md §1.2). Pillow's Resample.c: per-axis coefficients in double, converted to
// 22-bit fixed point, a horizontal pass into a uint8 intermediate, then a vertical pass; an axis
// whose size does not change is not resampled.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "io/media_in.h"

namespace orochi::pipeline::reference {

// `in` resized to out_width x out_height. An unchanged size returns a copy (Pillow copies too).
// invalid_argument for an empty input, a non-positive or absurd (> io::kMaxImagePixels) output.
Expected<io::RgbImage> pil_lanczos_resize(const io::RgbImage& in, int64_t out_width, int64_t out_height);

// The same on raw interleaved RGB buffers ([H, W, 3], rows packed), for video frames; the caller
// checks the sizes.
void pil_lanczos_resize_rgb(const uint8_t* in, int64_t in_height, int64_t in_width, uint8_t* out,
                            int64_t out_height, int64_t out_width);

// Many frames of one size resized alike: in[i] into out[i] (the same sizes as above), whole frames
// on OpenMP's threads, the filters computed once. The bytes equal pil_lanczos_resize_rgb's frame by
// frame whatever the thread count (integer sums).
void pil_lanczos_resize_frames(const std::vector<const uint8_t*>& in, int64_t in_height, int64_t in_width,
                               const std::vector<uint8_t*>& out, int64_t out_height, int64_t out_width);

// Crops [top, top + height) x [left, left + width) out of `in` (Pillow's Image.crop within bounds).
Expected<io::RgbImage> crop(const io::RgbImage& in, int64_t left, int64_t top, int64_t width, int64_t height);

}  // namespace orochi::pipeline::reference
