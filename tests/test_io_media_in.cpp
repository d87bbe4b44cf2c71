// Reading reference media (io/media_in.h) against what diffusers' MiniMax-H3 pipeline reads from the
// same files (tests/data/reference_media, made by scripts/golden/make_reference_media.py: PIL's
// load_image, PyAV's decode), and every bad file a user can hand us, with its message. Skips itself
// in a build without FFmpeg's libraries, after checking that such a build says so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/media_in.h"
#include "pipeline/reference/reference_audio.h"
#include "pipeline/reference/reference_image.h"
#include "pipeline/reference/reference_video.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "weights/checkpoint.h"

namespace orochi {
namespace {

std::string data_dir() { return testing::test_data_dir() + "/reference_media"; }

weights::Checkpoint open_golden(const std::string& name) {
  Expected<weights::Checkpoint> g = weights::Checkpoint::open(data_dir() + "/" + name + ".safetensors");
  OROCHI_CHECK(g.has_value(), g.status().to_string());
  return std::move(g).value();
}

Tensor get(const weights::Checkpoint& g, const std::string& name) {
  Expected<Tensor> t = g.get(name);
  OROCHI_CHECK(t.has_value(), t.status().to_string());
  return t->contiguous();
}

std::vector<std::string> lines_of(const Tensor& bytes) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(bytes.data<uint8_t>()), bytes.numel()));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct PixelDiff {
  int64_t differing = 0;
  int max = 0;
  double mean = 0;
};
PixelDiff pixel_diff(const std::vector<uint8_t>& a, const uint8_t* b, int64_t n) {
  PixelDiff d;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int e = std::abs(int(a[i]) - int(b[i]));
    d.differing += e != 0;
    d.max = std::max(d.max, e);
    sum += e;
  }
  d.mean = n ? sum / n : 0;
  return d;
}

// max |a - b| over max |b|, fp64.
double max_relative(const Tensor& a, const Tensor& b) {
  double diff = 0, ref = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    diff = std::max(diff, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
    ref = std::max(ref, std::abs(double(b.data<float>()[i])));
  }
  return diff / ref;
}

void expect_error(const Status& s, ErrorCode code, const std::vector<std::string>& words) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const std::string& w : words)
    EXPECT_NE(s.message().find(w), std::string::npos) << "'" << w << "' not in: " << s.message();
}

#define SKIP_WITHOUT_FFMPEG()                                                           \
  if (!io::media_input_supported()) GTEST_SKIP() << "built without FFmpeg's libraries"

TEST(MediaIn, BuildWithoutFfmpegSaysUnsupported) {
  if (io::media_input_supported()) GTEST_SKIP() << "this build reads media";
  Expected<io::RgbImage> r = io::read_image(data_dir() + "/images/rgb_odd.png");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("libavformat-dev"), std::string::npos) << r.status().message();
}

TEST(ReadImage, PngWebpGifLikeImagesGivePilsPixelsExactly) {
  SKIP_WITHOUT_FFMPEG();
  const weights::Checkpoint g = open_golden("images");
  int checked = 0;
  for (const std::string& line : lines_of(get(g, "images.names"))) {
    const std::string name = line.substr(0, line.find(' ')), file = line.substr(line.find(' ') + 1);
    if (name.find("jpeg") != std::string::npos) continue;  // lossy: below
    Expected<io::RgbImage> img = io::read_image(data_dir() + "/images/" + file);
    ASSERT_TRUE(img.has_value()) << file << ": " << img.status().to_string();
    const Tensor expected = get(g, "img." + name + ".rgb");  // u8 [H, W, 3], D's load_image
    ASSERT_EQ(img->height, expected.dim(0)) << file;
    ASSERT_EQ(img->width, expected.dim(1)) << file;
    const PixelDiff d = pixel_diff(img->rgb, expected.data<uint8_t>(), expected.numel());
    EXPECT_EQ(d.differing, 0) << file << ": " << d.differing << " bytes differ, by up to " << d.max;
    ++checked;
  }
  // RGB, gray, gray+alpha, RGBA, palette, 16-bit gray, 16-bit RGB/RGBA/gray+alpha, 1/2/4-bit gray, 8 EXIF
  // orientations, and WebP lossless, lossy and lossy with alpha (libwebp's upsampling and conversion
  // reproduced on FFmpeg's VP8 planes: bit-exact).
  EXPECT_GE(checked, 23);
}

