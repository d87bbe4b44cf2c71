// fl2va through the engine on the CPU with the built-in demo model: a GenerateRequest with keyframe
// references is planned (the keyframes read, the canvas from the first one present by the demo's
// canvas rule, the layout with their conditioning rows) and run (frames + waveform, report says
// fl2va); first + last and last-only requests plan as the reference pipeline takes them.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "support/paths.h"

namespace orochi::engine {
namespace {

std::string image(const std::string& name) { return testing::test_data_dir() + "/reference_media/images/" + name; }

GenerateRequest keyframe_request(std::vector<ReferenceInput> refs) {
  GenerateRequest r;
  r.frames = 124;  // fl2va makes 5 to 15 s, as the reference pipeline
  r.steps = 2;
  r.text_rows = 8;
  r.seed = 3;
  r.references = std::move(refs);
  return r;
}

std::unique_ptr<Engine> demo_engine() {
  Expected<std::unique_ptr<Engine>> e = Engine::open(ModelSource{}, EngineOptions{.device = "cpu"});
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  return std::move(e).value();
}

TEST(EngineFl2va, FirstKeyframeRunsOnTheDemo) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  std::unique_ptr<Engine> engine = demo_engine();
  // rgb_odd.png is 67x45 (1.49:1): the demo's rule (short edge 192, <= 320x192 px) gives 288x192.
  Expected<RunPlan> plan =
      engine->plan(keyframe_request({{ReferenceInput::Kind::kFirstFrame, image("rgb_odd.png")}}));
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_EQ(plan->workflow, "fl2va");
  EXPECT_EQ(plan->request.width, 288);
  EXPECT_EQ(plan->request.height, 192);
  ASSERT_EQ(plan->keyframes.size(), 1u);
  EXPECT_EQ(plan->keyframes[0].width, 288);
  const pipeline::PackedLayout& layout = plan->shape.t2va.layout;
  EXPECT_EQ(layout.condition_video_rows, layout.rows_per_frame);
  EXPECT_EQ(plan->shape.rows, layout.rows);
  EXPECT_EQ(layout.rows, 8 + layout.rows_per_frame * (1 + 37) + 2 * 207);

  std::vector<std::string> stages;
  Expected<RunResult> run = engine->run(*plan, [&](const Progress& p) {
    if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
  });
  ASSERT_TRUE(run.has_value()) << run.status().to_string();
  EXPECT_EQ(stages, (std::vector<std::string>{"keyframe encode", "denoise", "video decode", "audio decode"}));
  EXPECT_EQ(run->result.frames.shape(), (Shape{124, 3, 192, 288}));
  EXPECT_EQ(run->result.waveform.dim(0), 2);
  EXPECT_EQ(run->result.waveform.dim(1), 800 * 207);
  EXPECT_EQ(run->result.condition_rows, layout.rows_per_frame);
  EXPECT_EQ(run->report.workflow, "fl2va");
  RunReport report = run->report;
  report.result = run->result;  // as `orochi generate` fills it
  const nlohmann::json j = report_json(report);
  EXPECT_EQ(j["request"]["workflow"], "fl2va");
  EXPECT_GT(j["stages_s"]["pre_detail"]["vae_encode"].get<double>(), 0.0);
  EXPECT_GT(j["stages_s"]["pre_detail"]["media_decode"].get<double>(), 0.0);
  EXPECT_EQ(j["sizes"]["rows"]["keyframes"], layout.rows_per_frame);
  for (int64_t i = 0; i < run->result.frames.numel(); ++i)
    ASSERT_TRUE(std::isfinite(run->result.frames.data<float>()[i]));
}

TEST(EngineFl2va, FirstAndLastAndLastOnlyPlan) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  std::unique_ptr<Engine> engine = demo_engine();
  // The last keyframe given first on the command line: the layout still puts the first one first.
  Expected<RunPlan> both = engine->plan(keyframe_request({{ReferenceInput::Kind::kLastFrame, image("rgba.png")},
                                                          {ReferenceInput::Kind::kFirstFrame, image("rgb_odd.png")}}));
  ASSERT_TRUE(both.has_value()) << both.status().to_string();
  EXPECT_EQ(both->shape.t2va.shape.keyframes,
            (std::vector<pipeline::KeyframeAnchor>{pipeline::KeyframeAnchor::kFirst, pipeline::KeyframeAnchor::kLast}));
  EXPECT_EQ(both->shape.t2va.layout.condition_video_rows, 2 * both->shape.t2va.layout.rows_per_frame);
  ASSERT_EQ(both->keyframes.size(), 2u);
  for (const io::RgbImage& k : both->keyframes) {  // the portrait last keyframe is cover-cropped
    EXPECT_EQ(k.width, 288);
    EXPECT_EQ(k.height, 192);
  }
  // The reference pipeline takes a last keyframe alone (its canvas follows it): so does the engine.
  Expected<RunPlan> last = engine->plan(keyframe_request({{ReferenceInput::Kind::kLastFrame, image("rgba.png")}}));
  ASSERT_TRUE(last.has_value()) << last.status().to_string();
  EXPECT_EQ(last->shape.t2va.shape.keyframes, std::vector<pipeline::KeyframeAnchor>{pipeline::KeyframeAnchor::kLast});
  EXPECT_EQ(last->request.width, 192);  // rgba.png is 40x60
  EXPECT_EQ(last->request.height, 288);
  // A given canvas wins over the keyframe's aspect; half a size is refused.
  GenerateRequest sized = keyframe_request({{ReferenceInput::Kind::kFirstFrame, image("rgb_odd.png")}});
  sized.width = 128;
  sized.height = 128;
  Expected<RunPlan> square = engine->plan(sized);
  ASSERT_TRUE(square.has_value()) << square.status().to_string();
  EXPECT_EQ(square->keyframes[0].width, 128);
  EXPECT_EQ(square->keyframes[0].height, 128);
  sized.height = 0;
  EXPECT_FALSE(engine->plan(sized).has_value());
}

}  // namespace
}  // namespace orochi::engine
