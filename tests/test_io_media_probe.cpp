// io::probe_media: what a reference file's headers say (no decode) on media made here (PNG, MP4 with
// and without sound, WAV, an empty Y4M) and in tests/data/reference_media (JPEG with EXIF), and a
// clear error for every file a user can get wrong: missing, a folder, empty, truncated, corrupt, no
// usable stream. A build without FFmpeg answers unsupported.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "io/media_in.h"
#include "io/wav_writer.h"
#include "support/media.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }
std::string data(const std::string& name) { return testing::test_data_dir() + "/reference_media/" + name; }

#define SKIP_WITHOUT_FFMPEG() \
  if (!io::media_input_supported()) GTEST_SKIP() << "built without FFmpeg's libraries"

TEST(ProbeMedia, BuildWithoutFfmpegSaysUnsupported) {
  if (io::media_input_supported()) GTEST_SKIP() << "this build reads media";
  Expected<io::MediaProbe> p = io::probe_media(data("images/rgba.png"));
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.status().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(contains(p.status().message(), "FFmpeg")) << p.status().to_string();
}

TEST(ProbeMedia, ImagesFromTheirHeaders) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("probe");
  testing::write_png(dir.file("wide.png"), 300, 100);
  Expected<io::MediaProbe> png = io::probe_media(dir.file("wide.png"));
  ASSERT_TRUE(png.has_value()) << png.status().to_string();
  EXPECT_EQ(png->kind, io::MediaKind::kImage);
  EXPECT_EQ(png->format, "PNG");
  EXPECT_EQ(png->width, 300);
  EXPECT_EQ(png->height, 100);
  EXPECT_FALSE(png->has_audio);

  // The size a decode gives: EXIF orientation applied (read_image is the reference).
  for (const char* name : {"images/exif_jpeg.jpg", "images/orient6.png", "images/jpeg444.jpg", "images/webp_lossy.webp"}) {
    Expected<io::MediaProbe> p = io::probe_media(data(name));
    ASSERT_TRUE(p.has_value()) << name << ": " << p.status().to_string();
    Expected<io::RgbImage> decoded = io::read_image(data(name));
    ASSERT_TRUE(decoded.has_value()) << name;
    EXPECT_EQ(p->kind, io::MediaKind::kImage) << name;
    EXPECT_EQ(p->width, decoded->width) << name;
    EXPECT_EQ(p->height, decoded->height) << name;
  }
}

TEST(ProbeMedia, VideosWithAndWithoutSound) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("probe");
  testing::write_clip(dir.file("sound.mp4"), 48, 24, 64, 48, true);
  testing::write_clip(dir.file("silent.mp4"), 45, 30, 48, 64, false);
  Expected<io::MediaProbe> sound = io::probe_media(dir.file("sound.mp4"));
  ASSERT_TRUE(sound.has_value()) << sound.status().to_string();
  EXPECT_EQ(sound->kind, io::MediaKind::kVideo);
  EXPECT_EQ(sound->width, 64);
  EXPECT_EQ(sound->height, 48);
  EXPECT_EQ(sound->frames, 48);
  EXPECT_DOUBLE_EQ(sound->fps, 24.0);
  EXPECT_NEAR(sound->duration_seconds, 2.0, 1e-9);
  EXPECT_TRUE(sound->has_audio);
  EXPECT_EQ(sound->sample_rate, 44100);
  EXPECT_EQ(sound->channels, 2);
  EXPECT_NEAR(sound->audio_seconds, 2.0, 0.1);

  Expected<io::MediaProbe> silent = io::probe_media(dir.file("silent.mp4"));
  ASSERT_TRUE(silent.has_value()) << silent.status().to_string();
  EXPECT_EQ(silent->kind, io::MediaKind::kVideo);
  EXPECT_EQ(silent->frames, 45);
  EXPECT_DOUBLE_EQ(silent->fps, 30.0);
  EXPECT_NEAR(silent->duration_seconds, 1.5, 1e-9);
  EXPECT_FALSE(silent->has_audio);

  // The display rotation is applied to the size, as read_video applies it to the frames.
  Expected<io::MediaProbe> rotated = io::probe_media(data("video/clip_30fps_rot90.mp4"));
  Expected<io::DecodedVideo> decoded = io::read_video(data("video/clip_30fps_rot90.mp4"));
  ASSERT_TRUE(rotated.has_value() && decoded.has_value());
  EXPECT_EQ(rotated->width, decoded->frames.width);
  EXPECT_EQ(rotated->height, decoded->frames.height);
  EXPECT_EQ(rotated->frames, decoded->frames.frames);
}

