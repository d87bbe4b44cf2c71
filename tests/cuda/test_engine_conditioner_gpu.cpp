// The engine's GPU conditioning of presentations with pictures (issue 23): GpuBackend::encode_presentation
// (the bf16 vision tower, then the bf16 mixed text stack) against pipeline::encode_conditioner_inputs_cpu
// (fp32) on the tiny Qwen3-VL of tests/data/h3_fl2va_prompt, layer 2:
//   fl2va  two 96x128 keyframes (the fl2va prompt golden's), 2 x 12 vision tokens;
//   ref2va an image, a 26-frame video in 2 temporal blocks, an audio label and a second image;
//   and a streamed layer (the plan's placement) gives the same result as every layer resident.
// Bound: rel L2 <= 2e-2, the bf16 band the tiny GPU presentation test (test_qwen3vl_presentation_gpu)
// holds the GPU tower + stack to against the CPU. Prints ENGINE_CONDITIONER lines with the distances.
#include <gtest/gtest.h>

#include <cstdio>

#include "backends/cuda/device.h"
#include "engine/gpu_backend.h"
#include "pipeline/fl2va_prompt.h"
#include "pipeline/ref2va_prompt.h"
#include "support/compare.h"
#include "support/golden.h"
#include "support/paths.h"
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

}  // namespace
}  // namespace orochi::engine
