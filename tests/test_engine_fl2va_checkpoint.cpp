// fl2va through the engine on a checkpoint (issue 23), on the CPU: the tiny model folder of
// tests/support/tiny_checkpoint.h with --prompt and --text-layer 2.
// The plan presents the keyframes to the conditioner (engine/presentation_plan.h): its text rows
// are the presentation's, tagged 0 on the vision blocks in the packed layout; the run's features
// (Engine::conditioning) are pipeline::encode_fl2va_prompt_cpu's bit for bit, and the run produces
// frames and sound. A --text-features file is refused for fl2va here. And the whole request against
// diffusers 0.42.1's pipeline with its text-encoder step (tests/data/h3_fl2va_request, made by
// scripts/golden/make_h3_fl2va_request.py: make_h3_fl2va.py's 64x64 request with the prompt): the
// presentation's ids and tags, the features, the packed tags, the decoded frames and sound, rel L2 1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/engine.h"
#include "weights/checkpoint.h"
#include "pipeline/fl2va_prompt.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "support/tiny_checkpoint.h"

namespace orochi::engine {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrompt = "A red kite climbs over the dunes; a boy shouts <d>再高一点!</d> and the wind hums.";
constexpr int64_t kLayer = testing::kTinyTextLayer;

std::string data(const std::string& path) { return testing::test_data_dir() + "/" + path; }

GenerateRequest fl2va_request() {
  GenerateRequest r;
  r.prompt = kPrompt;
  r.text_layer = kLayer;
  r.width = 128;
  r.height = 96;
  r.frames = 124;
  r.steps = 2;
  r.seed = 11;
  r.references = {{ReferenceInput::Kind::kFirstFrame, data("h3_fl2va/first.png")},
                  {ReferenceInput::Kind::kLastFrame, data("h3_fl2va/last.png")}};
  return r;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.contiguous().data<float>(), b.contiguous().data<float>(), a.numel() * sizeof(float)) == 0;
}

TEST(EngineFl2vaCheckpoint, PresentsTheKeyframesToTheConditionerAndRuns) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("fl2va_ckpt");
  const fs::path root = dir.path / "model";
  testing::assemble_tiny_checkpoint(root);
  Expected<std::unique_ptr<Engine>> engine = Engine::open(ModelSource{.dir = root.string()}, EngineOptions{.device = "cpu"});
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  Expected<RunPlan> plan = (*engine)->plan(fl2va_request());
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_EQ(plan->workflow, "fl2va");
  ASSERT_TRUE(plan->conditioner.has_value());
  ASSERT_EQ(plan->keyframes.size(), 2u);

  // The pipeline's own conditioning of the same canvas keyframes.
  pipeline::Fl2vaPromptInputs model;
  model.tokenizer = data("tokenizer/qwen_bpe");
  model.text_encoder = data("h3_fl2va_prompt/text_encoder");
  model.processor = *pipeline::image_processor_config(data("h3_fl2va_prompt"));
  model.layer = kLayer;
  Expected<pipeline::PromptConditioning> expected = pipeline::encode_fl2va_prompt_cpu(model, kPrompt, plan->keyframes);
  ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
  const int64_t L = static_cast<int64_t>(expected->token_ids.size());
  // 128x96 keyframes: 8x6 patches, 12 vision tokens each, in "<Picture i>: " + start/pads/end blocks.
  int64_t vision_rows = 0;
  for (const int64_t tag : expected->tags) vision_rows += tag == pipeline::kH3VideoTag;
  EXPECT_EQ(vision_rows, 2 * (12 + 2));
  EXPECT_EQ(plan->request.text_rows, L);
  EXPECT_EQ(plan->shape.text_rows, L);
  EXPECT_EQ(plan->conditioner->presentation.token_ids, expected->token_ids);
  // The layout's text rows carry the presentation's tags (the denoiser's AdaLN row = idx·3 + tag).
  const Tensor& tags = plan->shape.t2va.layout.token_tags;
  EXPECT_EQ(std::vector<int64_t>(tags.data<int64_t>(), tags.data<int64_t>() + L), expected->tags);
  EXPECT_EQ(plan->shape.t2va.layout.condition_video_rows, 2 * plan->shape.t2va.layout.rows_per_frame);

  // The engine's conditioning is the pipeline's, bit for bit.
  Expected<Tensor> features = (*engine)->conditioning(*plan);
  ASSERT_TRUE(features.has_value()) << features.status().to_string();
  EXPECT_TRUE(same_bits(*features, expected->features));

  Expected<RunResult> run = (*engine)->run(*plan);
  ASSERT_TRUE(run.has_value()) << run.status().to_string();
  EXPECT_EQ(run->result.frames.shape(), (Shape{124, 3, 96, 128}));
  EXPECT_EQ(run->result.waveform.dim(0), 2);
  EXPECT_EQ(run->result.text_rows, L);
  EXPECT_EQ(run->report.workflow, "fl2va");
  EXPECT_GT(run->report.text_s, 0.0);
  const nlohmann::json presentation = report_json(run->report)["plan"]["presentation"];
  EXPECT_EQ(presentation["tokens"], L);
  EXPECT_EQ(presentation["vision_rows"], vision_rows);
  EXPECT_EQ(presentation["vision_patches"], 2 * 8 * 6);
  EXPECT_EQ(presentation["images"], 2);
  for (int64_t i = 0; i < run->result.frames.numel(); ++i) ASSERT_TRUE(std::isfinite(run->result.frames.data<float>()[i]));

  // One keyframe: one "<Picture 1>: " block fewer in the presentation, and one keyframe's rows.
  GenerateRequest first_only = fl2va_request();
  first_only.references.pop_back();
  Expected<RunPlan> one = (*engine)->plan(first_only);
  ASSERT_TRUE(one.has_value()) << one.status().to_string();
  ASSERT_TRUE(one->conditioner.has_value());
  int64_t one_vision_rows = 0;
  for (const int64_t tag : one->conditioner->presentation.dit_tags) one_vision_rows += tag == pipeline::kH3VideoTag;
  EXPECT_EQ(one_vision_rows, 12 + 2);
  EXPECT_LT(one->request.text_rows, L - (12 + 2));
}

