// `orochi plan` as a user runs it (needs the binary's `plan` command): tables, summary, JSON,
// exit codes, and the errors for bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace {

using Result = orochi::testing::CliResult;
Result run(const std::string& args, bool with_stderr = true) { return orochi::testing::run_orochi(args, with_stderr); }

bool has(const Result& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

TEST(PlanCli, PrintsEveryPhaseAndASummary) {
  const Result r = run("plan --model h3 --res 768p");
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* text : {"text encoder", "denoiser", "decode", "weights", "activations", "request state",
                           "fits with", "S = 37,966", "equivalent single-GPU capacity", "streamed once"})
    EXPECT_TRUE(has(r, text)) << text << "\n" << r.output;
}

TEST(PlanCli, A24GiBGpuStreamsFromTheHost) {
  const Result r = run("plan --model h3 --res 480p --vram-per-gpu 24");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r, "host")) << r.output;
  EXPECT_TRUE(has(r, "staging")) << r.output;
  const Result refused = run("plan --model h3 --res 480p --vram-per-gpu 24 --tiers resident");
  EXPECT_EQ(refused.code, 1) << refused.output;
  EXPECT_TRUE(has(refused, "does not fit by")) << refused.output;
  EXPECT_TRUE(has(refused, "to fit:")) << refused.output;
}

TEST(PlanCli, AutoLayoutIsWhatGenerateWouldTake) {
  // Roomy GPUs: the whole model fits on each, so sequence parallel.
  Result roomy = run("plan --res 768p --gpus 2 --parallel auto");
  EXPECT_EQ(roomy.code, 0) << roomy.output;
  EXPECT_TRUE(has(roomy, "layout: sp2")) << roomy.output;
  EXPECT_TRUE(has(roomy, "denoiser (sp2)")) << roomy.output;
  // 24 GiB GPUs cannot hold the 37 GiB of weights each: tensor parallel splits them.
  Result small = run("plan --res 768p --gpus 2 --vram-per-gpu 24 --parallel auto");
  EXPECT_EQ(small.code, 0) << small.output;
  EXPECT_TRUE(has(small, "layout: tp2")) << small.output;
  Result eight = run("plan --res 768p --gpus 8 --vram-per-gpu 16 --parallel auto");
  EXPECT_TRUE(has(eight, "layout: tp4xsp2")) << eight.output;
  // auto is the default, as on generate: the same plan without --parallel.
  Result by_default = run("plan --res 768p --gpus 2");
  EXPECT_EQ(by_default.code, 0) << by_default.output;
  EXPECT_TRUE(has(by_default, "layout: sp2")) << by_default.output;
  Result explicit_both = run("plan --res 768p --gpus 4 --parallel tp2xsp2");
  EXPECT_EQ(explicit_both.code, 0) << explicit_both.output;
  EXPECT_TRUE(has(explicit_both, "denoiser (tp2xsp2)")) << explicit_both.output;
}

TEST(PlanCli, JsonHasTheSameData) {
  const Result r = run("plan --model h3 --res 480p --gpus 2 --parallel tp2 --json", false);
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["request"]["packed_rows"], 15100);
  EXPECT_EQ(j["layout"], "tp2");
  ASSERT_EQ(j["phases"].size(), 3u);
  EXPECT_EQ(j["phases"][1]["gpus"].size(), 2u);
  EXPECT_EQ(j["phases"][0]["layout"], "one GPU");  // the text encoder runs on GPU 0 alone
  EXPECT_EQ(j["text_encoder_tiers"], j["tiers"]);  // --tiers places every phase
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_EQ(j["capacity"].size(), 3u);  // none, tp2, sp2
  uint64_t pools = 0;
  for (const auto& p : j["phases"][1]["gpus"][0]["pools"]) pools += p["bytes"].get<uint64_t>();
  EXPECT_EQ(pools, j["phases"][1]["gpus"][0]["total_bytes"].get<uint64_t>());
}

TEST(PlanCli, ReadsOnlyTheConfigsOfAModelFolder) {
  orochi::testing::TempDir dir("plan_model");
  const std::string data = orochi::testing::test_data_dir();
  namespace fs = std::filesystem;
  const std::pair<const char*, std::string> parts[] = {{"transformer", data + "/h3_tiny/transformer"},
                                                       {"vae", data + "/h3_video_vae/vae"},
                                                       {"audio_vae", data + "/h3_audio_vae/audio_vae"}};
  for (const auto& [name, from] : parts) {
    fs::create_directories(dir.path / name);
    fs::copy_file(from + "/config.json", dir.path / name / "config.json");
  }
  Result r = run("plan --model " + dir.path.string() + " --res 64x64 --frames 22");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r, "text_encoder/config.json not found")) << r.output;
  fs::create_directories(dir.path / "text_encoder");
  fs::copy_file(data + "/qwen3vl_text/text_encoder/config.json", dir.path / "text_encoder" / "config.json");
  r = run("plan --model " + dir.path.string() + " --res 64x64 --frames 22");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r, dir.path.string())) << r.output;
  EXPECT_TRUE(has(r, "fits with")) << r.output;
}

TEST(PlanCli, BadInputGetsAClearError) {
  Result r = run("plan --res 720p");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r, "--res must be")) << r.output;
  r = run("plan --frames 100");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r, "90 and 107")) << r.output;
  r = run("plan --vram-per-gpu 0");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r, "--vram-per-gpu must be")) << r.output;
  r = run("plan --vram-per-gpu -3");
  EXPECT_EQ(r.code, 1);
  r = run("plan --gpus 4 --parallel sp3");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r, "attention heads")) << r.output;
  r = run("plan --model /nonexistent/h3");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r, "no such folder")) << r.output;
  r = run("plan --bogus 1");
  EXPECT_NE(r.code, 0);
}

}  // namespace
