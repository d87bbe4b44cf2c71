// ref2va through the engine on the CPU with the built-in demo model: a GenerateRequest with images, a
// video with its soundtrack and an audio clip is planned (the references read and normalized by the
// demo's rules — the release's scaled to its 320x192 canvas: a video's own canvas at a 192 short edge,
// images at 512 — their blocks in the layout in request order) and run (reference encode, denoise,
// decodes; frames + waveform; the report counts the rows and splits pre). --ref-size match, the
// soundtrack left out, and the refusals before any weight: a checkpoint's ref2va (random weights are accepted).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "support/golden.h"
#include "support/paths.h"

namespace orochi::engine {
namespace {

using Kind = ReferenceInput::Kind;

// The media of the ref2va golden (scripts/golden/make_h3_ref2va.py): 80x48 and 48x72 PNGs, an 80x48
// 30 fps video of 36 frames with a 1.2 s mono 44.1 kHz soundtrack, a 1.5 s stereo 16 kHz WAV.
std::string media(const std::string& name) { return testing::test_data_dir() + "/h3_ref2va/" + name; }

GenerateRequest ref2va_request(std::vector<ReferenceInput> refs) {
  GenerateRequest r;
  r.frames = 124;
  r.steps = 2;
  r.text_rows = 8;
  r.seed = 5;
  r.references = std::move(refs);
  return r;
}

std::vector<ReferenceInput> full_request() {
  return {{Kind::kImage, media("image_wide.png")},
          {Kind::kVideo, media("video.mov")},
          {Kind::kAudio, media("clip.wav")},
          {Kind::kImage, media("image_tall.png")}};
}

std::unique_ptr<Engine> demo_engine() {
  Expected<std::unique_ptr<Engine>> e = Engine::open(ModelSource{}, EngineOptions{.device = "cpu"});
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  return std::move(e).value();
}

TEST(EngineRef2va, RunsOnTheDemoWithEveryKindOfReference) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  std::unique_ptr<Engine> engine = demo_engine();
  Expected<RunPlan> plan = engine->plan(ref2va_request(full_request()));
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_EQ(plan->workflow, "ref2va");
  EXPECT_EQ(plan->request.width, 320);  // the target keeps the demo's canvas: references never set it
  EXPECT_EQ(plan->request.height, 192);
  ASSERT_EQ(plan->references.size(), 4u);
  // Images at the demo's 512 short edge (80x48 -> 853.3x512 -> 864x512; 48x72 -> 512x768).
  EXPECT_EQ(plan->references[0].image.width, 864);
  EXPECT_EQ(plan->references[0].image.height, 512);
  EXPECT_EQ(plan->references[3].image.width, 512);
  EXPECT_EQ(plan->references[3].image.height, 768);
  // The video on its own canvas (5:3 at a 192 short edge: 320x192), 29 frames at 24 fps; its soundtrack
  // at 32 kHz (1.2 s: 48 latents). The clip: 1.5 s, 60 latents.
  EXPECT_EQ(plan->references[1].frames.width, 320);
  EXPECT_EQ(plan->references[1].frames.frames, 29);
  EXPECT_TRUE(plan->references[1].has_audio());
  EXPECT_EQ(plan->references[2].waveform.dim(1), 48000);
  const pipeline::T2vaPlan& t2va = plan->shape.t2va;
  const pipeline::PackedLayout& layout = t2va.layout;
  const int64_t image_rows = 16 * 27 + 24 * 16, video_rows = 7 * 6 * 10, audio_rows = 2 * 48 + 2 * 60;
  EXPECT_EQ(layout.condition_video_rows, image_rows + video_rows);
  EXPECT_EQ(layout.condition_audio_rows, audio_rows);
  EXPECT_EQ(layout.rows, 8 + image_rows + video_rows + audio_rows + 2 * 207 + 37 * 60);
  EXPECT_EQ(plan->shape.rows, layout.rows);
  EXPECT_GT(plan->media_decode_s, 0.0);

