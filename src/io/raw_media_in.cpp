#include "io/raw_media_in.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/yuv444_to_rgb.h"

namespace orochi::io {
namespace {

namespace fs = std::filesystem;

enum class RawKind { kNone, kPpm, kWav, kY4m };

Expected<std::string> read_prefix(const std::string& path, size_t n) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return not_found(path + " does not exist or is not a file");
  if (static_cast<int64_t>(fs::file_size(path, ec)) > kMaxMediaFileBytes)
    return invalid_argument(path + " is larger than " + std::to_string(kMaxMediaFileBytes >> 30) + " GiB");
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(in.gcount()));
  if (s.empty()) return corrupt_file(path + " is empty");
  return s;
}

RawKind kind_of(const std::string& magic) {
  if (magic.size() >= 2 && magic[0] == 'P' && magic[1] == '6') return RawKind::kPpm;
  if (magic.size() >= 12 && magic.compare(0, 4, "RIFF") == 0 && magic.compare(8, 4, "WAVE") == 0) return RawKind::kWav;
  if (magic.compare(0, 10, "YUV4MPEG2 ") == 0) return RawKind::kY4m;
  return RawKind::kNone;
}

Expected<std::string> read_all(const std::string& path) {
  OROCHI_RETURN_IF_ERROR(read_prefix(path, 1).status());
  std::error_code ec;
  std::string s(static_cast<size_t>(fs::file_size(path, ec)), '\0');  // one read into its final place
  std::ifstream in(path, std::ios::binary);
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// PPM: "P6", width, height, maxval (255), each after whitespace ('#' comments between), then one
// whitespace byte and the pixels.
struct PpmHeader {
  int64_t width = 0, height = 0;
  size_t data = 0;  // offset of the pixels
};
Expected<PpmHeader> parse_ppm(const std::string& bytes, const std::string& path) {
  size_t i = 2;
  int64_t v[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    while (i < bytes.size() && (std::isspace(static_cast<unsigned char>(bytes[i])) || bytes[i] == '#')) {
      if (bytes[i] == '#')
        while (i < bytes.size() && bytes[i] != '\n') ++i;
      else
        ++i;
    }
    if (i >= bytes.size() || !std::isdigit(static_cast<unsigned char>(bytes[i])))
      return corrupt_file(path + " is not a binary PPM (P6 width height 255)");
    while (i < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[i])) && v[k] < (int64_t{1} << 40))
      v[k] = v[k] * 10 + (bytes[i++] - '0');
  }
  if (v[2] != 255) return invalid_argument(path + ": PPM with maxval " + std::to_string(v[2]) + "; only 8-bit (255) is read");
  if (v[0] < 1 || v[1] < 1) return corrupt_file(path + " is a PPM of zero size");
  if (v[0] * v[1] > kMaxImagePixels)
    return invalid_argument(path + " is " + std::to_string(v[0]) + "x" + std::to_string(v[1]) + ", more than " +
                            std::to_string(kMaxImagePixels) + " pixels");
  return PpmHeader{v[0], v[1], i + 1};
}

// WAV: the "fmt " and "data" chunks of a RIFF/WAVE file.
struct WavHeader {
  int format = 0;  // 1 PCM, 3 float (0xFFFE extensible: its sub-format's)
  int channels = 0, sample_rate = 0, bits = 0;
  size_t data = 0, data_bytes = 0;
};
uint32_t le32(const std::string& b, size_t i) {
  uint32_t v = 0;
  for (int k = 3; k >= 0; --k) v = v << 8 | static_cast<uint8_t>(b[i + k]);
  return v;
}
uint16_t le16(const std::string& b, size_t i) { return static_cast<uint16_t>(le32(b.substr(i, 2) + std::string(2, '\0'), 0)); }

Expected<WavHeader> parse_wav(const std::string& bytes, const std::string& path) {
  WavHeader h;
  bool fmt = false;
  for (size_t i = 12; i + 8 <= bytes.size();) {
    const std::string id = bytes.substr(i, 4);
    const size_t size = le32(bytes, i + 4);
    const size_t body = i + 8;
    if (id == "fmt " && body + 16 <= bytes.size()) {
      h.format = le16(bytes, body);
      h.channels = le16(bytes, body + 2);
      h.sample_rate = static_cast<int>(le32(bytes, body + 4));
      h.bits = le16(bytes, body + 14);
      if (h.format == 0xFFFE && size >= 40 && body + 26 <= bytes.size()) h.format = le16(bytes, body + 24);
      fmt = true;
    } else if (id == "data") {
      if (!fmt) break;
      h.data = body;
      h.data_bytes = std::min(size, bytes.size() - body);
      break;
    }
    i = body + size + (size & 1);
  }
  if (!fmt || h.data == 0) return corrupt_file(path + " is not a WAV file with a fmt and a data chunk (or is truncated)");
  if (!((h.format == 1 && h.bits == 16) || (h.format == 3 && h.bits == 32)))
    return invalid_argument(path + ": WAV of format " + std::to_string(h.format) + " with " + std::to_string(h.bits) +
                            "-bit samples; without FFmpeg only 16-bit PCM and 32-bit float are read");
  if (h.channels < 1 || h.sample_rate < 1) return corrupt_file(path + ": a WAV without channels or sample rate");
  return h;
}

