// YCbCr JPEG pictures to RGB the way libjpeg(-turbo) does it for PIL: "fancy" (triangle) chroma
// upsampling and its 16-bit fixed-point YCbCr -> RGB tables. FFmpeg's mjpeg decoder hands out the
// planes; converting them with swscale instead would upsample chroma by nearest neighbour and round
// differently (tens of levels apart on coloured edges). What remains is the IDCT, FFmpeg's vs
// libjpeg's ISLOW: a level or two on some pixels.
#pragma once

#include "io/ffmpeg/av_common.h"
#include "io/media_in.h"

namespace orochi::io::av {

// True for the planar 8-bit layouts handled here: 4:4:4, 4:2:2 (h2v1) and 4:2:0 (h2v2).
bool is_jpeg_ycc_layout(AVPixelFormat format);

// [H, W, 3] RGB of a JPEG-range YCbCr frame in one of those layouts.
RgbImage jpeg_ycc_to_rgb(const AVFrame* frame);

}  // namespace orochi::io::av
