// The reference encode and the conditioner at once (issue 23, RunPlan::pre_overlap): on a GPU run
// of two GPUs or more the planner puts the conditioner on the last GPU and the VAE encoders on the
// others, and Engine::run starts the conditioner on a thread of its own. Here, on the CPU (two
// "ranks": the run's thread and the conditioner's), a ref2va request with a prompt on the tiny
// checkpoint runs one after the other and at once: the frames and waveform are the same bits, and the
// stage report shows the pair's wall time beside each part.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "engine/engine.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "support/tiny_checkpoint.h"

namespace orochi::engine {
namespace {

namespace fs = std::filesystem;
using Kind = ReferenceInput::Kind;

std::string data(const std::string& path) { return testing::test_data_dir() + "/" + path; }

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(), a.nbytes()) == 0;
}

TEST(EnginePreOverlap, EncodeBesideTheConditionerGivesTheSameBits) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("pre_overlap");
  testing::assemble_tiny_checkpoint(dir.path / "model", testing::TinyRefPartition::kDistinct);
  ModelSource source;
  source.dir = (dir.path / "model").string();
  EngineOptions options;
  options.device = "cpu";
  Expected<std::unique_ptr<Engine>> engine = Engine::open(source, options);
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();

  GenerateRequest r;
  r.prompt = "The girl from picture 1 dances as in video 1.";
  r.text_layer = testing::kTinyTextLayer;
  r.width = 128;
  r.height = 96;
  r.frames = 124;
  r.steps = 1;
  r.seed = 3;
  r.ref_size = RefSize::kMatch;
  r.references = {{Kind::kImage, data("h3_ref2va/image_wide.png")},
                  {Kind::kVideo, data("h3_ref2va/video.mov")},
                  {Kind::kAudio, data("h3_ref2va/clip.wav")}};
  Expected<RunPlan> plan = (*engine)->plan(r);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_FALSE(plan->pre_overlap);  // a CPU plan: one after the other
  EXPECT_GT(plan->presentation_s, 0);

  Expected<RunResult> in_turn = (*engine)->run(*plan);
  ASSERT_TRUE(in_turn.has_value()) << in_turn.status().to_string();
  RunPlan at_once_plan = *plan;
  at_once_plan.pre_overlap = true;
  Expected<RunResult> at_once = (*engine)->run(at_once_plan);
  ASSERT_TRUE(at_once.has_value()) << at_once.status().to_string();

  EXPECT_TRUE(same_bits(in_turn->result.frames, at_once->result.frames));
  EXPECT_TRUE(same_bits(in_turn->result.waveform, at_once->result.waveform));
  EXPECT_EQ(in_turn->result.text_rows, at_once->result.text_rows);

  // The report: each part's own time in both; the pair's wall time only at once, and pre counts it
  // instead of the parts' sum.
  RunReport a = in_turn->report, b = at_once->report;  // as orochi generate completes them (video_output.cpp)
  a.result = in_turn->result;
  b.result = at_once->result;
  EXPECT_EQ(a.pre_pair_s, 0);
  EXPECT_GT(b.pre_pair_s, 0);
  for (const RunReport* rep : {&a, &b}) {
    EXPECT_GT(rep->text_s, 0);
    EXPECT_GT(rep->result.times.condition_encode_s, 0);
    EXPECT_GT(rep->presentation_s, 0);
  }
  EXPECT_GE(b.pre_pair_s, std::max(b.text_s, b.result.times.condition_encode_s));
  const nlohmann::json ja = report_json(a), jb = report_json(b);
  EXPECT_TRUE(ja["stages_s"]["pre_detail"]["vae_encode_and_text_at_once"].is_null());
  const double pair = jb["stages_s"]["pre_detail"]["vae_encode_and_text_at_once"].get<double>();
  EXPECT_GT(pair, 0);
  const nlohmann::json& d = jb["stages_s"]["pre_detail"];
  EXPECT_NEAR(jb["stages_s"]["pre"].get<double>(),
              d["request_memory"].get<double>() + d["media_decode"].get<double>() + d["vision_inputs"].get<double>() +
                  pair + d["layout_noise_tables"].get<double>(),
              1e-9);
  EXPECT_NE(report_text(b).find("at once"), std::string::npos) << report_text(b);
}

}  // namespace
}  // namespace orochi::engine
