// `orochi generate` as a user runs it: README's main command (the built-in demo model) writes a
// playable MP4 with video and a stereo AAC stream plus its stage report, decoded back here; bad
// requests are refused before any work with the words a user needs.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/random.h"
#ifdef OROCHI_WITH_FFMPEG
#include "io/ffmpeg/media_probe.h"
#endif
#include "io/mp4.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "weights/safetensors_writer.h"

namespace orochi {
namespace {

using Result = testing::CliResult;
Result run(const std::string& args) { return testing::run_orochi("generate " + args); }

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Reading the MP4 back needs FFmpeg's libraries in this build.
#define SKIP_WITHOUT_MP4() \
  if (!io::mp4_supported()) GTEST_SKIP() << "this build has no FFmpeg"

#ifdef OROCHI_WITH_FFMPEG
TEST(CliGenerate, DemoDefaultsWriteAPlayableMp4WithSoundAndAReport) {
  SKIP_WITHOUT_MP4();
  testing::TempDir dir("generate");
  const std::string out = dir.file("demo.mp4");
  const Result r = run("--out " + out);  // README's main command, with defaults
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "built-in tiny demo model (random weights)")) << r.output;
  EXPECT_TRUE(contains(r.output, "denoise")) << r.output;  // the progress lines
  EXPECT_TRUE(contains(r.output, "8/8")) << r.output;
  EXPECT_TRUE(contains(r.output, "per step")) << r.output;

  Expected<io::MediaInfo> info = io::read_back_media(out);
  ASSERT_TRUE(info.has_value()) << info.status().to_string();
  const io::StreamInfo* video = info->first(io::StreamKind::kVideo);
  const io::StreamInfo* audio = info->first(io::StreamKind::kAudio);
  ASSERT_NE(video, nullptr);
  ASSERT_NE(audio, nullptr) << "the MP4 lost its audio stream";
  EXPECT_EQ(video->codec, "h264");
  EXPECT_EQ(video->width, 320);
  EXPECT_EQ(video->height, 192);
  EXPECT_EQ(video->decoded_frames, 124);
  EXPECT_NEAR(video->fps, 24.0, 1e-6);
  EXPECT_EQ(audio->codec, "aac");
  EXPECT_EQ(audio->channels, 2);
  EXPECT_EQ(audio->sample_rate, 32000);
  EXPECT_NEAR(audio->decoded_seconds(), 207 * 800 / 32000.0, 0.05);  // 207 latents x 800 samples
  ASSERT_EQ(audio->channel_rms.size(), 2u);
  EXPECT_GT(audio->channel_rms[0], 1e-4) << "silent soundtrack";
  EXPECT_GT(audio->channel_rms[1], 1e-4) << "silent soundtrack";

  std::ifstream report_file(dir.file("demo.json"));
  ASSERT_TRUE(report_file.good()) << "no stage report next to the MP4";
  const nlohmann::json report = nlohmann::json::parse(report_file);
  EXPECT_EQ(report["demo"], true);
  EXPECT_EQ(report["request"]["frames"], 124);
  EXPECT_EQ(report["stages_s"]["per_step"]["all"].size(), 8u);
  for (const char* stage : {"pre", "post", "e2e", "load"}) EXPECT_GT(report["stages_s"][stage].get<double>(), 0.0);
  EXPECT_GE(report["stages_s"]["e2e"].get<double>(), report["stages_s"]["post"].get<double>());
  EXPECT_GT(report["peak_memory"]["host_bytes"].get<double>(), 0.0);
}

