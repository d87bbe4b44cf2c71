// The engine's GPU conditioning of presentations with pictures (issue 23): GpuBackend::encode_presentation
// (the bf16 vision tower, then the bf16 mixed text stack) against pipeline::encode_conditioner_inputs_cpu
// (fp32) on the tiny Qwen3-VL of tests/data/h3_fl2va_prompt, layer 2:
//   fl2va  two 96x128 keyframes (the fl2va prompt golden's), 2 x 12 vision tokens;
//   ref2va an image, a 26-frame video in 2 temporal blocks, an audio label and a second image;
//   and a streamed layer (the plan's placement) gives the same result as every layer resident;
//   the engine on the GPU (tests/support/tiny_checkpoint.h, fl2va with --prompt): its plan carries the
//   presentation, Engine::conditioning is within the band of the CPU engine's, and the run gives frames;
//   and ref2va there (--ref-size match, transformer_ref/ a bf16 copy): the same, then a t2va request on
//   the same GPU engine (back on transformer/, its GPU models made anew).
// Bound: rel L2 <= 2e-2, the bf16 band the tiny GPU presentation test (test_qwen3vl_presentation_gpu)
// holds the GPU tower + stack to against the CPU. Prints ENGINE_CONDITIONER lines with the distances.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/cuda/device.h"
#include "engine/engine.h"
#include "engine/gpu_backend.h"
#include "pipeline/fl2va_prompt.h"
#include "pipeline/ref2va_prompt.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"
#include "support/temp_dir.h"
#include "support/tiny_checkpoint.h"
#include "weights/checkpoint.h"

namespace orochi::engine {
namespace {

constexpr int64_t kLayer = 2;
constexpr double kBf16Band = 2e-2;

std::string conditioner_dir() { return testing::test_data_dir() + "/h3_fl2va_prompt"; }
std::string text_encoder() { return conditioner_dir() + "/text_encoder"; }

text::BpeTokenizer tokenizer() {
  Expected<text::BpeTokenizer> t = text::BpeTokenizer::load(testing::test_data_dir() + "/tokenizer/qwen_bpe");
  OROCHI_CHECK(t.has_value(), t.status().to_string());
  return std::move(t).value();
}

io::RgbImage golden_keyframe(const std::string& name) {
  static const weights::Checkpoint g = [] {
    Expected<weights::Checkpoint> c = weights::Checkpoint::open(conditioner_dir() + "/golden.safetensors");
    OROCHI_CHECK(c.has_value(), c.status().to_string());
    return std::move(c).value();
  }();
  const Tensor t = testing::golden_tensor(g, name).contiguous();  // u8 [H, W, 3] read as f32
  io::RgbImage image;
  image.height = t.dim(0);
  image.width = t.dim(1);
  image.rgb.resize(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = static_cast<uint8_t>(t.data<float>()[i]);
  return image;
}

std::vector<uint8_t> pattern(int64_t frames, int64_t height, int64_t width, int64_t salt) {
  std::vector<uint8_t> out;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x)
        for (int64_t c = 0; c < 3; ++c)
          out.push_back(static_cast<uint8_t>((37 * f + 11 * y + 7 * x + 59 * c + (x * y) % 13 + 101 * salt) % 256));
  return out;
}

std::vector<pipeline::Ref2vaReference> ref2va_references() {
  std::vector<pipeline::Ref2vaReference> refs(4);
  refs[0].kind = pipeline::ReferenceKind::kImage;
  refs[0].image = {64, 96, pattern(1, 64, 96, 1)};
  refs[1].kind = pipeline::ReferenceKind::kVideo;
  refs[1].frames.frames = 26;
  refs[1].frames.height = 64;
  refs[1].frames.width = 128;
  refs[1].frames.rgb = pattern(26, 64, 128, 2);
  refs[1].waveform = Tensor::zeros({2, 1600}, DType::kF32);
  refs[2].kind = pipeline::ReferenceKind::kAudio;
  refs[2].waveform = Tensor::zeros({2, 1600}, DType::kF32);
  refs[3].kind = pipeline::ReferenceKind::kImage;
  refs[3].image = {96, 64, pattern(1, 96, 64, 3)};
  return refs;
}

void expect_gpu_matches_cpu(const std::string& name, const pipeline::ConditionerInputs& inputs) {
  Expected<pipeline::PromptConditioning> cpu = pipeline::encode_conditioner_inputs_cpu(text_encoder(), kLayer, inputs);
  ASSERT_TRUE(cpu.has_value()) << cpu.status().to_string();
  Expected<Tensor> gpu = gpu_backend().encode_presentation(text_encoder(), inputs, kLayer, TextEncoderPlacement{});
  ASSERT_TRUE(gpu.has_value()) << gpu.status().to_string();
  const testing::Comparison vs_cpu = testing::compare(*gpu, cpu->features);
  std::printf("ENGINE_CONDITIONER %s: %lld tokens, %lld patches, GPU (bf16) vs CPU (fp32) %s\n", name.c_str(),
              static_cast<long long>(inputs.size()), static_cast<long long>(inputs.vision_patches()),
              vs_cpu.summary().c_str());
  EXPECT_TRUE(vs_cpu.same_nonfinite && vs_cpu.rel_l2 <= kBf16Band) << vs_cpu.summary();

  // The last layer streamed from pinned host RAM through the slots: the same arithmetic.
  TextEncoderPlacement streamed;
  streamed.streamed = {false, true};
  Expected<Tensor> gpu_streamed = gpu_backend().encode_presentation(text_encoder(), inputs, kLayer, streamed);
  ASSERT_TRUE(gpu_streamed.has_value()) << gpu_streamed.status().to_string();
  const testing::Comparison same = testing::compare(*gpu_streamed, *gpu);
  std::printf("ENGINE_CONDITIONER %s: streamed vs resident %s\n", name.c_str(), same.summary().c_str());
  EXPECT_LE(same.rel_l2, 1e-6) << same.summary();
}

TEST(EngineConditionerGpu, Fl2vaPresentationMatchesTheCpu) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  Expected<qwen3vl::VisionProcessorConfig> processor = pipeline::image_processor_config(conditioner_dir());
  ASSERT_TRUE(processor.has_value());
  Expected<pipeline::ConditionerInputs> inputs = pipeline::prepare_fl2va_prompt(
      tokenizer(), *processor, "A red kite climbs over the dunes.",
      {golden_keyframe("in.keyframe.0"), golden_keyframe("in.keyframe.1")}, 512);
  ASSERT_TRUE(inputs.has_value()) << inputs.status().to_string();
  expect_gpu_matches_cpu("fl2va", *inputs);
}

TEST(EngineConditionerGpu, Ref2vaPresentationMatchesTheCpu) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  pipeline::Ref2vaProcessors processors;
  processors.images = *pipeline::image_processor_config(conditioner_dir());
  Expected<pipeline::ConditionerInputs> inputs = pipeline::prepare_ref2va_prompt(
      tokenizer(), processors, "The girl from picture 1 dances as in video 1.", ref2va_references(), 512);
  ASSERT_TRUE(inputs.has_value()) << inputs.status().to_string();
  ASSERT_EQ(inputs->videos.grids.size(), 1u);
  expect_gpu_matches_cpu("ref2va", *inputs);
}