  std::vector<std::string> stages;
  Expected<RunResult> run = engine->run(*plan, [&](const Progress& p) {
    if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
  });
  ASSERT_TRUE(run.has_value()) << run.status().to_string();
  EXPECT_EQ(stages, (std::vector<std::string>{"reference encode", "denoise", "video decode", "audio decode"}));
  EXPECT_EQ(run->result.frames.shape(), (Shape{124, 3, 192, 320}));
  EXPECT_EQ(run->result.waveform.shape(), (Shape{2, 800 * 207}));
  for (int64_t i = 0; i < run->result.frames.numel(); ++i) ASSERT_TRUE(std::isfinite(run->result.frames.data<float>()[i]));
  for (int64_t i = 0; i < run->result.waveform.numel(); ++i)
    ASSERT_TRUE(std::isfinite(run->result.waveform.data<float>()[i]));
  RunReport report = run->report;
  report.result = run->result;  // as `orochi generate` fills it
  EXPECT_EQ(report.workflow, "ref2va");
  const nlohmann::json j = report_json(report);
  EXPECT_EQ(j["request"]["workflow"], "ref2va");
  const nlohmann::json& rows = j["sizes"]["rows"];
  EXPECT_EQ(rows["text"], 8);
  EXPECT_EQ(rows["target"]["video"], 37 * 60);
  EXPECT_EQ(rows["target"]["audio"], 2 * 207);
  EXPECT_EQ(rows["references"]["images"]["count"], 2);
  EXPECT_EQ(rows["references"]["images"]["rows"], image_rows);
  EXPECT_EQ(rows["references"]["videos"]["count"], 1);
  EXPECT_EQ(rows["references"]["videos"]["rows"], video_rows);
  EXPECT_EQ(rows["references"]["videos"]["soundtrack_rows"], 96);
  EXPECT_EQ(rows["references"]["audio_clips"]["rows"], 120);
  EXPECT_EQ(j["sizes"]["packed_rows"], layout.rows);
  const nlohmann::json& pre = j["stages_s"]["pre_detail"];
  EXPECT_GT(pre["media_decode"].get<double>(), 0.0);
  EXPECT_GT(pre["vae_encode"].get<double>(), 0.0);
  EXPECT_NE(report_text(report).find("2 image(s)"), std::string::npos) << report_text(report);
}

TEST(EngineRef2va, MatchSizesAndTheSoundtrackLeftOut) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  std::unique_ptr<Engine> engine = demo_engine();
  GenerateRequest r = ref2va_request(full_request());
  r.ref_size = RefSize::kMatch;
  r.references[1].video_audio = false;
  Expected<RunPlan> plan = engine->plan(r);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  // match never upscales: the small images stay at their own size (snapped to 32), and so does the
  // video (its own canvas, 320x192, would upscale it).
  EXPECT_EQ(plan->references[0].image.width, 64);  // 80 -> round(2.5) * 32, half to even
  EXPECT_EQ(plan->references[0].image.height, 64);
  EXPECT_EQ(plan->references[1].frames.width, 64);
  EXPECT_EQ(plan->references[1].frames.height, 64);
  EXPECT_FALSE(plan->references[1].has_audio());
  EXPECT_EQ(plan->shape.t2va.layout.condition_audio_rows, 2 * 60);  // the clip alone
  bool noted = false;
  for (const std::string& n : plan->notes) noted = noted || n.find("--ref-size match") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(EngineRef2va, RefusedOnACheckpointAndWithRandomWeightsBeforeAnyWeight) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  GenerateRequest r = ref2va_request(full_request());
  ModelSource checkpoint;
  checkpoint.dir = testing::h3_tiny_dir();  // a folder with weights: refused from the request alone
  r.text_features_file = testing::h3_tiny_dir() + "/missing.safetensors";
  // A checkpoint's ref2va takes --prompt (test_engine_ref2va_checkpoint runs it): a features file
  // cannot tag the references' vision rows.
  const Status s = Engine::check_conditioning(checkpoint, r);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("ref2va on a checkpoint takes --prompt"), std::string::npos) << s.message();
  ModelSource random;
  random.random_weights = true;
  r.text_features_file.reset();
  // --random-weights makes the encoders on the GPU (GpuBackend::video_encoder / audio_encoder): accepted.
  const Status w = Engine::check_conditioning(random, r);
  EXPECT_TRUE(w.is_ok()) << w.to_string();
  // A bad reference is named before the workflow is judged.
  r.text_features_file = testing::h3_tiny_dir() + "/missing.safetensors";
  r.references.push_back({Kind::kImage, media("nothing.png")});
  const Status bad = Engine::check_conditioning(checkpoint, r);
  EXPECT_NE(bad.message().find("--ref-image " + media("nothing.png")), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace orochi::engine
