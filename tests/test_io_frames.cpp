// The FFmpeg-free half of io: frame/audio validation, the float-tensor converters, the MP4 request
// checks (the same in every build), and write_mp4's answer in a build without FFmpeg.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/mp4.h"
#include "io/mp4_program.h"
#include "io/video_frames.h"

namespace orochi::io {
namespace {

VideoFrames gray_video(int64_t frames, int64_t height, int64_t width) {
  VideoFrames v;
  v.frames = frames;
  v.height = height;
  v.width = width;
  v.rgb.assign(static_cast<size_t>(frames * height * width * 3), 128);
  return v;
}

AudioTrack silence(int channels, int64_t samples) {
  AudioTrack a;
  a.channels = channels;
  a.samples.assign(static_cast<size_t>(channels * samples), 0.0f);
  return a;
}

void expect_invalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
}

TEST(IoFrames, ValidVideoAndAudioPass) {
  EXPECT_TRUE(validate_video(gray_video(3, 4, 6)).is_ok());
  EXPECT_TRUE(validate_audio(silence(2, 100)).is_ok());
  const AudioTrack a = silence(2, 100);
  EXPECT_TRUE(validate_mp4_request(gray_video(3, 4, 6), &a, {}).is_ok());
}

TEST(IoFrames, VideoProblemsAreNamed) {
  expect_invalid(validate_video(gray_video(0, 4, 6)), "no frames");
  expect_invalid(validate_video(gray_video(2, 0, 6)), "size must be positive");
  VideoFrames short_buffer = gray_video(3, 4, 6);
  short_buffer.rgb.resize(short_buffer.rgb.size() - 3);  // one frame a pixel short
  expect_invalid(validate_video(short_buffer), "every frame must have the declared size");
  VideoFrames bad_rate = gray_video(1, 2, 2);
  bad_rate.fps = {0, 1};
  expect_invalid(validate_video(bad_rate), "frame rate");
}

TEST(IoFrames, AudioProblemsAreNamed) {
  AudioTrack odd = silence(2, 10);
  odd.samples.pop_back();  // 19 values cannot be stereo
  expect_invalid(validate_audio(odd), "check the channel count");
  expect_invalid(validate_audio(silence(0, 0)), "at least one channel");
  expect_invalid(validate_audio(silence(2, 0)), "no samples");
  AudioTrack nan = silence(1, 8);
  nan.samples[5] = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(validate_audio(nan), "audio value 5");
  AudioTrack rate = silence(1, 8);
  rate.sample_rate = 0;
  expect_invalid(validate_audio(rate), "sample rate");
}

TEST(IoFrames, Mp4RequestChecks) {
  const Mp4Options opts;
  expect_invalid(validate_mp4_request(gray_video(2, 32, 63), nullptr, opts), "even width and height");
  expect_invalid(validate_mp4_request(gray_video(2, 31, 64), nullptr, opts), "31");
  expect_invalid(validate_mp4_request(gray_video(0, 32, 64), nullptr, opts), "no frames");
  const AudioTrack six = silence(6, 100);
  expect_invalid(validate_mp4_request(gray_video(2, 32, 64), &six, opts), "mono or stereo");
  Mp4Options bad_crf;
  bad_crf.crf = 60;
  expect_invalid(validate_mp4_request(gray_video(2, 32, 64), nullptr, bad_crf), "crf");
}

TEST(IoFrames, PlanarFloatsBecomeInterleavedBytes) {
  // [F=2, 3, H=2, W=3] with a distinct value per element, in [0, 1].
  const int64_t F = 2, H = 2, W = 3;
  std::vector<float> values(F * 3 * H * W);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) / (values.size() - 1);
  values[0] = -0.5f;  // clipped to 0
  values[1] = 1.5f;   // clipped to 255
  const auto video = video_from_planar_floats(Tensor::from_floats(values, {F, 3, H, W}), {25, 1});
  ASSERT_TRUE(video.has_value()) << video.status().to_string();
  EXPECT_EQ(video->frames, F);
  EXPECT_EQ(video->height, H);
  EXPECT_EQ(video->width, W);
  EXPECT_EQ(video->fps.num, 25);
  ASSERT_TRUE(validate_video(*video).is_ok());
  for (int64_t f = 0; f < F; ++f)
    for (int c = 0; c < 3; ++c)
      for (int64_t p = 0; p < H * W; ++p) {
        const float x = values[(f * 3 + c) * H * W + p];
        const long want = std::clamp(std::lround(x * 255.0f), 0L, 255L);
        EXPECT_EQ(video->frame(f)[p * 3 + c], want) << f << " " << c << " " << p;
      }
  EXPECT_EQ(video->frame(0)[0], 0);
  EXPECT_EQ(video->frame(0)[3], 255);
}

TEST(IoFrames, MinusOneToOneRangeMapsToFullScale) {
  const Tensor t = Tensor::from_floats({-1.0f, 0.0f, 1.0f, 0.5f, -1.0f, 0.0f}, {1, 3, 1, 2});
  const auto video = video_from_planar_floats(t, {}, PixelRange::kMinusOneToOne);
  ASSERT_TRUE(video.has_value());
  // pixel 0 = (R -1, G 1, B -1), pixel 1 = (R 0, G 0.5, B 0)
  EXPECT_EQ(video->rgb, (std::vector<uint8_t>{0, 255, 0, 128, 191, 128}));
}

TEST(IoFrames, ConverterRejectsBadTensors) {
  EXPECT_EQ(video_from_planar_floats(Tensor::from_floats({0, 0}, {1, 2, 1, 1})).status().code(),
            ErrorCode::kShapeMismatch);
  EXPECT_EQ(video_from_planar_floats(Tensor::from_floats({0, 0, 0}, {3, 1})).status().code(),
            ErrorCode::kShapeMismatch);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto bad = video_from_planar_floats(Tensor::from_floats({0, nan, 0}, {1, 3, 1, 1}));
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("channel 1"), std::string::npos);
}

TEST(IoFrames, PlanarAudioFromTensorKeepsChannels) {
  const auto audio = audio_from_planar_floats(Tensor::from_floats({1, 2, 3, 4, 5, 6}, {2, 3}), 16000);
  ASSERT_TRUE(audio.has_value()) << audio.status().to_string();
  EXPECT_EQ(audio->channels, 2);
  EXPECT_EQ(audio->sample_rate, 16000);
  EXPECT_EQ(audio->sample_count(), 3);
  EXPECT_EQ(audio->at(2, 0), 3.0f);
  EXPECT_EQ(audio->at(0, 1), 4.0f);
  EXPECT_EQ(audio_from_planar_floats(Tensor::from_floats({1, 2}, {2})).status().code(),
            ErrorCode::kShapeMismatch);
}

TEST(IoFrames, Mp4SupportMatchesTheBuild) {
#ifdef OROCHI_WITH_FFMPEG
  EXPECT_TRUE(mp4_supported());
#else
  // Without the libraries an ffmpeg program is the fallback; with none, writing is refused.
  EXPECT_EQ(mp4_supported(), !find_ffmpeg_program().empty());
  if (mp4_supported()) return;
  const Status s = write_mp4("/tmp/never.mp4", gray_video(1, 2, 2), nullptr);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("without FFmpeg"), std::string::npos);
#endif
}

}  // namespace
}  // namespace orochi::io
