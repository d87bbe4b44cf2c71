#include "support/media.h"

#include <cmath>

namespace orochi::testing {

io::VideoFrames moving_gradient(int64_t frames, int64_t height, int64_t width) {
  io::VideoFrames v;
  v.frames = frames;
  v.height = height;
  v.width = width;
  v.rgb.resize(static_cast<size_t>(frames * height * width * 3));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        uint8_t* px = v.frame(f) + (y * width + x) * 3;
        const double phase = 2 * M_PI * (double(x) / width + double(f) / frames);
        px[0] = static_cast<uint8_t>(128 + 100 * std::sin(phase));
        px[1] = static_cast<uint8_t>(30 + 200 * y / (height - 1));
        px[2] = static_cast<uint8_t>(60 + 2 * ((x + f) % 64));
      }
  return v;
}

io::AudioTrack stereo_sine(double seconds, int rate) {
  io::AudioTrack a;
  a.sample_rate = rate;
  a.channels = 2;
  const int64_t n = std::llround(seconds * rate);
  for (int64_t i = 0; i < n; ++i) {
    a.samples.push_back(0.5f * static_cast<float>(std::sin(2 * M_PI * 440 * i / rate)));
    a.samples.push_back(0.25f * static_cast<float>(std::sin(2 * M_PI * 660 * i / rate)));
  }
  return a;
}

}  // namespace orochi::testing