TEST(ReadImage, JpegsAreUprightAndWithinAFewLevelsOfLibjpeg) {
  SKIP_WITHOUT_FFMPEG();
  const weights::Checkpoint g = open_golden("images");
  Expected<io::RgbImage> img = io::read_image(data_dir() + "/images/exif_jpeg.jpg");
  ASSERT_TRUE(img.has_value()) << img.status().to_string();
  const Tensor expected = get(g, "img.exif_jpeg.rgb");
  // Stored 48 wide and 32 high with orientation 6: displayed 32 wide and 48 high.
  ASSERT_EQ(img->height, 48);
  ASSERT_EQ(img->width, 32);
  ASSERT_EQ(expected.dim(0), 48);
  const PixelDiff d = pixel_diff(img->rgb, expected.data<uint8_t>(), expected.numel());
  std::printf("JPEG vs Pillow (libjpeg-turbo): %lld of %lld bytes differ, max %d, mean %.3f\n",
              static_cast<long long>(d.differing), static_cast<long long>(expected.numel()), d.max, d.mean);
  // libjpeg's upsampling and colour tables are reproduced; FFmpeg's IDCT is not libjpeg's ISLOW, so a
  // few pixels are a level or three apart (measured: 233 of 4608 bytes, max 3, mean 0.06).
  EXPECT_LE(d.mean, 0.25);
  EXPECT_LE(d.max, 4);
  for (const std::string name : {"jpeg444", "jpeg422", "jpeg_gray"}) {  // the other layouts, upright
    Expected<io::RgbImage> other = io::read_image(data_dir() + "/images/" + name + ".jpg");
    ASSERT_TRUE(other.has_value()) << other.status().to_string();
    const Tensor want = get(g, "img." + name + ".rgb");
    ASSERT_EQ(other->height, want.dim(0));
    ASSERT_EQ(other->width, want.dim(1));
    const PixelDiff od = pixel_diff(other->rgb, want.data<uint8_t>(), want.numel());
    std::printf("%s vs Pillow: %lld bytes differ, max %d, mean %.3f\n", name.c_str(),
                static_cast<long long>(od.differing), od.max, od.mean);
    EXPECT_LE(od.mean, 0.25) << name;
    EXPECT_LE(od.max, 4) << name;
  }
}

TEST(ReadAudio, LosslessFilesAreBitEqualAndLossyOnesCloseToPyAv) {
  SKIP_WITHOUT_FFMPEG();
  const weights::Checkpoint g = open_golden("audio");
  for (const std::string& name : lines_of(get(g, "audio.names"))) {
    Expected<io::DecodedAudio> a = io::read_audio(data_dir() + "/audio/" + name);
    ASSERT_TRUE(a.has_value()) << name << ": " << a.status().to_string();
    const Tensor expected = get(g, "file." + name + ".samples");  // f32 [C, N], D's PyAV decode
    EXPECT_EQ(a->sample_rate, get(g, "file." + name + ".rate").data<int64_t>()[0]) << name;
    ASSERT_EQ(a->samples.shape(), expected.shape()) << name;
    const double rel = max_relative(a->samples, expected);
    std::printf("%s: %d Hz, %d channels, %lld samples, max |diff| / max |ref| %.3g\n", name.c_str(), a->sample_rate,
                a->channels(), static_cast<long long>(a->sample_count()), rel);
    const bool lossless = name.find(".wav") != std::string::npos || name.find(".flac") != std::string::npos;
    if (lossless) EXPECT_EQ(rel, 0.0) << name;
    else EXPECT_LE(rel, 1e-4) << name;  // float decoders of two FFmpeg versions
  }
}

