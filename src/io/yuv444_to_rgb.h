// BT.601 limited-range YCbCr 4:4:4 back to RGB, the inverse of io/y4m_writer's matrix: how a build
// without FFmpeg reads a Y4M reference video (io/raw_media_in.h). Each channel is
// clamp(lround(value), 0, 255) of the double expression below; the products come from 256-entry
// tables of the same double multiplications and the rounding is exact, so the bytes equal the
// direct expression's (tests/test_io_yuv444.cpp checks every Y, Cb, Cr).
//   R = 1.164383561643836 (Y - 16) + 1.596026785714286 (Cr - 128)
//   G = 1.164383561643836 (Y - 16) - 0.391762290094914 (Cb - 128) - 0.812967647237771 (Cr - 128)
//   B = 1.164383561643836 (Y - 16) + 2.017232142857143 (Cb - 128)
#pragma once

#include <cstdint>

namespace orochi::io {

// `pixels` samples of each plane into interleaved RGB ([pixels, 3]). Runs on the calling thread
// (callers parallelize over rows or frames).
void yuv444_to_rgb(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, int64_t pixels, uint8_t* rgb);

}  // namespace orochi::io
