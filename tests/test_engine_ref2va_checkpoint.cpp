// ref2va through the engine on a checkpoint (issue 23), on the CPU: the tiny model folder of
// tests/support/tiny_checkpoint.h with a bf16-rounded copy of its transformer as transformer_ref/
// (other weights, so the partition used shows in the output), --prompt, --text-layer 2 and
// --ref-size match, over h3_ref2va's media (two images, a 30 fps video
// with its soundtrack, a WAV clip). The plan presents the references to the conditioner: L and the
// per-row tags reach the layout, and Engine::conditioning equals pipeline::encode_ref2va_prompt_cpu
// bit for bit. The run uses transformer_ref/ (Engine::use_partition) and a later t2va request on the
// same engine is back on transformer/. A folder without transformer_ref/ is refused before any weight.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "engine/engine.h"
#include "pipeline/ref2va_prompt.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "support/tiny_checkpoint.h"
#include "weights/checkpoint.h"
#include "weights/safetensors_writer.h"

namespace orochi::engine {
namespace {

namespace fs = std::filesystem;
using Kind = ReferenceInput::Kind;

constexpr const char* kPrompt = "The girl from picture 1 dances as in video 1, to the song of audio 2.";
constexpr int64_t kLayer = testing::kTinyTextLayer;

std::string data(const std::string& path) { return testing::test_data_dir() + "/" + path; }

GenerateRequest request(std::vector<ReferenceInput> refs) {
  GenerateRequest r;
  r.prompt = kPrompt;
  r.text_layer = kLayer;
  r.width = 128;
  r.height = 96;
  r.frames = 124;
  r.steps = 2;
  r.seed = 5;
  r.ref_size = RefSize::kMatch;  // images at the target's area: the tiny conditioner reads 512 positions
  r.references = std::move(refs);
  return r;
}

std::vector<ReferenceInput> full_references() {
  return {{Kind::kImage, data("h3_ref2va/image_wide.png")},
          {Kind::kVideo, data("h3_ref2va/video.mov")},
          {Kind::kAudio, data("h3_ref2va/clip.wav")},
          {Kind::kImage, data("h3_ref2va/image_tall.png")}};
}

std::unique_ptr<Engine> open_engine(const fs::path& root) {
  ModelSource source;
  source.dir = root.string();
  EngineOptions options;
  options.device = "cpu";
  Expected<std::unique_ptr<Engine>> e = Engine::open(source, options);
  EXPECT_TRUE(e.has_value()) << e.status().to_string();
  return e ? std::move(e).value() : nullptr;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.contiguous().data<float>(), b.contiguous().data<float>(), a.numel() * sizeof(float)) == 0;
}

TEST(EngineRef2vaCheckpoint, PresentsTheReferencesToTheConditioner) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("ref2va_ckpt_plan");
  testing::assemble_tiny_checkpoint(dir.path / "model", testing::TinyRefPartition::kDistinct);
  std::unique_ptr<Engine> engine = open_engine(dir.path / "model");
  ASSERT_TRUE(engine);
  Expected<RunPlan> plan = engine->plan(request(full_references()));
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  EXPECT_EQ(plan->workflow, "ref2va");
  ASSERT_TRUE(plan->conditioner.has_value());
  EXPECT_EQ(plan->conditioner->images.grids.size(), 2u);
  ASSERT_EQ(plan->conditioner->videos.grids.size(), 1u);
  EXPECT_EQ(plan->conditioner->videos.grids[0].t, 2);  // 29 frames at 24 fps: 0, 12, 24 sampled, paired

  pipeline::Ref2vaPromptInputs model;
  model.tokenizer = data("tokenizer/qwen_bpe");
  model.text_encoder = data("h3_fl2va_prompt/text_encoder");
  model.processors.images = *pipeline::image_processor_config(data("h3_fl2va_prompt"));
  model.layer = kLayer;
  Expected<pipeline::PromptConditioning> expected = pipeline::encode_ref2va_prompt_cpu(model, kPrompt, plan->references);
  ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
  const int64_t L = static_cast<int64_t>(expected->token_ids.size());
  EXPECT_EQ(plan->request.text_rows, L);
  EXPECT_EQ(plan->conditioner->presentation.token_ids, expected->token_ids);
  const Tensor& tags = plan->shape.t2va.layout.token_tags;
  EXPECT_EQ(std::vector<int64_t>(tags.data<int64_t>(), tags.data<int64_t>() + L), expected->tags);
  int64_t vision_rows = 0;
  for (const int64_t tag : expected->tags) vision_rows += tag == pipeline::kH3VideoTag;
  EXPECT_GT(vision_rows, 4 * 2);  // 2 images and 2 video blocks, each start + pads + end

  Expected<Tensor> features = engine->conditioning(*plan);
  ASSERT_TRUE(features.has_value()) << features.status().to_string();
  EXPECT_TRUE(same_bits(*features, expected->features));
}