TEST(ReadVideo, FramesRateSoundtrackAndRotationAsPyAvReadsThem) {
  SKIP_WITHOUT_FFMPEG();
  const weights::Checkpoint g = open_golden("video");
  for (const std::string name : {"clip_30fps.mp4", "clip_30fps_rot90.mp4"}) {
    Expected<io::DecodedVideo> v = io::read_video(data_dir() + "/video/" + name);
    ASSERT_TRUE(v.has_value()) << name << ": " << v.status().to_string();
    const Tensor frames = get(g, "file." + name + ".frames");  // u8 [F, H, W, 3]
    ASSERT_EQ(v->frames.frames, frames.dim(0)) << name;
    ASSERT_EQ(v->frames.height, frames.dim(1)) << name;
    ASSERT_EQ(v->frames.width, frames.dim(2)) << name;
    EXPECT_EQ(v->fps, get(g, "file." + name + ".fps").data<double>()[0]) << name;
    ASSERT_EQ(v->timestamps.size(), 10u);
    for (size_t i = 0; i < v->timestamps.size(); ++i) EXPECT_NEAR(v->timestamps[i], i / 30.0, 1e-9) << name;
    const PixelDiff d = pixel_diff(v->frames.rgb, frames.data<uint8_t>(), frames.numel());
    std::printf("%s: %lld of %lld RGB bytes differ from PyAV's, max %d, mean %.4f\n", name.c_str(),
                static_cast<long long>(d.differing), static_cast<long long>(frames.numel()), d.max, d.mean);
    EXPECT_LE(d.max, 3) << name;  // the same H.264 pictures; swscale versions may round YUV -> RGB apart
    ASSERT_TRUE(v->has_soundtrack) << name;
    const Tensor audio = get(g, "file." + name + ".audio");
    EXPECT_EQ(v->soundtrack.sample_rate, get(g, "file." + name + ".rate").data<int64_t>()[0]);
    ASSERT_EQ(v->soundtrack.samples.shape(), audio.shape()) << name;
    EXPECT_LE(max_relative(v->soundtrack.samples, audio), 1e-4) << name;
  }
  Expected<io::DecodedVideo> rotated = io::read_video(data_dir() + "/video/clip_30fps_rot90.mp4");
  EXPECT_EQ(rotated->rotation_quarter_turns % 2, 1);
  io::VideoReadOptions first_three;
  first_three.max_frames = 3;
  first_three.read_soundtrack = false;
  Expected<io::DecodedVideo> cut = io::read_video(data_dir() + "/video/clip_30fps.mp4", first_three);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->frames.frames, 3);
  EXPECT_FALSE(cut->has_soundtrack);
  io::VideoReadOptions tiny_cap;
  tiny_cap.max_rgb_bytes = 10000;  // less than two 48x32 frames
  expect_error(io::read_video(data_dir() + "/video/clip_30fps.mp4", tiny_cap).status(), ErrorCode::kInvalidArgument,
               {"clip_30fps.mp4", "shorten the video"});
}

uint64_t fnv1a64(const uint8_t* p, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

// From the file to the VAE's input, our readers and preprocessing against D's whole chain.
TEST(ReferenceFromFile, ImageVideoAndSoundtrackEqualDiffusersEndToEnd) {
  SKIP_WITHOUT_FFMPEG();
  const weights::Checkpoint images = open_golden("images");
  for (const std::string name : {"rgb_odd", "gray", "rgba"}) {  // lossless: exact end to end
    Expected<io::RgbImage> img = io::read_image(data_dir() + "/images/" + name + ".png");
    ASSERT_TRUE(img.has_value()) << img.status().to_string();
    Expected<io::RgbImage> out = pipeline::reference::normalize_reference_image(*img);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(fnv1a64(out->rgb.data(), out->rgb.size()),
              static_cast<uint64_t>(get(images, "ref2va." + name + ".fnv").data<int64_t>()[0]))
        << name;
  }
  const weights::Checkpoint g = open_golden("video");
  for (const std::string name : {"clip_30fps.mp4", "clip_30fps_rot90.mp4"}) {
    Expected<io::DecodedVideo> v = io::read_video(data_dir() + "/video/" + name);
    ASSERT_TRUE(v.has_value()) << v.status().to_string();
    Expected<io::VideoFrames> frames = pipeline::reference::normalize_reference_video(v->frames, v->fps, 124);
    ASSERT_TRUE(frames.has_value()) << frames.status().to_string();
    const Tensor shape = get(g, "file." + name + ".normalized_shape");
    EXPECT_EQ(frames->frames, shape.data<int64_t>()[0]) << name;
    EXPECT_EQ(frames->height, shape.data<int64_t>()[1]) << name;
    EXPECT_EQ(frames->width, shape.data<int64_t>()[2]) << name;
    EXPECT_EQ(fnv1a64(frames->rgb.data(), frames->rgb.size()),
              static_cast<uint64_t>(get(g, "file." + name + ".normalized_fnv").data<int64_t>()[0]))
        << name;
    Expected<Tensor> audio = pipeline::reference::normalize_reference_audio(
        v->soundtrack.samples, v->soundtrack.sample_rate, 0.2);
    ASSERT_TRUE(audio.has_value()) << audio.status().to_string();
    const Tensor expected = get(g, "file." + name + ".soundtrack_32k");
    ASSERT_EQ(audio->shape(), expected.shape());
    EXPECT_LE(max_relative(*audio, expected), 1e-6) << name;
  }
}

// ---- bad files: each refusal names the file and says what to do ----

TEST(MediaInErrors, MissingEmptyAndFolderPaths) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("media_in");
  const std::string missing = dir.file("nope.png");
  expect_error(io::read_image(missing).status(), ErrorCode::kNotFound, {missing, "check the path"});
  expect_error(io::read_audio(missing).status(), ErrorCode::kNotFound, {missing});
  expect_error(io::read_video(missing).status(), ErrorCode::kNotFound, {missing});
  const std::string empty = dir.file("empty.png");
  write_bytes(empty, {});
  expect_error(io::read_image(empty).status(), ErrorCode::kCorruptFile, {empty, "empty"});
  expect_error(io::read_audio(empty).status(), ErrorCode::kCorruptFile, {empty, "empty"});
  expect_error(io::read_video(empty).status(), ErrorCode::kCorruptFile, {empty, "empty"});
  expect_error(io::read_image(dir.path.string()).status(), ErrorCode::kNotFound, {"folder"});
}