// Y4M: "YUV4MPEG2 W.. H.. F n:d ... C444 ...\n", then per frame "FRAME[ params]\n" and the Y, Cb, Cr planes.
struct Y4mHeader {
  int64_t width = 0, height = 0;
  int fps_num = 0, fps_den = 1;
  size_t data = 0;
};
Expected<Y4mHeader> parse_y4m(const std::string& bytes, const std::string& path) {
  const size_t end = bytes.find('\n');
  if (end == std::string::npos) return corrupt_file(path + ": a Y4M header without its end of line");
  std::istringstream fields(bytes.substr(10, end - 10));
  Y4mHeader h;
  std::string colour = "420jpeg", f;
  while (fields >> f) {
    if (f[0] == 'W') h.width = std::atoll(f.c_str() + 1);
    if (f[0] == 'H') h.height = std::atoll(f.c_str() + 1);
    if (f[0] == 'C') colour = f.substr(1);
    if (f[0] == 'F' && std::sscanf(f.c_str() + 1, "%d:%d", &h.fps_num, &h.fps_den) != 2) h.fps_num = 0;
  }
  if (h.width < 1 || h.height < 1) return corrupt_file(path + ": a Y4M header without its size");
  if (h.width * h.height > kMaxImagePixels) return invalid_argument(path + ": Y4M frames larger than " + std::to_string(kMaxImagePixels) + " pixels");
  if (colour != "444")
    return invalid_argument(path + ": Y4M with C" + colour + "; without FFmpeg only 4:4:4 8-bit is read (ffmpeg -i IN "
                            "-pix_fmt yuv444p OUT.y4m)");
  if (h.fps_num <= 0 || h.fps_den <= 0) return invalid_argument(path + ": the Y4M header states no frame rate (F n:d)");
  h.data = end + 1;
  return h;
}

// The soundtrack convention: clip.y4m's sound is clip.wav.
std::string sidecar_wav(const std::string& path) { return fs::path(path).replace_extension(".wav").string(); }
bool has_sidecar(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(sidecar_wav(path), ec);
}

}  // namespace

bool is_raw_media(const std::string& path) {
  Expected<std::string> magic = read_prefix(path, 16);
  return magic.has_value() && kind_of(*magic) != RawKind::kNone;
}

Expected<MediaProbe> probe_raw_media(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const std::string head, read_prefix(path, 4096));
  MediaProbe p;
  switch (kind_of(head)) {
    case RawKind::kPpm: {
      OROCHI_ASSIGN_OR_RETURN(const PpmHeader h, parse_ppm(head, path));
      p.kind = MediaKind::kImage;
      p.format = "PPM";
      p.width = h.width;
      p.height = h.height;
      return p;
    }
    case RawKind::kWav: {
      OROCHI_ASSIGN_OR_RETURN(const std::string bytes, read_all(path));
      OROCHI_ASSIGN_OR_RETURN(const WavHeader h, parse_wav(bytes, path));
      p.kind = MediaKind::kAudio;
      p.format = "wav";
      p.has_audio = true;
      p.sample_rate = h.sample_rate;
      p.channels = h.channels;
      p.audio_seconds = static_cast<double>(h.data_bytes / (h.channels * h.bits / 8)) / h.sample_rate;
      return p;
    }
    case RawKind::kY4m: {
      OROCHI_ASSIGN_OR_RETURN(const Y4mHeader h, parse_y4m(head, path));
      std::error_code ec;
      const int64_t size = static_cast<int64_t>(fs::file_size(path, ec));
      p.kind = MediaKind::kVideo;
      p.format = "yuv4mpegpipe";
      p.width = h.width;
      p.height = h.height;
      p.fps = static_cast<double>(h.fps_num) / h.fps_den;
      p.frames = (size - static_cast<int64_t>(h.data)) / (6 + 3 * h.width * h.height);  // "FRAME\n" + planes
      p.duration_seconds = p.frames / p.fps;
      if (has_sidecar(path)) {
        OROCHI_ASSIGN_OR_RETURN(const MediaProbe a, probe_raw_media(sidecar_wav(path)));
        p.has_audio = a.kind == MediaKind::kAudio;
        p.sample_rate = a.sample_rate;
        p.channels = a.channels;
        p.audio_seconds = a.audio_seconds;
      }
      return p;
    }
    case RawKind::kNone:
      break;
  }
  return unsupported(path + " is not PPM, WAV or Y4M, the formats a build without FFmpeg reads");
}

