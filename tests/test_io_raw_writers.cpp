// The FFmpeg-free writers: WAV and Y4M files parsed back byte by byte (and, in builds with FFmpeg,
// read by FFmpeg's own demuxers as an independent reader), and their refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "support/temp_dir.h"
#include "io/wav_writer.h"
#include "io/y4m_writer.h"
#ifdef OROCHI_WITH_FFMPEG
#include "io/ffmpeg/media_probe.h"
#endif

namespace orochi::io {
namespace {

using orochi::testing::TempDir;

namespace fs = std::filesystem;


std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint32_t le(const std::vector<uint8_t>& b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint32_t{b[at + i]} << (8 * i);
  return v;
}

TEST(IoRawWriters, WavHeaderAndSamples) {
  TempDir dir{"raw"};
  AudioTrack a;
  a.sample_rate = 32000;
  a.channels = 2;
  a.layout = SampleLayout::kPlanar;
  a.samples = {0.0f, 0.5f, -1.0f, 2.0f,  // left
               1.0f, -0.5f, -3.0f, 0.25f};  // right
  const std::string path = dir.file("a.wav");
  ASSERT_TRUE(write_wav(path, a).is_ok());
  const auto b = read_bytes(path);
  ASSERT_EQ(b.size(), 44u + 16u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "RIFF");
  EXPECT_EQ(le(b, 4, 4), 36u + 16u);
  EXPECT_EQ(std::string(b.begin() + 8, b.begin() + 16), "WAVEfmt ");
  EXPECT_EQ(le(b, 20, 2), 1u);       // PCM
  EXPECT_EQ(le(b, 22, 2), 2u);       // channels
  EXPECT_EQ(le(b, 24, 4), 32000u);   // rate
  EXPECT_EQ(le(b, 28, 4), 128000u);  // bytes per second
  EXPECT_EQ(le(b, 32, 2), 4u);       // block align
  EXPECT_EQ(le(b, 34, 2), 16u);      // bits
  EXPECT_EQ(std::string(b.begin() + 36, b.begin() + 40), "data");
  EXPECT_EQ(le(b, 40, 4), 16u);
  // Interleaved L R, clipped, rounded: 0 32767 | 16384 -16384 | -32767 -32767 | 32767 8192
  const std::vector<int16_t> want = {0, 32767, 16384, -16384, -32767, -32767, 32767, 8192};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(static_cast<int16_t>(le(b, 44 + 2 * i, 2)), want[i]) << i;
}

TEST(IoRawWriters, Y4mHeaderFramesAndColours) {
  TempDir dir{"raw"};
  VideoFrames v;  // 3 frames of 5x3 (odd sizes are fine here): white, black, red
  v.frames = 3;
  v.height = 3;
  v.width = 5;
  v.fps = {24, 1};
  v.rgb.assign(3 * 5 * 3 * 3, 0);
  std::fill(v.frame(0), v.frame(1), 255);
  for (int64_t p = 0; p < 15; ++p) v.frame(2)[p * 3] = 255;
  const std::string path = dir.file("v.y4m");
  ASSERT_TRUE(write_y4m(path, v).is_ok());
  const auto b = read_bytes(path);
  const std::string header = "YUV4MPEG2 W5 H3 F24:1 Ip A1:1 C444 XCOLORRANGE=LIMITED\n";
  ASSERT_EQ(b.size(), header.size() + 3 * (6 + 45));
  EXPECT_EQ(std::string(b.begin(), b.begin() + header.size()), header);
  // BT.601 limited: white (235,128,128), black (16,128,128), red (81,90,240).
  const uint8_t want[3][3] = {{235, 128, 128}, {16, 128, 128}, {81, 90, 240}};
  for (int f = 0; f < 3; ++f) {
    const size_t at = header.size() + f * (6 + 45);
    EXPECT_EQ(std::string(b.begin() + at, b.begin() + at + 6), "FRAME\n");
    for (int plane = 0; plane < 3; ++plane)
      for (int p = 0; p < 15; ++p)
        ASSERT_EQ(b[at + 6 + plane * 15 + p], want[f][plane]) << f << " " << plane << " " << p;
  }
}

TEST(IoRawWriters, RefusalsLeaveNoFile) {
  TempDir dir{"raw"};
  AudioTrack empty;
  EXPECT_EQ(write_wav(dir.file("e.wav"), empty).code(), ErrorCode::kInvalidArgument);
  VideoFrames none;
  EXPECT_EQ(write_y4m(dir.file("e.y4m"), none).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dir.entries(), 0u);
  AudioTrack a;
  a.samples = {0.0f, 0.0f};
  const Status s = write_wav("/no_such_folder_orochi/a.wav", a);
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_NE(s.message().find("/no_such_folder_orochi"), std::string::npos);
  EXPECT_EQ(write_wav("/proc/orochi_a.wav", a).code(), ErrorCode::kIo);
}

#ifdef OROCHI_WITH_FFMPEG
TEST(IoRawWriters, FFmpegReadsThemBack) {
  TempDir dir{"raw"};
  VideoFrames v;
  v.frames = 4;
  v.height = 6;
  v.width = 7;
  v.rgb.resize(4 * 6 * 7 * 3);
  std::mt19937 rng(7);
  for (auto& x : v.rgb) x = static_cast<uint8_t>(rng() % 256);
  ASSERT_TRUE(write_y4m(dir.file("v.y4m"), v).is_ok());
  const auto video = read_back_media(dir.file("v.y4m"));
  ASSERT_TRUE(video.has_value()) << video.status().to_string();
  const StreamInfo* s = video->first(StreamKind::kVideo);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->width, 7);
  EXPECT_EQ(s->height, 6);
  EXPECT_EQ(s->decoded_frames, 4);
  EXPECT_NEAR(s->fps, 24.0, 1e-9);
  ASSERT_EQ(video->first_frame_rgb.size(), static_cast<size_t>(v.frame_bytes()));
  double error = 0;
  for (int64_t i = 0; i < v.frame_bytes(); ++i) error += std::abs(video->first_frame_rgb[i] - v.rgb[i]);
  EXPECT_LT(error / v.frame_bytes(), 2.0);  // 8-bit limited-range rounding only

  AudioTrack a;
  a.samples.assign(2 * 3200, 0.1f);
  ASSERT_TRUE(write_wav(dir.file("a.wav"), a).is_ok());
  const auto audio = read_back_media(dir.file("a.wav"));
  ASSERT_TRUE(audio.has_value()) << audio.status().to_string();
  const StreamInfo* t = audio->first(StreamKind::kAudio);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->codec, "pcm_s16le");
  EXPECT_EQ(t->channels, 2);
  EXPECT_EQ(t->sample_rate, 32000);
  EXPECT_EQ(t->decoded_samples, 3200);
}
#endif

}  // namespace
}  // namespace orochi::io
