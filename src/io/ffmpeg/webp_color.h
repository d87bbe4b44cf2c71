// Lossy WebP pictures (VP8, 4:2:0) to RGB the way libwebp does it for PIL: its "fancy" upsampler
// (a 9-3-3-1 triangle per 2x2 block) and its 14-bit fixed-point BT.601 limited-range conversion.
// FFmpeg's VP8 decoder gives the same Y, U and V planes as libwebp (VP8 decoding is exact); swscale
// would upsample and round differently (tens of levels on coloured edges).
#pragma once

#include "io/ffmpeg/av_common.h"
#include "io/media_in.h"

namespace orochi::io::av {

// True for the planar 4:2:0 layouts the WebP decoder hands out (with or without alpha).
bool is_webp_yuv420_layout(AVPixelFormat format);

// [H, W, 3] RGB of such a frame; alpha, if any, is dropped (PIL's convert("RGB")).
RgbImage webp_yuv420_to_rgb(const AVFrame* frame);

}  // namespace orochi::io::av
