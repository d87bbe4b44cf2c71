#include "io/y4m_writer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "io/output_file.h"

namespace orochi::io {
namespace {

uint8_t to_byte(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

// One frame [H, W, 3] RGB -> three [H, W] planes Y, Cb, Cr (BT.601, limited range).
void rgb_to_yuv444(const uint8_t* rgb, int64_t pixels, std::vector<char>& planes) {
  planes.resize(static_cast<size_t>(pixels) * 3);
  uint8_t* y = reinterpret_cast<uint8_t*>(planes.data());
  uint8_t* cb = y + pixels;
  uint8_t* cr = cb + pixels;
  for (int64_t p = 0; p < pixels; ++p) {
    const double r = rgb[p * 3] / 255.0, g = rgb[p * 3 + 1] / 255.0, b = rgb[p * 3 + 2] / 255.0;
    y[p] = to_byte(16.0 + 65.481 * r + 128.553 * g + 24.966 * b);
    cb[p] = to_byte(128.0 - 37.797 * r - 74.203 * g + 112.0 * b);
    cr[p] = to_byte(128.0 + 112.0 * r - 93.786 * g - 18.214 * b);
  }
}

}  // namespace

Status write_y4m(const std::string& path, const VideoFrames& video) {
  OROCHI_RETURN_IF_ERROR(validate_video(video));
  const std::string header = "YUV4MPEG2 W" + std::to_string(video.width) + " H" +
                             std::to_string(video.height) + " F" + std::to_string(video.fps.num) +
                             ":" + std::to_string(video.fps.den) +
                             " Ip A1:1 C444 XCOLORRANGE=LIMITED\n";
  return write_file_atomically(path, [&](std::ostream& out) {
    out << header;
    std::vector<char> planes;
    for (int64_t f = 0; f < video.frames; ++f) {
      rgb_to_yuv444(video.frame(f), video.height * video.width, planes);
      out << "FRAME\n";
      out.write(planes.data(), static_cast<std::streamsize>(planes.size()));
    }
    return Status::ok();
  });
}

}  // namespace orochi::io
