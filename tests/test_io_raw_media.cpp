// The uncompressed media a build without FFmpeg reads (io/raw_media_in.h): Y4M 4:4:4 written by
// io::write_y4m comes back within a level of its RGB (the BT.601 round trip), its soundtrack from the
// WAV beside it; WAV and PPM read exactly, and as FFmpeg's readers read them when this build has them;
// the headers give what check_references needs; bad files are refused naming what to change.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "io/raw_media_in.h"
#include "io/wav_writer.h"
#include "io/y4m_writer.h"

namespace orochi::io {
namespace {

namespace fs = std::filesystem;

class RawMedia : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("orochi_raw_media_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

VideoFrames pattern_video(int64_t frames, int64_t h, int64_t w) {
  VideoFrames v;
  v.frames = frames;
  v.height = h;
  v.width = w;
  v.fps = {30, 1};
  v.rgb.resize(static_cast<size_t>(frames * h * w * 3));
  for (size_t i = 0; i < v.rgb.size(); ++i) v.rgb[i] = static_cast<uint8_t>((i * 7 + i / 97) % 256);
  return v;
}

AudioTrack tone(int rate, int channels, int64_t n) {
  AudioTrack a;
  a.sample_rate = rate;
  a.channels = channels;
  a.samples.resize(static_cast<size_t>(n * channels));
  for (size_t i = 0; i < a.samples.size(); ++i) a.samples[i] = 0.5f * std::sin(0.01f * static_cast<float>(i));
  return a;
}

TEST_F(RawMedia, Y4mVideoWithItsSoundtrack) {
  const VideoFrames v = pattern_video(5, 18, 26);
  ASSERT_TRUE(write_y4m(path("clip.y4m"), v).is_ok());
  ASSERT_TRUE(write_wav(path("clip.wav"), tone(44100, 1, 8820)).is_ok());
  ASSERT_TRUE(is_raw_media(path("clip.y4m")));
  Expected<MediaProbe> p = probe_raw_media(path("clip.y4m"));
  ASSERT_TRUE(p.has_value()) << p.status().to_string();
  EXPECT_EQ(p->kind, MediaKind::kVideo);
  EXPECT_EQ(p->width, 26);
  EXPECT_EQ(p->height, 18);
  EXPECT_EQ(p->frames, 5);
  EXPECT_DOUBLE_EQ(p->fps, 30.0);
  EXPECT_TRUE(p->has_audio);
  EXPECT_EQ(p->sample_rate, 44100);
  EXPECT_EQ(p->channels, 1);
  EXPECT_NEAR(p->audio_seconds, 0.2, 1e-9);

  Expected<DecodedVideo> d = read_y4m(path("clip.y4m"));
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  ASSERT_EQ(d->frames.frames, 5);
  EXPECT_DOUBLE_EQ(d->fps, 30.0);
  int worst = 0;
  for (size_t i = 0; i < v.rgb.size(); ++i) worst = std::max(worst, std::abs(int(d->frames.rgb[i]) - int(v.rgb[i])));
  EXPECT_LE(worst, 3) << "BT.601 limited range through 8-bit Y'CbCr loses at most a few levels";
  ASSERT_TRUE(d->has_soundtrack);
  EXPECT_EQ(d->soundtrack.samples.shape(), (Shape{1, 8820}));
  Expected<DecodedVideo> silent = read_y4m(path("clip.y4m"), VideoReadOptions{.max_frames = 2, .read_soundtrack = false});
  ASSERT_TRUE(silent.has_value());
  EXPECT_EQ(silent->frames.frames, 2);
  EXPECT_FALSE(silent->has_soundtrack);
}

TEST_F(RawMedia, WavAndPpmReadExactly) {
  ASSERT_TRUE(write_wav(path("a.wav"), tone(16000, 2, 1000)).is_ok());
  Expected<DecodedAudio> a = read_wav(path("a.wav"));
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  EXPECT_EQ(a->sample_rate, 16000);
  ASSERT_EQ(a->samples.shape(), (Shape{2, 1000}));
  const AudioTrack t = tone(16000, 2, 1000);
  for (int64_t i = 0; i < 1000; ++i)  // 16-bit rounding of the writer
    ASSERT_NEAR(a->samples.data<float>()[1000 + i], t.samples[static_cast<size_t>(2 * i + 1)], 1.0 / 32768);
  {
    std::ofstream f(path("p.ppm"), std::ios::binary);
    f << "P6\n# a comment\n3 2\n255\n";
    for (int i = 0; i < 18; ++i) f.put(static_cast<char>(i * 13));
  }
  Expected<RgbImage> im = read_ppm(path("p.ppm"));
  ASSERT_TRUE(im.has_value()) << im.status().to_string();
  EXPECT_EQ(im->width, 3);
  EXPECT_EQ(im->height, 2);
  for (int i = 0; i < 18; ++i) EXPECT_EQ(im->rgb[static_cast<size_t>(i)], static_cast<uint8_t>(i * 13));
  Expected<MediaProbe> p = probe_raw_media(path("p.ppm"));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->kind, MediaKind::kImage);
  if (media_input_supported()) {  // FFmpeg's readers agree
    Expected<RgbImage> ff = read_image(path("p.ppm"));
    ASSERT_TRUE(ff.has_value()) << ff.status().to_string();
    EXPECT_EQ(ff->rgb, im->rgb);
    Expected<DecodedAudio> ffa = read_audio(path("a.wav"));
    ASSERT_TRUE(ffa.has_value()) << ffa.status().to_string();
    ASSERT_EQ(ffa->samples.shape(), a->samples.shape());
    EXPECT_EQ(std::memcmp(ffa->samples.data<float>(), a->samples.data<float>(), a->samples.nbytes()), 0);
  }
}

TEST_F(RawMedia, BadFilesAreRefusedSayingWhy) {
  {
    std::ofstream f(path("short.ppm"), std::ios::binary);
    f << "P6 4 4 255\n" << std::string(10, 'x');
  }
  Expected<RgbImage> t = read_ppm(path("short.ppm"));
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find("truncated"), std::string::npos) << t.status().message();
  {
    std::ofstream f(path("v.y4m"), std::ios::binary);
    f << "YUV4MPEG2 W4 H4 F24:1 C420jpeg\nFRAME\n" << std::string(24, 'x');
  }
  Expected<MediaProbe> c420 = probe_raw_media(path("v.y4m"));
  ASSERT_FALSE(c420.has_value());
  EXPECT_NE(c420.status().message().find("yuv444p"), std::string::npos) << c420.status().message();
  {
    std::ofstream f(path("not.txt"));
    f << "hello";
  }
  EXPECT_FALSE(is_raw_media(path("not.txt")));
  EXPECT_FALSE(is_raw_media(path("missing.ppm")));
  EXPECT_EQ(probe_raw_media(path("missing.ppm")).status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace orochi::io
