// The floors hold (docs/ARCHITECTURE.md): the CLI (src/apps/) calls no CUDA, includes no cuda/
// header and tests for no CUDA build (the engine's GPU backend is linked in instead), the shared
// DiT layers (src/layers/) know no model family, work fans out only through dist::ParallelContext,
// and the process environment is read only by core/env.cpp, the options layer's one reader.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "support/paths.h"

namespace orochi {
namespace {

namespace fs = std::filesystem;

fs::path source_root() { return fs::path(testing::test_data_dir()) / ".." / ".." / "src"; }

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Lines of `text` matching `pattern`, outside // comments.
std::vector<std::string> code_lines_matching(const std::string& text, const std::regex& pattern) {
  std::vector<std::string> hits;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::string code = line.substr(0, line.find("//"));
    if (std::regex_search(code, pattern)) hits.push_back(line);
  }
  return hits;
}

TEST(Layering, TheCliHasNoCuda) {
  const fs::path apps = source_root() / "apps";
  ASSERT_TRUE(fs::is_directory(apps)) << apps;
  const std::regex cuda(R"(#\s*include\s*[<"](cuda_runtime|cuda\.h|[^"]*/cuda/)|#\s*if(def)?\s.*OROCHI_WITH_CUDA|\bcuda[A-Z]\w*\s*\()");
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(apps)) {
    if (!e.is_regular_file()) continue;
    ++files;
    for (const std::string& line : code_lines_matching(read(e.path()), cuda))
      ADD_FAILURE() << e.path().filename() << ": " << line;
  }
  EXPECT_GT(files, 10);
}

// The shared DiT layers sit below every model family (a second family reuses them as they are):
// they include no model, pipeline, planner, engine or app header.
TEST(Layering, TheSharedLayersKnowNoFamily) {
  const fs::path layers = source_root() / "layers";
  ASSERT_TRUE(fs::is_directory(layers)) << layers;
  const std::regex above(R"(#\s*include\s*"(models|pipeline|planner|engine|apps|io)/)");
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(layers)) {
    if (!e.is_regular_file()) continue;
    ++files;
    for (const std::string& line : code_lines_matching(read(e.path()), above))
      ADD_FAILURE() << e.path().filename() << ": " << line;
  }
  EXPECT_GT(files, 5);
}

// Work fans out to the GPUs (or CPU ranks) only through dist::ParallelContext: no model, pipeline,
// engine, layer or app starts threads (but the server's one job worker), and only the distributed layer makes NCCL or copy-engine
// groups (the models take theirs from the context).
TEST(Layering, TheParallelContextIsTheOnlyFanOut) {
  const std::regex threads(R"(std::(thread|jthread|async)\b)");
  const std::regex groups(R"(#\s*include\s*"dist/(nccl/|cuda/peer_copy_comm))");
  int files = 0;
  for (const char* floor : {"models", "pipeline", "engine", "layers", "apps"}) {
    const fs::path dir = source_root() / floor;
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      ++files;
      const std::string text = read(e.path());
      // The server's job worker: one service thread that runs queued jobs in turn on the engine
      // (which fans out below it through the context), not a fan-out of work.
      const bool job_worker = e.path().stem() == "job_queue" && e.path().parent_path().filename() == "server";
      if (!job_worker)
        for (const std::string& line : code_lines_matching(text, threads)) ADD_FAILURE() << e.path() << ": " << line;
      for (const std::string& line : code_lines_matching(text, groups)) ADD_FAILURE() << e.path() << ": " << line;
    }
  }
  EXPECT_GT(files, 100);
}

TEST(Layering, OnlyTheOptionsLayerReadsTheEnvironment) {
  const std::regex getenv_call(R"(\b(secure_)?getenv\s*\()");
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(source_root())) {
    if (!e.is_regular_file()) continue;
    ++files;
    if (e.path().filename() == "env.cpp" && e.path().parent_path().filename() == "core") continue;
    for (const std::string& line : code_lines_matching(read(e.path()), getenv_call))
      ADD_FAILURE() << e.path() << ": " << line;
  }
  EXPECT_GT(files, 100);
}

}  // namespace
}  // namespace orochi