TEST(EngineConditionerGpu, Fl2vaOnATinyCheckpointRunsOnTheGpu) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("fl2va_ckpt_gpu");
  const std::filesystem::path root = dir.path / "model";
  testing::assemble_tiny_checkpoint(root);
  GenerateRequest r;
  r.prompt = "A red kite climbs over the dunes.";
  r.text_layer = testing::kTinyTextLayer;
  r.width = 128;
  r.height = 96;
  r.frames = 124;
  r.steps = 2;
  r.references = {{ReferenceInput::Kind::kFirstFrame, testing::test_data_dir() + "/h3_fl2va/first.png"},
                  {ReferenceInput::Kind::kLastFrame, testing::test_data_dir() + "/h3_fl2va/last.png"}};
  Expected<std::unique_ptr<Engine>> cpu = Engine::open(ModelSource{.dir = root.string()}, EngineOptions{.device = "cpu"});
  Expected<std::unique_ptr<Engine>> gpu =
      Engine::open(ModelSource{.dir = root.string()}, EngineOptions{.device = "cuda:0"});
  ASSERT_TRUE(cpu.has_value() && gpu.has_value()) << gpu.status().to_string();
  Expected<RunPlan> cpu_plan = (*cpu)->plan(r);
  Expected<RunPlan> gpu_plan = (*gpu)->plan(r);
  ASSERT_TRUE(cpu_plan.has_value() && gpu_plan.has_value()) << gpu_plan.status().to_string();
  ASSERT_TRUE(gpu_plan->conditioner.has_value());
  EXPECT_EQ(gpu_plan->request.text_rows, cpu_plan->request.text_rows);
  Expected<Tensor> a = (*gpu)->conditioning(*gpu_plan);
  Expected<Tensor> b = (*cpu)->conditioning(*cpu_plan);
  ASSERT_TRUE(a.has_value() && b.has_value()) << a.status().to_string();
  const testing::Comparison cmp = testing::compare(*a, *b);
  std::printf("ENGINE_CONDITIONER engine fl2va: GPU engine vs CPU engine features %s\n", cmp.summary().c_str());
  EXPECT_TRUE(cmp.same_nonfinite && cmp.rel_l2 <= kBf16Band) << cmp.summary();
  Expected<RunResult> run = (*gpu)->run(*gpu_plan);
  ASSERT_TRUE(run.has_value()) << run.status().to_string();
  EXPECT_EQ(run->result.frames.shape(), (Shape{124, 3, 96, 128}));
  for (int64_t i = 0; i < run->result.frames.numel(); ++i) ASSERT_TRUE(std::isfinite(run->result.frames.data<float>()[i]));
  std::printf("ENGINE_CONDITIONER engine fl2va: GPU run text %.3f s, e2e frames %lld\n", run->report.text_s,
              static_cast<long long>(run->result.frames.dim(0)));
}

