#include "support/media.h"

#include "core/check.h"
#include "io/mp4.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <vector>

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

namespace {

uint32_t crc32(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

std::string be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
}

std::string chunk(const std::string& type, const std::string& data) {
  return be32(static_cast<uint32_t>(data.size())) + type + data + be32(crc32(type + data));
}

}  // namespace

void write_png(const std::string& path, int64_t width, int64_t height) {
  std::string raw;  // filter byte 0, then RGB, per row
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back('\0');
    for (int64_t x = 0; x < width; ++x) {
      raw.push_back(static_cast<char>(x * 255 / std::max<int64_t>(1, width - 1)));
      raw.push_back(static_cast<char>(y * 255 / std::max<int64_t>(1, height - 1)));
      raw.push_back(static_cast<char>(128));
    }
  }
  std::string z = "\x78\x01";  // zlib header, no compression
  for (size_t pos = 0; pos < raw.size() || pos == 0;) {
    const size_t n = std::min<size_t>(65535, raw.size() - pos);
    const bool last = pos + n >= raw.size();
    z.push_back(static_cast<char>(last ? 1 : 0));
    z.push_back(static_cast<char>(n & 0xFF));
    z.push_back(static_cast<char>(n >> 8));
    z.push_back(static_cast<char>(~n & 0xFF));
    z.push_back(static_cast<char>((~n >> 8) & 0xFF));
    z.append(raw, pos, n);
    pos += n;
    if (last) break;
  }
  uint32_t a = 1, b = 0;  // Adler-32
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  z += be32(b << 16 | a);
  const std::string ihdr = be32(static_cast<uint32_t>(width)) + be32(static_cast<uint32_t>(height)) +
                           std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB
  write_file(path, std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", ""));
}

void write_clip(const std::string& path, int64_t frames, int fps, int64_t width, int64_t height, bool sound) {
  io::VideoFrames video = moving_gradient(frames, height, width);
  video.fps = io::FrameRate{fps, 1};
  const io::AudioTrack audio = stereo_sine(static_cast<double>(frames) / fps, 44100);
  io::Mp4Options options;
  options.preset = "ultrafast";
  const Status s = io::write_mp4(path, video, sound ? &audio : nullptr, options);
  OROCHI_CHECK(s.is_ok(), s.to_string());
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace orochi::testing
