// The reference flags through the binary (issue 23): `orochi generate` and `orochi plan` take
// --image/--last-image/--ref-image/--ref-video/--ref-audio in command-line order, and refuse every
// bad reference (unreadable file, 13 references, audio alone, a 5:1 image, a 0.5 s video, a video
// with no frames) with a clear message before any weight is read: generate prints no model banner
// (Engine::open has not run), and a model folder with no weights at all gets the reference's error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "io/media_in.h"
#include "io/wav_writer.h"
#include "support/cli.h"
#include "support/media.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

struct Media {
  testing::TempDir dir{"cliref"};
  std::string a, b, wide, video, half_second, no_frames, wav, fake_model, out;
  Media() {
    a = dir.file("a.png");
    testing::write_png(a, 64, 48);
    b = dir.file("b.png");
    testing::write_png(b, 48, 64);
    wide = dir.file("wide.png");
    testing::write_png(wide, 500, 100);
    video = dir.file("v.mp4");
    testing::write_clip(video, 48, 24, 64, 48, true);
    half_second = dir.file("half.mp4");
    testing::write_clip(half_second, 12, 24, 64, 48, true);
    no_frames = dir.file("none.y4m");
    testing::write_file(no_frames, "YUV4MPEG2 W64 H48 F24:1 Ip A1:1 C420jpeg\n");
    wav = dir.file("a.wav");
    OROCHI_CHECK(io::write_wav(wav, testing::stereo_sine(2.0, 44100)).is_ok());
    // A model folder that names the family and holds no weight: opening it would fail.
    fake_model = dir.file("model");
    std::filesystem::create_directories(fake_model + "/transformer");
    std::ofstream(fake_model + "/transformer/config.json") << R"({"_class_name": "MiniMaxH3Transformer3DModel"})";
    out = dir.file("out.mp4");
  }
};

#define SKIP_WITHOUT_FFMPEG() \
  if (!io::media_input_supported()) GTEST_SKIP() << "built without FFmpeg's libraries"

TEST(CliReferences, PlanListsTheReferencesInCommandLineOrder) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const testing::CliResult r = testing::run_orochi("plan --ref-image " + m.b + " --ref-video " + m.video +
                                                   " --ref-audio " + m.wav + " --ref-image=" + m.a +
                                                   " --ref-video-audio off --ref-size match");
  EXPECT_EQ(r.code, 0) << r.output;  // planned: test_cli_plan_references checks its rows
  const size_t b = r.output.find("--ref-image " + m.b), v = r.output.find("--ref-video " + m.video),
               w = r.output.find("--ref-audio " + m.wav), a = r.output.find("--ref-image " + m.a);
  ASSERT_NE(b, std::string::npos) << r.output;
  ASSERT_NE(a, std::string::npos) << r.output;
  EXPECT_TRUE(b < v && v < w && w < a) << r.output;
  EXPECT_TRUE(contains(r.output, "left out (--ref-video-audio off)")) << r.output;
}

// fl2va's keyframe rows are in the plan: one conditioning frame of rows each, the canvas from the
// first keyframe (a 64x48 image: 4:3) when --res is not given, as generate takes it.
TEST(CliReferences, PlanOfAnFl2vaRequestCountsItsKeyframeRows) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const testing::CliResult t2va = testing::run_orochi("plan --res 768p --json", false);
  const testing::CliResult fl2va =
      testing::run_orochi("plan --res 768p --json --last-image " + m.b + " --image " + m.a, false);
  ASSERT_EQ(t2va.code, 0) << t2va.output;
  ASSERT_EQ(fl2va.code, 0) << fl2va.output;
  const nlohmann::json a = nlohmann::json::parse(t2va.output), b = nlohmann::json::parse(fl2va.output);
  // 768p: 1344x768 / 16 / 2 / 2 -> 42 x 24 patches per latent frame, two keyframes; and in the text
  // rows each keyframe's presentation: its vision tokens (1344x768 / 32²) between vision start and
  // end, and its "<Picture i>: " label (estimated at 6 tokens without the model's tokenizer).
  EXPECT_EQ(b["request"]["rows"]["keyframes"].get<int64_t>(), 2 * 42 * 24);
  EXPECT_EQ(b["request"]["text_rows"].get<int64_t>() - a["request"]["text_rows"].get<int64_t>(),
            2 * (42 * 24 + 2 + 6));
  EXPECT_EQ(b["request"]["packed_rows"].get<int64_t>() - a["request"]["packed_rows"].get<int64_t>(),
            2 * 42 * 24 + 2 * (42 * 24 + 2 + 6));
  const testing::CliResult canvas = testing::run_orochi("plan --image " + m.a);
  EXPECT_EQ(canvas.code, 0) << canvas.output;
  EXPECT_TRUE(contains(canvas.output, "fl2va references")) << canvas.output;
}

