// The engine's options as the CLI meets them: devices that are not there, GPU counts beyond the
// visible ones, the one --parallel vocabulary, run switches (--set and OROCHI_* variables, typos
// refused) and the report that records them. Each is refused before any model is built.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/gpu_backend.h"
#include "io/mp4.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/temp_dir.h"

namespace orochi {
namespace {

using testing::run_orochi;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// The machines CI runs on have no GPU; on the GPU machine these cases do not apply.
#define SKIP_WITH_A_GPU() \
  if (engine::gpu_backend().device_count() > 0) GTEST_SKIP() << "a GPU is visible here"

TEST(CliEngine, NoGpuSaysSoAndHowToRunAnyway) {
  SKIP_WITH_A_GPU();
  testing::TempDir dir("cli-engine");
  for (const std::string& args : {"generate --device cuda --out " + dir.file("a.mp4"),
                                  "generate --device cuda:1 --gpus 2 --out " + dir.file("a.mp4"),
                                  "generate --random-weights --device cuda --out " + dir.file("a.mp4")}) {
    const testing::CliResult r = run_orochi(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "no CUDA GPU visible; use --device cpu") || contains(r.output, "no CUDA backend"))
        << args << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "invalid device ordinal")) << r.output;  // not a driver error
  }
  for (const std::string& args : {"bench dit", "bench text"}) {
    const testing::CliResult r = run_orochi(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "no CUDA GPU visible") || contains(r.output, "needs the CUDA backend"))
        << args << "\n" << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("a.mp4")));
}

TEST(CliEngine, GpusOnTheCpuAndTheOldLayoutWordsAreRefused) {
  testing::TempDir dir("cli-engine");
  const testing::CliResult gpus = run_orochi("generate --device cpu --gpus 2 --out " + dir.file("a.mp4"));
  EXPECT_NE(gpus.code, 0) << gpus.output;
  EXPECT_TRUE(contains(gpus.output, "needs --device cuda")) << gpus.output;
  for (const char* word : {"tp", "sp", "tpxsp", "ring"}) {
    const testing::CliResult r = run_orochi(std::string("generate --parallel ") + word + " --out " + dir.file("a.mp4"));
    EXPECT_EQ(r.code, 2) << word << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "auto, none, tpN")) << word << "\n" << r.output;
  }
}

TEST(CliEngine, RunSwitchesAreChecked) {
  testing::TempDir dir("cli-engine");
  const std::string out = " --out " + dir.file("a.mp4");
  const testing::CliResult unknown = run_orochi("generate --set flash-kv-blok=176" + out);
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "flash-kv-block")) << unknown.output;  // the valid names are listed
  const testing::CliResult value = run_orochi("generate --set gemm=fast" + out);
  EXPECT_EQ(value.code, 2) << value.output;
  EXPECT_TRUE(contains(value.output, "cublas or sm90a")) << value.output;
}

TEST(CliEngine, AnOrochiVariableWithATypoIsRefused) {
  testing::TempDir dir("cli-engine");
  const std::string cmd = "env OROCHI_FLASH_KV_BLCK=176 " + testing::orochi_binary() + " generate --out " +
                          dir.file("a.mp4") + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) output += buf;
  const int status = pclose(p);
  EXPECT_NE(status, 0) << output;
  EXPECT_TRUE(contains(output, "OROCHI_FLASH_KV_BLCK")) << output;
  EXPECT_TRUE(contains(output, "OROCHI_FLASH_KV_BLOCK")) << output;  // and the valid ones
}

TEST(CliEngine, TheReportRecordsTheSwitchesAndThePlan) {
  if (!io::mp4_supported()) GTEST_SKIP() << "this build has no FFmpeg";
  testing::TempDir dir("cli-engine");
  const std::string out = dir.file("clip.mp4");
  const testing::CliResult r = run_orochi("generate --quiet --width 64 --height 64 --frames 22 --steps 1 "
                                          "--set flash-rescale=eager,sp-weights=1,0.8 --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream f(dir.file("clip.json"));
  ASSERT_TRUE(f.good());
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["switches"]["flash-rescale"], "eager");
  EXPECT_EQ(j["switches"]["sp-weights"], "1,0.8");
  EXPECT_EQ(j["switches"]["attention"], "flash");
  EXPECT_EQ(j["request_index"], 1);
  EXPECT_TRUE(j["plan"].contains("packed_rows"));
}

}  // namespace
}  // namespace orochi