TEST(MediaInErrors, TruncatedImagesAreRefused) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("media_in");
  for (const std::string file : {"rgb_odd.png", "exif_jpeg.jpg", "webp_lossless.webp"}) {
    std::vector<uint8_t> bytes = file_bytes(data_dir() + "/images/" + file);
    ASSERT_GT(bytes.size(), 200u);
    bytes.resize(bytes.size() * 2 / 3);
    const std::string path = dir.file("cut_" + file);
    write_bytes(path, bytes);
    Expected<io::RgbImage> r = io::read_image(path);
    ASSERT_FALSE(r.has_value()) << file;
    expect_error(r.status(), ErrorCode::kCorruptFile, {path, "truncated"});
  }
  EXPECT_EQ(dir.entries(), 3u);  // nothing left behind next to them
}

TEST(MediaInErrors, CorruptAndNonMediaFilesAreRefused) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("media_in");
  // A PNG signature and IHDR followed by garbage instead of image data.
  std::vector<uint8_t> png = file_bytes(data_dir() + "/images/rgb_odd.png");
  for (size_t i = 40; i + 20 < png.size(); ++i) png[i] = static_cast<uint8_t>(i * 131 + 7);
  const std::string bad_png = dir.file("garbled.png");
  write_bytes(bad_png, png);
  expect_error(io::read_image(bad_png).status(), ErrorCode::kCorruptFile, {bad_png});
  const std::string text = dir.file("notes.jpg");
  const std::string words = "this is not a picture\n";
  write_bytes(text, std::vector<uint8_t>(words.begin(), words.end()));
  expect_error(io::read_image(text).status(), ErrorCode::kCorruptFile, {text});
  expect_error(io::read_audio(text).status(), ErrorCode::kCorruptFile, {text});
  // Media of the wrong kind.
  expect_error(io::read_audio(data_dir() + "/images/rgb_odd.png").status(), ErrorCode::kCorruptFile,
               {"no audio stream"});
  expect_error(io::read_video(data_dir() + "/audio/stereo_44100.wav").status(), ErrorCode::kCorruptFile,
               {"no video stream"});
  // An MP4 cut in half (its index is at the end).
  std::vector<uint8_t> mp4 = file_bytes(data_dir() + "/video/clip_30fps.mp4");
  mp4.resize(mp4.size() / 2);
  const std::string cut = dir.file("cut.mp4");
  write_bytes(cut, mp4);
  expect_error(io::read_video(cut).status(), ErrorCode::kCorruptFile, {cut});
}

uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put_chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  const uint32_t n = static_cast<uint32_t>(data.size());
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(n >> s));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  const uint32_t crc = crc32(out.data() + start, out.size() - start);
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(crc >> s));
}

TEST(MediaInErrors, AbsurdSizeIsRefusedFromTheHeaderBeforeDecoding) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("media_in");
  // A valid 100000 x 100000 RGB PNG header, one tiny IDAT, IEND: decoding it would need 30 GB.
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const uint32_t side = 100000;
  std::vector<uint8_t> ihdr;
  for (int k = 0; k < 2; ++k)
    for (int s = 24; s >= 0; s -= 8) ihdr.push_back(static_cast<uint8_t>(side >> s));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01});
  put_chunk(png, "IEND", {});
  const std::string path = dir.file("huge.png");
  write_bytes(path, png);
  Expected<io::RgbImage> r = io::read_image(path);
  ASSERT_FALSE(r.has_value());
  expect_error(r.status(), ErrorCode::kInvalidArgument, {path, "100000x100000", "178956970", "downscale"});
}

TEST(MediaInErrors, ZeroLengthAudioStreamIsRefused) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("media_in");
  // A WAV header (16-bit stereo 48 kHz) whose data chunk holds no samples.
  std::vector<uint8_t> wav;
  auto put = [&](const std::string& s) { wav.insert(wav.end(), s.begin(), s.end()); };
  auto le = [&](uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) wav.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  put("RIFF"), le(36, 4), put("WAVE"), put("fmt "), le(16, 4), le(1, 2), le(2, 2), le(48000, 4), le(48000 * 4, 4),
      le(4, 2), le(16, 2), put("data"), le(0, 4);
  const std::string path = dir.file("silent.wav");
  write_bytes(path, wav);
  Expected<io::DecodedAudio> r = io::read_audio(path);
  ASSERT_FALSE(r.has_value());
  expect_error(r.status(), ErrorCode::kCorruptFile, {path, "no samples"});
}

}  // namespace
}  // namespace orochi