TEST(EngineConditionerGpu, Ref2vaOnATinyCheckpointRunsOnTheGpu) {
  if (!cuda::list_devices()) GTEST_SKIP() << "no GPU";
  if (!io::media_input_supported()) GTEST_SKIP() << "this build reads no media files";
  testing::TempDir dir("ref2va_ckpt_gpu");
  const std::filesystem::path root = dir.path / "model";
  testing::assemble_tiny_checkpoint(root, testing::TinyRefPartition::kDistinct);
  const std::string media = testing::test_data_dir() + "/h3_ref2va/";
  GenerateRequest r;
  r.prompt = "The girl from picture 1 dances as in video 1.";
  r.text_layer = testing::kTinyTextLayer;
  r.width = 128;
  r.height = 96;
  r.frames = 124;
  r.steps = 2;
  r.ref_size = RefSize::kMatch;
  r.references = {{ReferenceInput::Kind::kImage, media + "image_wide.png"},
                  {ReferenceInput::Kind::kVideo, media + "video.mov"},
                  {ReferenceInput::Kind::kAudio, media + "clip.wav"}};
  Expected<std::unique_ptr<Engine>> cpu = Engine::open(ModelSource{.dir = root.string()}, EngineOptions{.device = "cpu"});
  Expected<std::unique_ptr<Engine>> gpu =
      Engine::open(ModelSource{.dir = root.string()}, EngineOptions{.device = "cuda:0"});
  ASSERT_TRUE(cpu.has_value() && gpu.has_value()) << gpu.status().to_string();
  Expected<RunPlan> cpu_plan = (*cpu)->plan(r);
  Expected<RunPlan> gpu_plan = (*gpu)->plan(r);
  ASSERT_TRUE(cpu_plan.has_value() && gpu_plan.has_value()) << gpu_plan.status().to_string();
  ASSERT_TRUE(gpu_plan->conditioner.has_value());
  ASSERT_EQ(gpu_plan->conditioner->videos.grids.size(), 1u);
  Expected<Tensor> a = (*gpu)->conditioning(*gpu_plan);
  Expected<Tensor> b = (*cpu)->conditioning(*cpu_plan);
  ASSERT_TRUE(a.has_value() && b.has_value()) << a.status().to_string();
  const testing::Comparison cmp = testing::compare(*a, *b);
  std::printf("ENGINE_CONDITIONER engine ref2va: GPU engine vs CPU engine features %s\n", cmp.summary().c_str());
  EXPECT_TRUE(cmp.same_nonfinite && cmp.rel_l2 <= kBf16Band) << cmp.summary();
  Expected<RunResult> run = (*gpu)->run(*gpu_plan);
  ASSERT_TRUE(run.has_value()) << run.status().to_string();
  EXPECT_EQ(run->result.frames.shape(), (Shape{124, 3, 96, 128}));
  for (int64_t i = 0; i < run->result.frames.numel(); ++i) ASSERT_TRUE(std::isfinite(run->result.frames.data<float>()[i]));
  GenerateRequest t2va = r;
  t2va.references.clear();
  Expected<RunPlan> t_plan = (*gpu)->plan(t2va);
  ASSERT_TRUE(t_plan.has_value()) << t_plan.status().to_string();
  Expected<RunResult> t_run = (*gpu)->run(*t_plan);
  ASSERT_TRUE(t_run.has_value()) << t_run.status().to_string();
  std::printf("ENGINE_CONDITIONER engine ref2va: GPU run text %.3f s, load %.3f s; t2va after it load %.3f s\n",
              run->report.text_s, run->report.load_s, t_run->report.load_s);
}

}  // namespace
}  // namespace orochi::engine
