// Few-step sampling through the binary: generate's and plan's --preset, --sigmas and --audio-sigmas,
// refused before any work when they break a rule (exit 2, the flag named), recorded in the stage
// report, and shown by `orochi plan`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "io/mp4.h"
#include "support/cli.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

using Result = testing::CliResult;
bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

const char* kHyperFlow = "1,0.99391,0.98429,0.96606,0.92308,0.83494,0.69685,0.46875,0";

TEST(CliSampling, BadSchedulesAreUsageErrorsBeforeAnyWork) {
  testing::TempDir dir("sampling_bad");
  const std::string out = " --out " + dir.file("x.mp4");
  const std::pair<std::string, std::string> cases[] = {
      {"--preset turbo8 --steps 8", "--preset turbo8 sets 8 steps and shifts 6/3"},
      {"--preset turbo4 --audio-shift 3", "drop --audio-shift"},
      {"--preset turbo2", "turbo2 is not a preset; the presets are turbo8, turbo4"},
      {"--sigmas 1,0.5,0.7,0", "--sigmas is not strictly decreasing at value 3"},
      {"--sigmas 1,0.5,zero", "--sigmas value 3 wants a number, got 'zero'"},
      {"--sigmas 1,,0", "--sigmas value 2 wants a number"},
      {"--sigmas 1.2,0.5,0", "--sigmas value 1 is 1.2: every sigma must be in [0, 1]"},
      {"--sigmas 0.9,0.5,0", "the first sigma must be 1"},
      {"--sigmas 1,0.5", "the last sigma must be 0"},
      {"--sigmas 1,0.5,0 --steps 3", "--steps 3 but --sigmas has 3 values, 2 evaluations"},
      {"--sigmas 1,0.5,0 --video-shift 5", "pass one"},
      {"--sigmas 1,0.5,0 --audio-sigmas 1,0.6,0.3,0", "--sigmas has 3 values and --audio-sigmas 4"},
  };
  for (const auto& [flags, message] : cases) {
    const Result r = testing::run_orochi("generate " + flags + out);
    EXPECT_EQ(r.code, 2) << flags << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, message)) << flags << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "demo model")) << "the model was opened before the check: " << r.output;
    const Result plan = testing::run_orochi("plan " + flags);
    EXPECT_EQ(plan.code, 2) << "plan " << flags << "\n" << plan.output;
    EXPECT_TRUE(contains(plan.output, message)) << "plan " << flags << "\n" << plan.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.mp4")));
}

TEST(CliSampling, PlanShowsTheSchedule) {
  Result r = testing::run_orochi("plan --res 480p --preset turbo8");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "schedule: turbo8: 8 evaluations, video grid shift 6, audio grid shift 3")) << r.output;
  EXPECT_TRUE(contains(r.output, "8 steps")) << r.output;
  r = testing::run_orochi(std::string("plan --res 480p --sigmas ") + kHyperFlow);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, std::string("schedule: 8 evaluations, video sigmas ") + kHyperFlow +
                                     ", audio grid shift 3"))
      << r.output;
  r = testing::run_orochi("plan --res 480p");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "schedule: 8 evaluations, video grid shift 12, audio grid shift 3")) << r.output;

  r = testing::run_orochi("plan --res 480p --preset turbo4 --json", /*with_stderr=*/false);
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["sampling"]["preset"], "turbo4");
  EXPECT_EQ(j["sampling"]["steps"], 4);
  ASSERT_EQ(j["sampling"]["video_sigmas"].size(), 5u);
  EXPECT_NEAR(j["sampling"]["video_sigmas"][2].get<double>(), 6 * 0.5 / (1 + 5 * 0.5), 1e-6);  // q = 1/2
  EXPECT_EQ(j["request"]["steps"], 4);
}

#ifdef OROCHI_WITH_FFMPEG
// The stage report beside a small demo run.
nlohmann::json demo_report(const testing::TempDir& dir, const std::string& flags) {
  const std::string out = dir.file("run.mp4");
  const Result r = testing::run_orochi("generate --width 64 --height 64 --frames 22 --quiet " + flags + " --out " + out);
  EXPECT_EQ(r.code, 0) << flags << "\n" << r.output;
  std::ifstream in(dir.file("run.json"));
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

TEST(CliSampling, TheReportRecordsThePresetAndBothSchedules) {
  if (!io::mp4_supported()) GTEST_SKIP() << "this build has no FFmpeg";
  testing::TempDir dir("sampling_run");
  nlohmann::json report = demo_report(dir, "--sigmas 1,0.5,0");
  ASSERT_TRUE(report.is_object());
  const nlohmann::json& q = report["request"];
  EXPECT_EQ(q["steps"], 2);
  EXPECT_TRUE(q["preset"].is_null());
  EXPECT_EQ(q["video_sigmas"], nlohmann::json::parse("[1.0, 0.5, 0.0]"));
  // The audio keeps its shifted grid of as many points: 3·0.5 / (1 + 2·0.5) = 0.75.
  EXPECT_EQ(q["audio_sigmas"], nlohmann::json::parse("[1.0, 0.75, 0.0]"));
  EXPECT_EQ(report["stages_s"]["per_step"]["all"].size(), 2u);

  report = demo_report(dir, "--preset turbo4");
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["request"]["preset"], "turbo4");
  EXPECT_EQ(report["request"]["steps"], 4);
  EXPECT_EQ(report["request"]["video_shift"], 6.0);
  EXPECT_EQ(report["request"]["audio_shift"], 3.0);
  EXPECT_EQ(report["request"]["video_sigmas"].size(), 5u);
  EXPECT_EQ(report["stages_s"]["per_step"]["all"].size(), 4u);
}
#endif  // OROCHI_WITH_FFMPEG

}  // namespace
}  // namespace orochi