TEST(CliReferences, UsageErrorsOfTheFlags) {
  Media m;
  const std::vector<std::string> bad = {"--ref-image " + m.a + " --ref-size 1024", "--ref-video-audio on",
                                        "--ref-size match", "--ref-video " + m.video + " --ref-video-audio maybe",
                                        "--ref-image", "--ref-image="};
  for (const std::string& args : bad) {
    for (const std::string& cmd : {"generate --out " + m.out + " ", std::string("plan ")}) {
      const testing::CliResult r = testing::run_orochi(cmd + args);
      EXPECT_EQ(r.code, 2) << cmd << args << "\n" << r.output;
    }
  }
}

TEST(CliReferences, BadReferencesAreRefusedBeforeAnyWeightIsRead) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  std::string thirteen;
  for (int i = 0; i < 9; ++i) thirteen += " --ref-image " + m.a;
  for (int i = 0; i < 3; ++i) thirteen += " --ref-video " + m.video;
  thirteen += " --ref-audio " + m.wav;
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"--ref-image " + m.dir.file("missing.png"), {"--ref-image " + m.dir.file("missing.png"), "check the path"}},
      {"--ref-image " + m.a + " --ref-video " + m.dir.file("none.mp4"), {"--ref-video", "none.mp4", "no file"}},
      {thirteen, {"at most 12 in all", "has 13"}},
      {"--ref-audio " + m.wav, {"audio references alone"}},
      {"--ref-image " + m.wide, {"--ref-image " + m.wide, "5.00:1", "1:4 to 4:1"}},
      {"--ref-video " + m.half_second, {"--ref-video " + m.half_second, "0.50 s", "at least 22 frames"}},
      {"--ref-video " + m.no_frames, {"--ref-video " + m.no_frames, "no frames"}},
      {"--image " + m.a + " --ref-image " + m.b, {"cannot be combined"}},
      {"--image " + m.a + " --image " + m.b, {"--image is given 2 times"}},
      {"--ref-image " + m.a + " --frames 107", {"--frames 124..345"}},
  };
  for (const auto& [flags, parts] : cases) {
    // The demo: refused before Engine::open (which prints the model's banner).
    const testing::CliResult demo = testing::run_orochi("generate --out " + m.out + " " + flags);
    EXPECT_EQ(demo.code, 1) << flags << "\n" << demo.output;
    EXPECT_FALSE(contains(demo.output, "orochi generate:")) << flags << "\n" << demo.output;
    // A model folder with no weights: the reference's error, not the folder's.
    const testing::CliResult model = testing::run_orochi("generate " + m.fake_model + " --text-features " +
                                                         m.dir.file("f.safetensors") + " --out " + m.out + " " + flags);
    EXPECT_EQ(model.code, 1) << flags << "\n" << model.output;
    const testing::CliResult plan = testing::run_orochi("plan " + flags);
    EXPECT_EQ(plan.code, 1) << flags << "\n" << plan.output;
    for (const std::string& p : parts) {
      EXPECT_TRUE(contains(demo.output, p)) << flags << ": " << p << "\n" << demo.output;
      EXPECT_TRUE(contains(model.output, p)) << flags << ": " << p << "\n" << model.output;
      EXPECT_TRUE(contains(plan.output, p)) << flags << ": " << p << "\n" << plan.output;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(m.out));
}

// ref2va runs on the built-in demo model (test_engine_ref2va, the CI's demo run) and on a checkpoint
// with --prompt (test_engine_ref2va_checkpoint); with --text-features a checkpoint's is refused from
// the request alone, before any weight is read (the folder here has none).
TEST(CliReferences, Ref2vaOnACheckpointIsRefusedBeforeAnyWeight) {
  SKIP_WITHOUT_FFMPEG();
  Media m;
  const testing::CliResult r = testing::run_orochi("generate " + m.fake_model + " --text-features " +
                                                   m.dir.file("f.safetensors") + " --out " + m.out + " --ref-image " +
                                                   m.a + " --ref-video " + m.video + " --ref-audio " + m.wav);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "ref2va on a checkpoint takes --prompt")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(m.out));
}

}  // namespace
}  // namespace orochi