TEST(ProbeMedia, AudioFiles) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("probe");
  ASSERT_TRUE(io::write_wav(dir.file("tone.wav"), testing::stereo_sine(1.5, 48000)).is_ok());
  Expected<io::MediaProbe> wav = io::probe_media(dir.file("tone.wav"));
  ASSERT_TRUE(wav.has_value()) << wav.status().to_string();
  EXPECT_EQ(wav->kind, io::MediaKind::kAudio);
  EXPECT_TRUE(wav->has_audio);
  EXPECT_EQ(wav->sample_rate, 48000);
  EXPECT_EQ(wav->channels, 2);
  EXPECT_NEAR(wav->audio_seconds, 1.5, 1e-3);
  Expected<io::MediaProbe> flac = io::probe_media(data("audio/mono_16000.flac"));
  ASSERT_TRUE(flac.has_value()) << flac.status().to_string();
  EXPECT_EQ(flac->kind, io::MediaKind::kAudio);
  EXPECT_EQ(flac->channels, 1);
  EXPECT_EQ(flac->sample_rate, 16000);
  EXPECT_GT(flac->audio_seconds, 0);
}

TEST(ProbeMedia, BadFilesAreRefusedNamingTheFile) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("probe");
  auto refused = [](const std::string& path, ErrorCode code, const std::string& says) {
    Expected<io::MediaProbe> p = io::probe_media(path);
    ASSERT_FALSE(p.has_value()) << path;
    EXPECT_EQ(p.status().code(), code) << p.status().to_string();
    EXPECT_TRUE(contains(p.status().message(), path)) << p.status().to_string();
    EXPECT_TRUE(contains(p.status().message(), says)) << p.status().to_string();
  };
  refused(dir.file("missing.png"), ErrorCode::kNotFound, "check the path");
  refused(dir.path.string(), ErrorCode::kNotFound, "folder");
  testing::write_file(dir.file("empty.mp4"), "");
  refused(dir.file("empty.mp4"), ErrorCode::kCorruptFile, "empty");

  testing::write_png(dir.file("whole.png"), 64, 64);
  const std::string png = testing::read_file(dir.file("whole.png"));
  testing::write_file(dir.file("cut.png"), png.substr(0, png.size() / 2));
  refused(dir.file("cut.png"), ErrorCode::kCorruptFile, "truncated PNG");
  std::string zero = png;
  for (int i = 16; i < 24; ++i) zero[i] = 0;  // IHDR width and height
  testing::write_file(dir.file("zero.png"), zero);
  refused(dir.file("zero.png"), ErrorCode::kCorruptFile, "damaged");

  testing::write_clip(dir.file("whole.mp4"), 24, 24, 32, 32, true);
  const std::string mp4 = testing::read_file(dir.file("whole.mp4"));
  testing::write_file(dir.file("cut.mp4"), mp4.substr(0, mp4.size() / 2));  // the index (moov) is whole, at the front
  refused(dir.file("cut.mp4"), ErrorCode::kCorruptFile, "truncated");
  testing::write_file(dir.file("head.mp4"), mp4.substr(0, 200));  // the index cut: no stream is left
  refused(dir.file("head.mp4"), ErrorCode::kCorruptFile, "no video or audio stream");
  testing::write_file(dir.file("noise.mp4"), std::string(4096, '\x5a'));
  refused(dir.file("noise.mp4"), ErrorCode::kCorruptFile, "cannot read");
  testing::write_file(dir.file("notes.txt"), "this is not a picture, a video or a sound\n");
  refused(dir.file("notes.txt"), ErrorCode::kCorruptFile, "");
}

TEST(ProbeMedia, AVideoWithNoFramesSaysZero) {
  SKIP_WITHOUT_FFMPEG();
  testing::TempDir dir("probe");
  // A Y4M header and no FRAME: a video stream with nothing in it.
  testing::write_file(dir.file("empty.y4m"), "YUV4MPEG2 W64 H48 F24:1 Ip A1:1 C420jpeg\n");
  Expected<io::MediaProbe> p = io::probe_media(dir.file("empty.y4m"));
  ASSERT_TRUE(p.has_value()) << p.status().to_string();
  EXPECT_EQ(p->kind, io::MediaKind::kVideo);
  EXPECT_EQ(p->width, 64);
  EXPECT_EQ(p->frames, 0);
}

}  // namespace
}  // namespace orochi