double report(const char* what, const Tensor& ours, const Tensor& theirs) {
  const testing::Comparison c = testing::compare(ours, theirs);
  std::printf("fl2va request golden: %-24s %s\n", what, c.summary().c_str());
  return c.rel_l2;
}

TEST(EngineFl2vaCheckpoint, WholeRequestMatchesDiffusers) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  Expected<weights::Checkpoint> golden = weights::Checkpoint::open(data("h3_fl2va_request/golden.safetensors"));
  ASSERT_TRUE(golden.has_value()) << golden.status().to_string();
  testing::TempDir dir("fl2va_ckpt_golden");
  const fs::path root = dir.path / "model";
  testing::assemble_tiny_checkpoint(root);
  Expected<std::unique_ptr<Engine>> engine = Engine::open(ModelSource{.dir = root.string()}, EngineOptions{.device = "cpu"});
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  GenerateRequest r = fl2va_request();  // make_h3_fl2va.py's request: 64x64, 124 frames, 3 evaluations, its seed
  r.width = 64;
  r.height = 64;
  r.steps = 3;
  r.seed = 20261201;
  Expected<RunPlan> plan = (*engine)->plan(r);
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  const Tensor ids = testing::golden_tensor(*golden, "token_ids");
  ASSERT_EQ(plan->prompt_ids.numel(), ids.numel());
  for (int64_t i = 0; i < ids.numel(); ++i)
    ASSERT_EQ(plan->prompt_ids.data<int64_t>()[i], ids.data<int64_t>()[i]) << "token " << i;
  const Tensor tags = testing::golden_tensor(*golden, "packed.token_tags");
  ASSERT_EQ(plan->shape.t2va.layout.token_tags.numel(), tags.numel());
  EXPECT_EQ(std::memcmp(plan->shape.t2va.layout.token_tags.data<int64_t>(), tags.data<int64_t>(), tags.nbytes()), 0);
  Expected<Tensor> features = (*engine)->conditioning(*plan);
  ASSERT_TRUE(features.has_value()) << features.status().to_string();
  EXPECT_LE(report("prompt_embeds", *features, testing::golden_tensor(*golden, "prompt_embeds")), 1e-5);

  Expected<RunResult> run = (*engine)->run(*plan);
  ASSERT_TRUE(run.has_value()) << run.status().to_string();
  const Tensor frames = run->result.frames.contiguous();  // [124, 3, 64, 64]
  ASSERT_EQ(frames.shape(), (Shape{124, 3, 64, 64}));
  Tensor means = Tensor::empty({124, 3}, DType::kF32);
  for (int64_t i = 0; i < 124 * 3; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < 64 * 64; ++j) sum += frames.data<float>()[i * 64 * 64 + j];
    means.data<float>()[i] = static_cast<float>(sum / (64 * 64));
  }
  EXPECT_LE(report("decoded frame means", means, testing::golden_tensor(*golden, "decode.frames_mean")), 1e-5);
  for (int64_t f : {0, 123}) {
    const std::string name = "decode.frame." + std::to_string(f);
    EXPECT_LE(report(name.c_str(), frames.slice(0, f, f + 1).contiguous().view({3, 64, 64}),
                     testing::golden_tensor(*golden, name)), 1e-5);
  }
  const Tensor wave = run->result.waveform.contiguous();  // [2, 800 * 207]
  ASSERT_EQ(wave.shape(), (Shape{2, 800 * 207}));
  EXPECT_LE(report("waveform head", wave.slice(1, 0, 2048).contiguous(),
                   testing::golden_tensor(*golden, "decode.audio_head")), 1e-5);
  Tensor per_latent = Tensor::empty({2, 207}, DType::kF32);
  for (int64_t i = 0; i < 2 * 207; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < 800; ++j) sum += wave.data<float>()[i * 800 + j];
    per_latent.data<float>()[i] = static_cast<float>(sum / 800);
  }
  EXPECT_LE(report("waveform means per latent", per_latent,
                   testing::golden_tensor(*golden, "decode.audio_mean_per_latent")), 1e-5);
}

TEST(EngineFl2vaCheckpoint, TakesAPromptNotAFeaturesFile) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("fl2va_ckpt_features");
  const fs::path root = dir.path / "model";
  testing::assemble_tiny_checkpoint(root);
  GenerateRequest r = fl2va_request();
  r.prompt.reset();
  r.text_features_file = dir.file("features.safetensors");
  const Status s = Engine::check_conditioning(ModelSource{.dir = root.string()}, r);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("fl2va on a checkpoint takes --prompt"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace orochi::engine
