// write_mp4 end to end: encode a small clip, decode it back with read_back_media, and check streams,
// frame count, size, rate, durations and pixels; then every refusal, none leaving a file behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "support/media.h"
#include "support/temp_dir.h"
#include "io/mp4.h"

#ifdef OROCHI_WITH_FFMPEG
#include "io/ffmpeg/media_probe.h"

namespace orochi::io {
namespace {

using orochi::testing::TempDir;

namespace fs = std::filesystem;

using testing::moving_gradient;
using testing::stereo_sine;

double mean_abs_error(const std::vector<uint8_t>& a, const uint8_t* b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::abs(int(a[i]) - int(b[i]));
  return sum / a.size();
}

// Decodes `path` and checks the video stream against `video`; returns the probe.
MediaInfo expect_video_matches(const std::string& path, const VideoFrames& video) {
  const auto info = read_back_media(path);
  EXPECT_TRUE(info.has_value()) << info.status().to_string();
  if (!info.has_value()) return {};
  const StreamInfo* v = info->first(StreamKind::kVideo);
  EXPECT_NE(v, nullptr);
  if (v == nullptr) return *info;
  const double frame_seconds = 1.0 / video.fps.value();
  EXPECT_EQ(v->codec, "h264");
  EXPECT_EQ(v->pixel_format, "yuv420p");
  EXPECT_EQ(v->width, video.width);
  EXPECT_EQ(v->height, video.height);
  EXPECT_NEAR(v->fps, video.fps.value(), 1e-6);
  EXPECT_EQ(v->decoded_frames, video.frames);
  EXPECT_NEAR(v->duration_seconds, video.duration_seconds(), frame_seconds);
  EXPECT_EQ(info->first_frame_rgb.size(), static_cast<size_t>(video.frame_bytes()));
  if (info->first_frame_rgb.size() == static_cast<size_t>(video.frame_bytes())) {
    const double mae = mean_abs_error(info->first_frame_rgb, video.frame(0));
    EXPECT_LT(mae, 8.0);
    std::printf("first frame mean abs error %.3f / 255\n", mae);
  }
  return *info;
}

TEST(IoMp4, VideoAndStereoAudioRoundTrip) {
  TempDir dir{"mp4"};
  const VideoFrames video = moving_gradient(29, 32, 64);
  const AudioTrack audio = stereo_sine(1.2, 32000);
  const std::string path = dir.file("clip.mp4");
  const Status s = write_mp4(path, video, &audio, {});
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(dir.entries(), 1u);  // no temporary file left over

  const MediaInfo info = expect_video_matches(path, video);
  ASSERT_EQ(info.streams.size(), 2u);
  const StreamInfo* a = info.first(StreamKind::kAudio);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->codec, "aac");
  EXPECT_EQ(a->channels, 2);
  EXPECT_EQ(a->sample_rate, 32000);
  // Decoded audio: the input's 1.2 s plus at most one frame of padding.
  EXPECT_NEAR(a->decoded_seconds(), audio.duration_seconds(), 1024.0 / 32000 + 1e-9);
  EXPECT_NEAR(a->decoded_seconds(), info.first(StreamKind::kVideo)->duration_seconds, 0.1);
  EXPECT_NEAR(a->duration_seconds, info.first(StreamKind::kVideo)->duration_seconds, 0.1);
  // Channels kept apart and in order: a sine's RMS is amplitude / sqrt(2), diluted by the padding.
  ASSERT_EQ(a->channel_rms.size(), 2u);
  const double kept = std::sqrt(audio.duration_seconds() / a->decoded_seconds());
  EXPECT_NEAR(a->channel_rms[0], 0.5 / std::sqrt(2.0) * kept, 0.01);
  EXPECT_NEAR(a->channel_rms[1], 0.25 / std::sqrt(2.0) * kept, 0.01);
  std::printf("audio RMS %.4f %.4f\n", a->channel_rms[0], a->channel_rms[1]);
  std::printf("video %.4f s (%lld frames), audio %.4f s decoded (%lld samples), %.4f s declared\n",
              info.first(StreamKind::kVideo)->duration_seconds,
              static_cast<long long>(info.first(StreamKind::kVideo)->decoded_frames),
              a->decoded_seconds(), static_cast<long long>(a->decoded_samples), a->duration_seconds);
}

TEST(IoMp4, VideoOnly) {
  TempDir dir{"mp4"};
  const VideoFrames video = moving_gradient(24, 48, 80);
  const std::string path = dir.file("silent.mp4");
  const Status s = write_mp4(path, video, nullptr, {});
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  const MediaInfo info = expect_video_matches(path, video);
  EXPECT_EQ(info.streams.size(), 1u);
  EXPECT_EQ(info.first(StreamKind::kAudio), nullptr);
}

// A 300 Hz sine in channel 0 and silence in the others, `seconds` long, planar.
AudioTrack planar_tone(int channels, double seconds) {
  AudioTrack a;
  a.channels = channels;
  a.layout = SampleLayout::kPlanar;
  const int64_t n = std::llround(seconds * a.sample_rate);
  a.samples.assign(static_cast<size_t>(channels * n), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    a.samples[i] = 0.4f * static_cast<float>(std::sin(2 * M_PI * 300 * i / a.sample_rate));
  return a;
}

TEST(IoMp4, PlanarAndMonoAudioAndOverwrite) {
  TempDir dir{"mp4"};
  const VideoFrames video = moving_gradient(12, 16, 16);
  const std::string path = dir.file("planar.mp4");
  ASSERT_TRUE(write_mp4(path, moving_gradient(2, 16, 16), nullptr).is_ok());
  for (int channels : {2, 1}) {
    const AudioTrack audio = planar_tone(channels, 0.5);
    const Status s = write_mp4(path, video, &audio);  // replaces the previous file
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    const MediaInfo info = expect_video_matches(path, video);
    const StreamInfo* a = info.first(StreamKind::kAudio);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->channels, channels);
    EXPECT_NEAR(a->decoded_seconds(), 0.5, 1024.0 / 32000 + 1e-9);
    ASSERT_EQ(a->channel_rms.size(), static_cast<size_t>(channels));
    const double kept = std::sqrt(audio.duration_seconds() / a->decoded_seconds());
    EXPECT_NEAR(a->channel_rms[0], 0.4 / std::sqrt(2.0) * kept, 0.01);
    if (channels == 2) {
      EXPECT_LT(a->channel_rms[1], 0.01);  // planar read as planar
    }
  }
  EXPECT_EQ(dir.entries(), 1u);
}

void expect_refused(const Status& s, ErrorCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
}

TEST(IoMp4, UnwritablePathsAreIoErrorsNamingThePath) {
  const VideoFrames video = moving_gradient(2, 16, 16);
  expect_refused(write_mp4("/no_such_folder_orochi/out.mp4", video, nullptr), ErrorCode::kIo,
                 "/no_such_folder_orochi");
  // /proc refuses new files even to root.
  expect_refused(write_mp4("/proc/orochi_out.mp4", video, nullptr), ErrorCode::kIo,
                 "/proc/orochi_out.mp4");
  TempDir dir{"mp4"};
  expect_refused(write_mp4(dir.path.string(), video, nullptr), ErrorCode::kInvalidArgument, "folder");
  expect_refused(write_mp4("", video, nullptr), ErrorCode::kInvalidArgument, "empty");
}

TEST(IoMp4, BadInputLeavesNoFile) {
  TempDir dir{"mp4"};
  const std::string path = dir.file("bad.mp4");
  expect_refused(write_mp4(path, moving_gradient(0, 16, 16), nullptr), ErrorCode::kInvalidArgument,
                 "no frames");
  expect_refused(write_mp4(path, moving_gradient(3, 16, 15), nullptr), ErrorCode::kInvalidArgument,
                 "even width and height");
  VideoFrames ragged = moving_gradient(3, 16, 16);
  ragged.rgb.resize(ragged.rgb.size() - 16 * 3);  // the last frame lost a row
  expect_refused(write_mp4(path, ragged, nullptr), ErrorCode::kInvalidArgument, "declared size");
  AudioTrack three = stereo_sine(0.1, 32000);
  three.channels = 3;  // 6400 values are not whole 3-channel samples
  expect_refused(write_mp4(path, moving_gradient(3, 16, 16), &three), ErrorCode::kInvalidArgument,
                 "channel count");
  AudioTrack four = stereo_sine(0.1, 32000);
  four.channels = 4;
  expect_refused(write_mp4(path, moving_gradient(3, 16, 16), &four), ErrorCode::kInvalidArgument,
                 "mono or stereo");
  AudioTrack odd_rate = stereo_sine(0.1, 32000);
  odd_rate.sample_rate = 12345;
  expect_refused(write_mp4(path, moving_gradient(3, 16, 16), &odd_rate),
                 ErrorCode::kInvalidArgument, "12345 Hz");
  Mp4Options bad_preset;
  bad_preset.preset = "warpspeed";
  expect_refused(write_mp4(path, moving_gradient(3, 16, 16), nullptr, bad_preset),
                 ErrorCode::kInvalidArgument, "warpspeed");
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(IoMp4, ProbeRefusesMissingAndGarbageFiles) {
  EXPECT_EQ(read_back_media("/no_such_folder_orochi/x.mp4").status().code(), ErrorCode::kNotFound);
  TempDir dir{"mp4"};
  const std::string junk = dir.file("junk.mp4");
  std::FILE* f = std::fopen(junk.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("this is not a video", f);
  std::fclose(f);
  EXPECT_EQ(read_back_media(junk).status().code(), ErrorCode::kCorruptFile);
}

}  // namespace
}  // namespace orochi::io

#else

TEST(IoMp4, SkippedWithoutFFmpeg) { GTEST_SKIP() << "built without FFmpeg's libraries"; }

#endif