TEST(CliGenerate, SameSeedSameVideoOtherSeedOtherVideo) {
  SKIP_WITHOUT_MP4();
  testing::TempDir dir("generate_seed");
  const std::string small = "--width 64 --height 32 --frames 22 --steps 2 --quiet --crf 0 ";
  ASSERT_EQ(run(small + "--seed 3 --out " + dir.file("a.mp4")).code, 0);
  ASSERT_EQ(run(small + "--seed 3 --out " + dir.file("b.mp4")).code, 0);
  ASSERT_EQ(run(small + "--seed 4 --out " + dir.file("c.mp4")).code, 0);
  Expected<io::MediaInfo> a = io::read_back_media(dir.file("a.mp4")), b = io::read_back_media(dir.file("b.mp4")),
                          c = io::read_back_media(dir.file("c.mp4"));
  ASSERT_TRUE(a.has_value() && b.has_value() && c.has_value());
  EXPECT_EQ(a->first(io::StreamKind::kVideo)->decoded_frames, 22);
  EXPECT_EQ(a->first_frame_rgb, b->first_frame_rgb);
  EXPECT_NE(a->first_frame_rgb, c->first_frame_rgb);
}

#endif  // OROCHI_WITH_FFMPEG

TEST(CliGenerate, RefusesImpossibleSizesBeforeAnyWork) {
  testing::TempDir dir("generate_bad");
  const std::string out = " --out " + dir.file("x.mp4");
  Result r = run("--frames 23" + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.output, "17n + 5")) << r.output;
  EXPECT_TRUE(contains(r.output, "22 and 39")) << r.output;
  r = run("--width 100" + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.output, "multiple of 32")) << r.output;
  EXPECT_TRUE(contains(r.output, "try 96x192")) << r.output;
  r = run("--steps 0" + out);  // outside the option's range: a usage error
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.output, "--steps")) << r.output;
  r = run("--out /nonexistent-folder/x.mp4");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.output, "nonexistent-folder")) << r.output;
  r = run("--prompt hello" + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.output, "tokenizer/ and text_encoder/")) << r.output;
  r = run("--speed 3" + out);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(contains(r.output, "speed")) << r.output;
  r = run("--gpus 2 --device cpu" + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.output, "--gpus 2 needs --device cuda")) << r.output;
  r = run("--parallel ring" + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.output, "--parallel must be auto, none, tpN")) << r.output;
  r = run("--comm-timeout 0" + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.output, "--comm-timeout")) << r.output;
  EXPECT_EQ(dir.entries(), 0u) << "a refused request left a file behind";
}

TEST(CliGenerate, CheckpointsNeedEveryComponentAndMatchingFeatures) {
  SKIP_WITHOUT_MP4();
  testing::TempDir dir("generate_ckpt");
  namespace fs = std::filesystem;
  const fs::path root = dir.path / "model";
  fs::create_directories(root);
  fs::create_directory_symlink(fs::path(testing::test_data_dir()) / "h3_tiny" / "transformer", root / "transformer");
  const std::string out = " --out " + dir.file("x.mp4");

  Result r = run(root.string() + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.output, "--text-features")) << r.output;
  r = run(root.string() + " --prompt 'a red fox'" + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.output, "tokenizer/tokenizer.json is missing")) << r.output;

  // The tiny transformer's text_dim is 8: a 5-wide feature file is refused by name and shape.
  const std::string features = dir.file("features.safetensors");
  ASSERT_TRUE(weights::write_safetensors(features, {{"prompt_embeds", normal_tensor({1, 4, 5}, 1, 1)}}).is_ok());
  r = run(root.string() + " --width 64 --height 64 --frames 22 --text-features " + features + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(contains(r.output, "has no vae/")) << r.output;  // components are checked before features

  fs::create_directory_symlink(fs::path(testing::test_data_dir()) / "h3_video_vae" / "vae", root / "vae");
  fs::create_directory_symlink(fs::path(testing::test_data_dir()) / "h3_audio_vae" / "audio_vae", root / "audio_vae");
  r = run(root.string() + " --width 64 --height 64 --frames 22 --text-features " + features + out);
  EXPECT_EQ(r.code, 1);
  // The golden VAEs are the reference's tiny test configs (4x spatial): not one pipeline's parts.
  EXPECT_TRUE(contains(r.output, "must come from one MiniMax-H3 checkpoint")) << r.output;

  r = run(root.string() + " --text-features " + dir.file("missing.safetensors") + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_FALSE(fs::exists(dir.file("x.mp4")));
}

}  // namespace
}  // namespace orochi
