// MP4 through an external ffmpeg program (the fallback of builds without FFmpeg's libraries): a clip
// with sound comes out playable, the program is found by OROCHI_FFMPEG or PATH, and a failing
// program is reported with its log while leaving nothing at the destination.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "io/mp4_program.h"
#include "support/media.h"
#include "support/temp_dir.h"
#ifdef OROCHI_WITH_FFMPEG
#include "io/ffmpeg/media_probe.h"
#endif

namespace orochi::io {
namespace {

using testing::moving_gradient;

TEST(Mp4Program, EncodesVideoAndAudioIntoAPlayableFile) {
  const std::string program = find_ffmpeg_program();
  if (program.empty()) GTEST_SKIP() << "no ffmpeg program on PATH";
  testing::TempDir dir("mp4prog");
  const std::string out = dir.file("clip.mp4");
  const AudioTrack audio = testing::stereo_sine(1.0, 32000);
  const Status s = write_mp4_with_program(program, out, moving_gradient(24, 32, 48), &audio);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(dir.entries(), 1u) << "temporary files left behind";
#ifdef OROCHI_WITH_FFMPEG
  Expected<MediaInfo> info = read_back_media(out);
  ASSERT_TRUE(info.has_value()) << info.status().to_string();
  ASSERT_NE(info->first(StreamKind::kVideo), nullptr);
  ASSERT_NE(info->first(StreamKind::kAudio), nullptr);
  EXPECT_EQ(info->first(StreamKind::kVideo)->decoded_frames, 24);
  EXPECT_EQ(info->first(StreamKind::kVideo)->width, 48);
  EXPECT_EQ(info->first(StreamKind::kAudio)->channels, 2);
  EXPECT_NEAR(info->first(StreamKind::kAudio)->decoded_seconds(), 1.0, 0.05);
#else
  EXPECT_GT(std::filesystem::file_size(out), 1000u);
#endif
}

TEST(Mp4Program, AFailingProgramIsReportedAndLeavesNoFile) {
  testing::TempDir dir("mp4prog_fail");
  const std::string fake = dir.file("ffmpeg");
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho 'encoder exploded' >&2\nexit 3\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const std::string out = dir.file("clip.mp4");
  const Status s = write_mp4_with_program(fake, out, moving_gradient(2, 16, 16), nullptr);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), ErrorCode::kIo);
  EXPECT_NE(s.message().find("encoder exploded"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("exit 3"), std::string::npos) << s.to_string();
  EXPECT_FALSE(std::filesystem::exists(out));

  // OROCHI_FFMPEG names the program; a path that is not executable means none.
  ::setenv("OROCHI_FFMPEG", fake.c_str(), 1);
  EXPECT_EQ(find_ffmpeg_program(), fake);
  ::setenv("OROCHI_FFMPEG", dir.file("missing").c_str(), 1);
  EXPECT_EQ(find_ffmpeg_program(), "");
  ::unsetenv("OROCHI_FFMPEG");
}

TEST(Mp4Program, BadRequestsAreRefusedBeforeTheProgramRuns) {
  testing::TempDir dir("mp4prog_bad");
  const Status odd = write_mp4_with_program("/bin/false", dir.file("x.mp4"), moving_gradient(2, 15, 16), nullptr);
  EXPECT_EQ(odd.code(), ErrorCode::kInvalidArgument);
  const Status nowhere = write_mp4_with_program("/bin/false", "/nonexistent-dir/x.mp4", moving_gradient(2, 16, 16), nullptr);
  EXPECT_FALSE(nowhere.is_ok());
  EXPECT_EQ(dir.entries(), 0u);
}

}  // namespace
}  // namespace orochi::io