Expected<RgbImage> read_ppm(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const std::string head, read_prefix(path, 4096));
  if (kind_of(head) != RawKind::kPpm) return corrupt_file(path + " is not a binary PPM");
  OROCHI_ASSIGN_OR_RETURN(const PpmHeader h, parse_ppm(head, path));
  RgbImage image;
  image.width = h.width;
  image.height = h.height;
  image.rgb.resize(static_cast<size_t>(h.width * h.height * 3));  // the pixels read straight into place
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data));
  in.read(reinterpret_cast<char*>(image.rgb.data()), static_cast<std::streamsize>(image.rgb.size()));
  if (in.gcount() != static_cast<std::streamsize>(image.rgb.size()))
    return corrupt_file(path + " is truncated (fewer pixels than its header says)");
  return image;
}

Expected<DecodedAudio> read_wav(const std::string& path) {
  OROCHI_ASSIGN_OR_RETURN(const std::string bytes, read_all(path));
  if (kind_of(bytes) != RawKind::kWav) return corrupt_file(path + " is not a WAV file");
  OROCHI_ASSIGN_OR_RETURN(const WavHeader h, parse_wav(bytes, path));
  const int64_t C = h.channels, step = h.bits / 8, N = static_cast<int64_t>(h.data_bytes) / (C * step);
  if (N < 1) return corrupt_file(path + " has no samples");
  DecodedAudio a;
  a.sample_rate = h.sample_rate;
  a.samples = Tensor::empty({C, N}, DType::kF32);
  float* out = a.samples.data<float>();
  const char* src = bytes.data() + h.data;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c) {
      const char* s = src + (i * C + c) * step;
      float v;
      if (h.bits == 16) {
        int16_t x;
        std::memcpy(&x, s, 2);
        v = static_cast<float>(x) / 32768.0f;
      } else {
        std::memcpy(&v, s, 4);
      }
      out[c * N + i] = v;
    }
  return a;
}

// Frame by frame from the file (only the frames asked for are read), each converted by rows on
// OpenMP's threads into its place in the output; the bytes do not depend on the thread count.
Expected<DecodedVideo> read_y4m(const std::string& path, const VideoReadOptions& options) {
  OROCHI_ASSIGN_OR_RETURN(const std::string head, read_prefix(path, 4096));
  if (kind_of(head) != RawKind::kY4m) return corrupt_file(path + " is not a Y4M file");
  OROCHI_ASSIGN_OR_RETURN(const Y4mHeader h, parse_y4m(head, path));
  DecodedVideo v;
  v.fps = static_cast<double>(h.fps_num) / h.fps_den;
  v.frames.width = h.width;
  v.frames.height = h.height;
  v.frames.fps = {h.fps_num, h.fps_den};
  const int64_t plane = h.width * h.height;
  std::error_code ec;
  const int64_t file_bytes = static_cast<int64_t>(fs::file_size(path, ec));
  int64_t expected = (file_bytes - static_cast<int64_t>(h.data)) / (6 + 3 * plane);  // "FRAME\n" + planes
  if (options.max_frames > 0) expected = std::min(expected, options.max_frames);
  if (options.max_rgb_bytes > 0) expected = std::min(expected, options.max_rgb_bytes / (3 * plane));
  v.frames.rgb.reserve(static_cast<size_t>(std::max<int64_t>(expected, 0) * 3 * plane));  // no regrowth copies
  std::vector<uint8_t> planes(static_cast<size_t>(3 * plane));  // Y, Cb, Cr of one frame
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data));
  std::string line;
  while (options.max_frames <= 0 || v.frames.frames < options.max_frames) {
    if (in.peek() == std::ifstream::traits_type::eof()) break;
    std::getline(in, line);
    const std::string frame_name = "frame " + std::to_string(v.frames.frames + 1);
    if (line.compare(0, 5, "FRAME") != 0 || in.eof())
      return corrupt_file(path + ": " + frame_name + " is truncated or not a Y4M FRAME");
    if (options.max_rgb_bytes > 0 && (v.frames.frames + 1) * 3 * plane > options.max_rgb_bytes)
      return invalid_argument(path + ": its frames need more than " + std::to_string(options.max_rgb_bytes >> 20) +
                              " MiB as RGB");
    in.read(reinterpret_cast<char*>(planes.data()), static_cast<std::streamsize>(planes.size()));
    if (in.gcount() != static_cast<std::streamsize>(planes.size()))
      return corrupt_file(path + ": " + frame_name + " is truncated or not a Y4M FRAME");
    v.frames.rgb.resize(static_cast<size_t>((v.frames.frames + 1) * 3 * plane));
    uint8_t* rgb = v.frames.frame(v.frames.frames);
    const uint8_t* y = planes.data();
    const int64_t w = h.width;
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < h.height; ++row)
      yuv444_to_rgb(y + row * w, y + plane + row * w, y + 2 * plane + row * w, w, rgb + row * w * 3);
    v.timestamps.push_back(static_cast<double>(v.frames.frames) / v.fps);
    ++v.frames.frames;
  }
  if (v.frames.frames == 0) return corrupt_file(path + " has no frames");
  if (options.read_soundtrack && has_sidecar(path)) {
    OROCHI_ASSIGN_OR_RETURN(v.soundtrack, read_wav(sidecar_wav(path)));
    v.has_soundtrack = true;
  }
  return v;
}

}  // namespace orochi::io