TEST(EngineRef2vaCheckpoint, RunsOnTransformerRefAndGoesBackForT2va) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("ref2va_ckpt_run");
  testing::assemble_tiny_checkpoint(dir.path / "distinct", testing::TinyRefPartition::kDistinct);
  testing::assemble_tiny_checkpoint(dir.path / "same", testing::TinyRefPartition::kSame);
  std::unique_ptr<Engine> distinct = open_engine(dir.path / "distinct");
  std::unique_ptr<Engine> same = open_engine(dir.path / "same");
  ASSERT_TRUE(distinct && same);

  Expected<RunPlan> plan = distinct->plan(request(full_references()));
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  Expected<RunResult> a = distinct->run(*plan);
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  EXPECT_EQ(a->result.frames.shape(), (Shape{124, 3, 96, 128}));
  EXPECT_EQ(a->result.waveform.dim(0), 2);
  EXPECT_EQ(a->report.workflow, "ref2va");
  EXPECT_EQ(a->result.text_rows, plan->request.text_rows);
  // transformer_ref/ here is transformer/ rounded to bf16: the same request on a folder whose
  // transformer_ref/ is transformer/ itself gives other frames.
  Expected<RunPlan> plan_same = same->plan(request(full_references()));
  ASSERT_TRUE(plan_same.has_value()) << plan_same.status().to_string();
  Expected<RunResult> b = same->run(*plan_same);
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  EXPECT_FALSE(same_bits(a->result.frames, b->result.frames));

  // t2va after ref2va on the same engine runs on transformer/ again: as the other engine's.
  GenerateRequest t2va = request({});
  Expected<RunPlan> t_plan = distinct->plan(t2va);
  Expected<RunPlan> t_plan_same = same->plan(t2va);
  ASSERT_TRUE(t_plan.has_value() && t_plan_same.has_value()) << t_plan.status().to_string();
  EXPECT_EQ(t_plan->workflow, "t2va");
  Expected<RunResult> ta = distinct->run(*t_plan);
  Expected<RunResult> tb = same->run(*t_plan_same);
  ASSERT_TRUE(ta.has_value() && tb.has_value()) << ta.status().to_string();
  EXPECT_TRUE(same_bits(ta->result.frames, tb->result.frames));
}

// The repository's diffusers-format LoRA with its keys for the ref2va partition (transformer_ref.).
std::string ref_partition_lora(const fs::path& dir) {
  Expected<weights::Checkpoint> in = weights::Checkpoint::open(data("h3_lora/lora_diffusers.safetensors"));
  EXPECT_TRUE(in.has_value()) << in.status().to_string();
  std::vector<std::pair<std::string, Tensor>> renamed;
  for (const std::string& name : in->names()) {
    EXPECT_TRUE(name.starts_with("transformer.")) << name;
    renamed.push_back({"transformer_ref." + name.substr(std::strlen("transformer.")), in->get(name).value()});
  }
  const std::string path = (dir / "ref_lora.safetensors").string();
  EXPECT_TRUE(weights::write_safetensors(path, renamed).is_ok());
  return path;
}

// A LoRA keyed for transformer_ref/ on a folder with both partitions: open() holds transformer/ and
// leaves it out (a t2va request runs without it), a ref2va request reads transformer_ref/ and merges it.
TEST(EngineRef2vaCheckpoint, APartitionsLoraWaitsForItsPartition) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("ref2va_ckpt_lora");
  testing::assemble_tiny_checkpoint(dir.path / "model", testing::TinyRefPartition::kDistinct);
  ModelSource source;
  source.dir = (dir.path / "model").string();
  source.loras = {{ref_partition_lora(dir.path), 1.0f}};
  EngineOptions options;
  options.device = "cpu";
  Expected<std::unique_ptr<Engine>> engine = Engine::open(source, options);
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();

  GenerateRequest t2va = request({});
  t2va.frames = 22;
  Expected<RunPlan> t_plan = (*engine)->plan(t2va);
  ASSERT_TRUE(t_plan.has_value()) << t_plan.status().to_string();
  Expected<RunResult> t = (*engine)->run(*t_plan);
  ASSERT_TRUE(t.has_value()) << t.status().to_string();
  EXPECT_TRUE(t->report.loras.empty()) << nlohmann::json(t->report.loras).dump();

  Expected<RunPlan> plan = (*engine)->plan(request(full_references()));
  ASSERT_TRUE(plan.has_value()) << plan.status().to_string();
  Expected<RunResult> r = (*engine)->run(*plan);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  ASSERT_EQ(r->report.loras.size(), 1u) << nlohmann::json(r->report.loras).dump();
  EXPECT_EQ(r->report.loras[0]["file"], source.loras[0].path);
  EXPECT_GT(r->report.loras[0]["parameters"].get<int64_t>(), 0);
}

TEST(EngineRef2vaCheckpoint, RefusedWithoutTransformerRefOrWithAFeaturesFile) {
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("ref2va_ckpt_refused");
  const fs::path root = dir.path / "model";
  testing::assemble_tiny_checkpoint(root);
  const GenerateRequest r = request(full_references());
  const Status s = Engine::check_conditioning(ModelSource{.dir = root.string()}, r);
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_NE(s.message().find("has no transformer_ref/ folder"), std::string::npos) << s.message();
  GenerateRequest features = r;
  features.prompt.reset();
  features.text_features_file = dir.file("features.safetensors");
  const Status f = Engine::check_conditioning(ModelSource{.dir = root.string()}, features);
  EXPECT_EQ(f.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(f.message().find("ref2va on a checkpoint takes --prompt"), std::string::npos) << f.message();
}

}  // namespace
}  // namespace orochi::engine
